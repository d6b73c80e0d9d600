package sysmem

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name string
		file string
		want Status
	}{
		{
			name: "go service",
			file: "service.txt",
			want: Status{
				VmRSS: 198412 << 10, VmHWM: 214720 << 10, VmSize: 1263480 << 10, VmSwap: 1024 << 10,
				RssAnon: 189004 << 10, RssFile: 9408 << 10, RssShmem: 0, Threads: 12,
			},
		},
		{
			name: "kernel thread has no memory lines",
			file: "kthread.txt",
			want: Status{Threads: 1},
		},
		{
			name: "kernel before 4.5 has no Rss lines",
			file: "linux-4.4.txt",
			want: Status{VmRSS: 100000 << 10, VmHWM: 120000 << 10, VmSize: 400000 << 10, Threads: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "status", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := ParseStatus(f)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ParseStatus = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseStatus_errors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantLine int
		wantMsg  string
	}{
		{"no colon", "Name:\tx\nVmRSS 12 kB\n", 2, "no colon"},
		{"no unit", "VmRSS:\t12\n", 1, `VmRSS: bad size "12"`},
		{"wrong unit", "Name:\tx\nPid:\t1\nVmHWM:\t12 MB\n", 3, `VmHWM: bad size "12 MB"`},
		{"not a number", "VmSwap:\tlots kB\n", 1, "VmSwap: bad size"},
		{"overflow", "VmSize:\t99999999999999999999 kB\n", 1, "VmSize: bad size"},
		{"kB overflow", "VmSize:\t18446744073709551615 kB\n", 1, "VmSize: bad size"},
		{"bad thread count", "Threads:\t-1\n", 1, "Threads: bad count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseStatus(strings.NewReader(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("ParseStatus error = %v, want a *SyntaxError", err)
			}
			if se.Line != tt.wantLine || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("ParseStatus error = %q (line %d), want line %d and %q", err, se.Line, tt.wantLine, tt.wantMsg)
			}
		})
	}
}

func TestProc_Status(t *testing.T) {
	t.Run("testdata", func(t *testing.T) {
		st, err := Proc{Root: "testdata/root"}.Status(42)
		if err != nil {
			t.Fatal(err)
		}
		if st.VmRSS != 198412<<10 || st.Threads != 12 {
			t.Errorf("Status = %+v", st)
		}
	})
	t.Run("self", func(t *testing.T) {
		st, err := Proc{}.Status(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if st.VmRSS == 0 || st.VmHWM < st.VmRSS || st.VmSize < st.VmRSS || st.Threads < 1 {
			t.Errorf("implausible status of the test process: %+v", st)
		}
		if sum := st.RssAnon + st.RssFile + st.RssShmem; sum != st.VmRSS {
			t.Errorf("RssAnon+RssFile+RssShmem = %d, want VmRSS %d", sum, st.VmRSS)
		}
	})
	t.Run("missing process", func(t *testing.T) {
		_, err := Proc{Root: "testdata/root"}.Status(999)
		assertNotFound(t, err, 999)
	})
	t.Run("exited process", func(t *testing.T) {
		c := startChild(t)
		pid := c.pid()
		if _, err := (Proc{}).Status(pid); err != nil {
			t.Fatalf("Status of a live child: %v", err)
		}
		c.stop()
		_, err := Proc{}.Status(pid)
		assertNotFound(t, err, pid)
	})
	t.Run("invalid pid", func(t *testing.T) {
		if _, err := (Proc{}).Status(0); err == nil {
			t.Error("Status(0) succeeded")
		}
	})
	t.Run("malformed", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "proc", "7", "status"), "VmRSS:\tmany kB\n")
		_, err := Proc{Root: root}.Status(7)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Line != 1 || !strings.HasPrefix(err.Error(), "read "+filepath.Join(root, "proc", "7", "status")+": ") {
			t.Errorf("Status error = %v, want a syntax error at line 1 naming the file", err)
		}
	})
}

// assertNotFound checks that err says process pid does not exist.
func assertNotFound(t *testing.T, err error, pid int) {
	t.Helper()
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("error = %v, want one matching fs.ErrNotExist", err)
	}
	if want := "process " + strconv.Itoa(pid) + " not found"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error = %q, want it to end with %q", err, want)
	}
}

// writeFile writes a file, creating its directory.
func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseStatus(f *testing.F) {
	for _, name := range []string{"service.txt", "kthread.txt", "linux-4.4.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", "status", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("VmRSS:\t1 kB\nThreads: 3\n"))
	f.Add([]byte("VmRSS:\t\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStatus(bytes.NewReader(data))
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line < 1 {
				t.Fatalf("error %v is not a *SyntaxError with a line", err)
			}
			return
		}
		if st.VmRSS%1024 != 0 || st.Threads < 0 {
			t.Fatalf("implausible %+v", st)
		}
	})
}

func BenchmarkParseStatus(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "status", "service.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	r := bytes.NewReader(data)
	for b.Loop() {
		r.Reset(data)
		if _, err := ParseStatus(r); err != nil {
			b.Fatal(err)
		}
	}
}
