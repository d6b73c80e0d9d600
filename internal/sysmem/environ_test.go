package sysmem

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestParseEnviron(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"one", "GOGC=50\x00", map[string]string{"GOGC": "50"}},
		{"no final NUL", "A=1\x00B=2", map[string]string{"A": "1", "B": "2"}},
		{"empty value", "GODEBUG=\x00", map[string]string{"GODEBUG": ""}},
		{"value with =", "GODEBUG=gctrace=1,madvdontneed=1\x00", map[string]string{"GODEBUG": "gctrace=1,madvdontneed=1"}},
		{"first wins", "GOGC=50\x00GOGC=off\x00", map[string]string{"GOGC": "50"}},
		{"no = skipped", "garbage\x00\x00X=y\x00", map[string]string{"X": "y"}},
		{"empty name", "=C:=C:\\\x00", map[string]string{"": "C:=C:\\"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseEnviron([]byte(tt.in)); !maps.Equal(got, tt.want) {
				t.Errorf("ParseEnviron(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestGoEnv_Set(t *testing.T) {
	e := GoEnv{GOGC: EnvVar{"200", true}, GODEBUG: EnvVar{"", true}, GOMAXPROCS: EnvVar{"4", false}}
	want := map[string]string{"GOGC": "200", "GODEBUG": ""}
	if got := e.Set(); !maps.Equal(got, want) {
		t.Errorf("Set() = %q, want %q", got, want)
	}
}

func TestProc_GoEnv(t *testing.T) {
	t.Run("child", func(t *testing.T) {
		c := startChild(t, "GOGC=150", "GOMEMLIMIT=512MiB", "GODEBUG=", "GOMAXPROCS=3")
		env, err := Proc{}.GoEnv(c.pid())
		if err != nil {
			t.Fatal(err)
		}
		want := GoEnv{
			GOGC:       EnvVar{"150", true},
			GOMEMLIMIT: EnvVar{"512MiB", true},
			GODEBUG:    EnvVar{"", true},
			GOMAXPROCS: EnvVar{"3", true},
		}
		if env != want {
			t.Errorf("GoEnv = %+v, want %+v", env, want)
		}
	})
	t.Run("unset", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "proc", "5", "environ"), "HOME=/root\x00GOGC=off\x00")
		env, err := Proc{Root: root}.GoEnv(5)
		if err != nil {
			t.Fatal(err)
		}
		want := GoEnv{GOGC: EnvVar{"off", true}}
		if env != want {
			t.Errorf("GoEnv = %+v, want %+v", env, want)
		}
	})
	t.Run("missing process", func(t *testing.T) {
		_, err := Proc{Root: "testdata/root"}.GoEnv(999)
		assertNotFound(t, err, 999)
	})
	t.Run("permission wrapped", func(t *testing.T) {
		// The wrapping, whatever the test's privileges.
		path := "/proc/7/environ"
		err := Proc{}.pidErr(7, path, &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES})
		if !errors.Is(err, fs.ErrPermission) || err.Error() != "read /proc/7/environ: permission denied" {
			t.Errorf("error = %q, want \"read /proc/7/environ: permission denied\" matching fs.ErrPermission", err)
		}
	})
	t.Run("permission denied", func(t *testing.T) {
		got, ok := readEnvironAsOtherUser(t)
		if !ok {
			t.Log("no process of another user to read: checked the wrapping only")
			return
		}
		t.Logf("as another user: %s", got)
		if !strings.HasPrefix(got, "permission: read /proc/") {
			t.Errorf("reading another user's environ: %q, want a permission error", got)
		}
	})
}

// readEnvironAsOtherUser reads, as an unprivileged user, the environ of a
// process of another user, and returns what came of it: "permission: "
// and the error, "other: " and the error, or "readable". It reports false
// when the test cannot set that up.
func readEnvironAsOtherUser(t *testing.T) (string, bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		// Not root: pid 1 belongs to another user on most machines
		// and in most containers.
		fi, err := os.Stat("/proc/1")
		if err != nil {
			return "", false
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) == os.Geteuid() {
			return "", false
		}
		switch _, err := (Proc{}).GoEnv(1); {
		case err == nil:
			return "readable", true
		case errors.Is(err, fs.ErrPermission):
			return "permission: " + err.Error(), true
		default:
			return "other: " + err.Error(), true
		}
	}
	return runAsNobody(t, "environ:"+strconv.Itoa(os.Getpid()))
}

func FuzzParseEnviron(f *testing.F) {
	f.Add([]byte("GOGC=50\x00GOMEMLIMIT=1GiB\x00"))
	f.Add([]byte("=\x00==\x00a\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		env := ParseEnviron(data)
		for k := range env {
			if strings.ContainsAny(k, "=\x00") {
				t.Fatalf("name %q holds = or NUL", k)
			}
		}
	})
}

func TestParseGoMemLimit(t *testing.T) {
	tests := []struct {
		in     string
		want   uint64
		wantOK bool
	}{
		{"512MiB", 512 << 20, true},
		{"1GiB", 1 << 30, true},
		{"2TiB", 2 << 40, true},
		{"64KiB", 64 << 10, true},
		{"1000", 1000, true},
		{"1000B", 1000, true},
		{"0", 0, true},
		{"+5MiB", 5 << 20, true}, // the runtime's strconv.ParseInt takes a sign
		{"", 0, false},
		{"off", 0, false},
		{"9223372036854775807", 0, false}, // math.MaxInt64: the runtime's "no limit"
		{"9223372036854775806", 9223372036854775806, true},
		{"8388608TiB", 0, false}, // 2^63 bytes
		{"8388607TiB", 8388607 << 40, true},
		{"1.5GiB", 0, false},
		{"1GB", 0, false},
		{"1 GiB", 0, false},
		{"-1", 0, false},
		{"MiB", 0, false},
		{"B", 0, false},
		{"1iB", 0, false},
		{"1kiB", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseGoMemLimit(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseGoMemLimit(%q) = %d, %v, want %d, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestGoEnv_MemoryLimit(t *testing.T) {
	if v, ok := (GoEnv{GOMEMLIMIT: EnvVar{"256MiB", true}}).MemoryLimit(); v != 256<<20 || !ok {
		t.Errorf("MemoryLimit of 256MiB = %d, %v", v, ok)
	}
	if v, ok := (GoEnv{GOMEMLIMIT: EnvVar{"256MiB", false}}).MemoryLimit(); v != 0 || ok {
		t.Errorf("MemoryLimit of an unset variable = %d, %v", v, ok)
	}
}

func FuzzParseGoMemLimit(f *testing.F) {
	for _, s := range []string{"512MiB", "1000", "off", "9223372036854775807", "8388608TiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := ParseGoMemLimit(s)
		if !ok {
			return
		}
		if v >= 1<<63-1 {
			t.Fatalf("ParseGoMemLimit(%q) = %d, beyond the runtime's range", s, v)
		}
		// The value written in bytes reads back the same.
		if w, ok := ParseGoMemLimit(strconv.FormatUint(v, 10) + "B"); !ok || w != v {
			t.Fatalf("ParseGoMemLimit(%q) = %d, but %dB reads %d, %v", s, v, v, w, ok)
		}
	})
}
