package sysmem

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseBootTime(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int64
		wantErr string
	}{
		{"stat", "cpu  10 0 5 100\ncpu0 10 0 5 100\nintr 12 0\nctxt 345\nbtime 1795605291\nprocesses 77\n", 1795605291, ""},
		{"trailing blanks", "btime 1795605291  \r\n", 1795605291, ""},
		{"first wins", "btime 1\nbtime 2\n", 1, ""},
		{"no btime", "cpu 1 2 3\n", 0, "no btime line"},
		{"bad seconds", "btime soon\n", 0, "line 1: btime: bad seconds"},
		{"two values", "btime 1 2\n", 0, "line 1: btime: bad seconds"},
		{"far future", "btime 99999999999999\n", 0, "line 1: btime: bad seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBootTime(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseBootTime error = %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !got.Equal(time.Unix(tt.want, 0)) {
				t.Errorf("ParseBootTime = %v, %v, want %v", got, err, time.Unix(tt.want, 0))
			}
		})
	}
}

func TestProc_Started(t *testing.T) {
	t.Run("testdata", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "proc", "stat"), "cpu 1 2 3\nbtime 1700000000\n")
		writeFile(t, filepath.Join(root, "proc", "42", "stat"), statLine("42", "kv", statRest))
		got, err := Proc{Root: root}.Started(42)
		// 123456 ticks after boot.
		want := time.Unix(1700000000, 0).Add(1234560 * time.Millisecond)
		if err != nil || !got.Equal(want) {
			t.Errorf("Started = %v, %v, want %v", got, err, want)
		}
	})
	t.Run("this process", func(t *testing.T) {
		p := Proc{}
		got, err := p.Started(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		// The boot time has a second's resolution, the start a tick's.
		if got.After(processStart.Add(time.Second)) || got.Before(processStart.Add(-time.Minute)) {
			t.Errorf("Started = %v, want shortly before %v", got, processStart)
		}
		again, err := p.Started(os.Getpid())
		if err != nil || again.Sub(got).Abs() > time.Second {
			t.Errorf("Started again = %v, %v, want %v", again, err, got)
		}
	})
	t.Run("missing process", func(t *testing.T) {
		_, err := Proc{Root: "testdata/root"}.Started(999)
		assertNotFound(t, err, 999)
	})
}

func FuzzParseBootTime(f *testing.F) {
	f.Add([]byte("cpu  10 0 5 100\nbtime 1795605291\nprocesses 77\n"))
	f.Add([]byte("btime\n"))
	f.Add([]byte("btime 18446744073709551615\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		boot, err := ParseBootTime(bytes.NewReader(data))
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) && !strings.Contains(err.Error(), "no btime line") {
				t.Fatalf("error %v is neither a *SyntaxError nor a missing line", err)
			}
			return
		}
		if boot.Before(time.Unix(0, 0)) {
			t.Fatalf("boot time %v before the epoch", boot)
		}
	})
}
