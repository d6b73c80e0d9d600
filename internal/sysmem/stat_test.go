package sysmem

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// processStart is close after the test process started.
var processStart = time.Now()

// statLine returns a /proc/PID/stat line for pid and comm with the fields
// after comm given by rest.
func statLine(pid, comm, rest string) string {
	return pid + " (" + comm + ") " + rest + "\n"
}

// statRest are fields 3 to 52 of a sleeping Go process: ppid 1, 250+75
// ticks of CPU, 12 threads, started 123456 ticks after boot.
const statRest = "S 1 42 42 0 -1 4194560 12871 0 3 0 250 75 0 0 20 0 12 0 123456 1293803520 49603 18446744073709551615 4194304 8385229 140731934870592 0 0 0 0 0 2143420159 0 0 0 17 2 0 0 0 0 0 12173312 12374560 36151296 140731934874371 140731934874394 140731934874394 140731934875625 0"

func TestParseStat(t *testing.T) {
	want := func(comm string) Stat {
		return Stat{PID: 42, Comm: comm, State: 'S', PPID: 1, UTime: 250, STime: 75, NumThreads: 12, StartTime: 123456, VSize: 1293803520, RSSPages: 49603}
	}
	tests := []struct {
		name string
		in   string
		want Stat
	}{
		{"plain", statLine("42", "kvservice", statRest), want("kvservice")},
		{"spaces in comm", statLine("42", "kv service 2", statRest), want("kv service 2")},
		{"parentheses in comm", statLine("42", "a) S 9 (b", statRest), want("a) S 9 (b")},
		{"comm ends with )", statLine("42", "x)", statRest), want("x)")},
		{"empty comm", statLine("42", "", statRest), want("")},
		{"only 24 fields", statLine("42", "old", "S 1 42 42 0 -1 4194560 12871 0 3 0 250 75 0 0 20 0 12 0 123456 1293803520 49603"), want("old")},
		{"no newline", strings.TrimSuffix(statLine("42", "kvservice", statRest), "\n"), want("kvservice")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStat([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ParseStat\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseStat_errors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantMsg string
	}{
		{"empty", "", "no command name"},
		{"no parentheses", "42 kvservice S 1", "no command name"},
		{"close before open", "42 )x( S 1", "no command name"},
		{"bad pid", statLine("4x2", "kv", statRest), "bad pid"},
		{"no pid", statLine("", "kv", statRest), "bad pid"},
		{"too few fields", statLine("42", "kv", "S 1 42 42"), "6 fields, want at least 24"},
		{"long state", statLine("42", "kv", "SS"+statRest[1:]), "field 3 (state)"},
		{"bad ppid", statLine("42", "kv", "S -1"+statRest[3:]), "field 4"},
		{"bad starttime", statLine("42", "kv", strings.Replace(statRest, "123456", "12e4", 1)), "field 22"},
		{"threads out of range", statLine("42", "kv", strings.Replace(statRest, " 12 0 123456", " 99999999999 0 123456", 1)), "field 20: 99999999999 out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseStat([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) || !strings.HasPrefix(err.Error(), "parse stat: ") {
				t.Errorf("ParseStat error = %v, want \"parse stat: ...%s...\"", err, tt.wantMsg)
			}
		})
	}
}

func TestStat_durations(t *testing.T) {
	st := Stat{UTime: 250, STime: 75, StartTime: 123456}
	if got, want := st.Started(), 1234560*time.Millisecond; got != want {
		t.Errorf("Started() = %v, want %v", got, want)
	}
	if got, want := st.CPUTime(), 3250*time.Millisecond; got != want {
		t.Errorf("CPUTime() = %v, want %v", got, want)
	}
	if got := (Stat{StartTime: 1<<64 - 1}).Started(); got != 1<<63-1 {
		t.Errorf("Started() of a huge tick count = %v, want the longest duration", got)
	}
}

func TestParseUptime(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"2000.50 3800.25\n", 2000*time.Second + 500*time.Millisecond, false},
		{"12.03 1.00", 12*time.Second + 30*time.Millisecond, false},
		{"7 3\n", 7 * time.Second, false},
		{"0.123456789123 0", 123456789 * time.Nanosecond, false},
		{"", 0, true},
		{"-1.00 0", 0, true},
		{"1.2.3 0", 0, true},
		{"12. 0", 0, true},
		{"99999999999999999999.00 0", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseUptime(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseUptime(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestProc_Stat(t *testing.T) {
	st, err := Proc{}.Stat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != os.Getpid() || st.PPID != os.Getppid() || st.NumThreads < 1 || st.Comm == "" {
		t.Errorf("Stat of the test process = %+v", st)
	}
	_, err = Proc{Root: "testdata/root"}.Stat(999)
	assertNotFound(t, err, 999)
}

func TestProc_Uptime(t *testing.T) {
	t.Run("testdata", func(t *testing.T) {
		// System up 2000.50s, process started 1234.56s after boot.
		got, err := Proc{Root: "testdata/root"}.Uptime(42)
		if err != nil {
			t.Fatal(err)
		}
		if want := 765940 * time.Millisecond; got != want {
			t.Errorf("Uptime = %v, want %v", got, want)
		}
	})
	t.Run("self", func(t *testing.T) {
		got, err := Proc{}.Uptime(os.Getpid())
		since := time.Since(processStart)
		if err != nil {
			t.Fatal(err)
		}
		// The process started before the package initialised, by at
		// most the runtime's start-up; both are read to the tick.
		if got < since-2*time.Second/ClockTicks || got > since+10*time.Second {
			t.Errorf("Uptime = %v, but the package initialised %v ago", got, since)
		}
	})
	t.Run("started after uptime read", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "proc", "3", "stat"), statLine("3", "new", statRest))
		writeFile(t, filepath.Join(root, "proc", "uptime"), "1234.00 1.00\n")
		got, err := Proc{Root: root}.Uptime(3)
		if err != nil || got != 0 {
			t.Errorf("Uptime = %v, %v; want 0, nil", got, err)
		}
	})
	t.Run("missing uptime", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "proc", "3", "stat"), statLine("3", "x", statRest))
		_, err := Proc{Root: root}.Uptime(3)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), filepath.Join("proc", "uptime")) {
			t.Errorf("Uptime error = %v, want a not-exist error naming proc/uptime", err)
		}
	})
	t.Run("missing process", func(t *testing.T) {
		_, err := Proc{Root: "testdata/root"}.Uptime(999)
		assertNotFound(t, err, 999)
	})
}

func TestProc_BuildInfo(t *testing.T) {
	t.Run("self", func(t *testing.T) {
		bi, err := Proc{}.BuildInfo(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if bi.GoVersion != runtime.Version() {
			t.Errorf("GoVersion = %q, want %q", bi.GoVersion, runtime.Version())
		}
		if bi.Path == "" || !strings.HasSuffix(bi.Path, "internal/sysmem.test") {
			t.Errorf("Path = %q, want the test binary's package", bi.Path)
		}
	})
	t.Run("child", func(t *testing.T) {
		c := startChild(t)
		bi, err := Proc{}.BuildInfo(c.pid())
		if err != nil {
			t.Fatal(err)
		}
		if bi.GoVersion != runtime.Version() {
			t.Errorf("GoVersion = %q, want %q", bi.GoVersion, runtime.Version())
		}
	})
	t.Run("not Go", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "proc", "8", "exe"), "#!/bin/sh\necho not Go\n")
		_, err := Proc{Root: root}.BuildInfo(8)
		want := "read " + filepath.Join(root, "proc", "8", "exe") + ": read Go build info: "
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("BuildInfo error = %v, want it to start with %q", err, want)
		}
	})
	t.Run("missing process", func(t *testing.T) {
		_, err := Proc{Root: "testdata/root"}.BuildInfo(999)
		assertNotFound(t, err, 999)
	})
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte(statLine("42", "kvservice", statRest)))
	f.Add([]byte(statLine("1", "a) (b", statRest)))
	f.Add([]byte("1 () R"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStat(data)
		if err != nil {
			return
		}
		if st.PID < 0 || st.PPID < 0 || st.NumThreads < 0 {
			t.Fatalf("negative ids: %+v", st)
		}
		if strings.Count(string(data), "(") == 0 || strings.Count(string(data), ")") == 0 {
			t.Fatalf("parsed without a command name: %q", data)
		}
	})
}
