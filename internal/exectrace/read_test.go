package exectrace

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/trace"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/goldenfile"
)

var sink [][]byte

// recordTrace traces this test process for d while a goroutine
// allocates with a small GOGC, so that GC cycles happen.
func recordTrace(t *testing.T, d time.Duration) []byte {
	t.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("another trace is running (go test -trace?): %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			sink = append(sink, make([]byte, 32<<10))
			if len(sink) > 128 {
				sink = sink[:0]
			}
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
	}()
	<-done
	trace.Stop()
	sink = nil
	return buf.Bytes()
}

func TestRead_liveProcess(t *testing.T) {
	data := recordTrace(t, 300*time.Millisecond)
	tl, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	s := tl.Summarise()
	if s.Cycles == 0 || s.CompleteCycles == 0 {
		t.Fatalf("no GC cycles in a trace of an allocating process: %+v", s)
	}
	if tl.Duration < 250*time.Millisecond || tl.Duration > 30*time.Second {
		t.Errorf("trace lasts %s, want about 300ms", tl.Duration)
	}
	for name, share := range map[string]float64{"gc": s.GCShare, "stw": s.STWShare, "gc stw": s.GCSTWShare} {
		if share < 0 || share > 1 {
			t.Errorf("%s share %v outside [0,1]", name, share)
		}
	}
	if s.GCShare <= 0 || s.STWShare <= 0 {
		t.Errorf("GC share %v, STW share %v: want both above 0", s.GCShare, s.STWShare)
	}
	if s.GCSTWShare > s.STWShare {
		t.Errorf("GC pauses take %v of the time, more than all pauses %v", s.GCSTWShare, s.STWShare)
	}
	var readMemStats bool
	for _, p := range tl.Pauses {
		if p.Duration <= 0 || p.Duration > tl.Duration {
			t.Errorf("pause %+v: duration outside (0, %s]", p, tl.Duration)
		}
		if p.Start < 0 || p.Start > tl.Duration {
			t.Errorf("pause %+v starts outside the trace", p)
		}
		readMemStats = readMemStats || (!p.GC && strings.Contains(p.Reason, "mem stats"))
	}
	if !readMemStats {
		t.Errorf("the ReadMemStats pause is missing from %d pauses", len(tl.Pauses))
	}
	for i, c := range tl.Cycles {
		if c.Start > c.MarkStart+time.Millisecond || c.MarkStart > c.MarkEnd || c.MarkEnd > c.End || c.End > tl.Duration {
			t.Errorf("cycle %d out of order: %+v", i, c)
		}
		if i > 0 && c.Start < tl.Cycles[i-1].End {
			t.Errorf("cycle %d starts at %s before cycle %d ends at %s", i, c.Start, i-1, tl.Cycles[i-1].End)
		}
		if !c.Partial && (c.SweepTermination <= 0 || c.MarkTermination <= 0) {
			t.Errorf("complete cycle %d lacks a pause: %+v", i, c)
		}
		if !c.Partial && c.Goal == 0 {
			t.Errorf("complete cycle %d has no heap goal", i)
		}
	}
	if len(tl.Heap) == 0 || s.HeapMaxBytes == 0 || s.GoalLastBytes == 0 {
		t.Errorf("no heap figures: %d points, max %d, goal %d", len(tl.Heap), s.HeapMaxBytes, s.GoalLastBytes)
	}
}

// TestRead_formats reads traces recorded by the same allocating program
// under toolchains whose trace formats differ: Go 1.21's (the old
// format), Go 1.23's and Go 1.26's.
func TestRead_formats(t *testing.T) {
	for _, name := range []string{"alloc-go1.21.13.trace", "alloc-go1.23.12.trace", "alloc.trace"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + name)
			if err != nil {
				t.Fatal(err)
			}
			tl, err := Read(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			s := tl.Summarise()
			if s.CompleteCycles == 0 || s.GCPauses < 2*s.CompleteCycles {
				t.Errorf("%d complete cycles with %d GC pauses: want cycles, two pauses each", s.CompleteCycles, s.GCPauses)
			}
			if s.GCShare <= 0 || s.GCShare > 1 || s.STWShare <= 0 || s.STWShare > s.GCShare {
				t.Errorf("GC share %v, STW share %v", s.GCShare, s.STWShare)
			}
			if s.HeapMaxBytes == 0 || s.GoalLastBytes == 0 {
				t.Errorf("no heap figures: %+v", s)
			}
		})
	}
}

// TestRead_golden checks the timeline of a recorded trace as result.json
// carries it; report renders it.
func TestRead_golden(t *testing.T) {
	data, err := os.ReadFile("testdata/alloc.trace")
	if err != nil {
		t.Fatal(err)
	}
	tl, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"alloc.json", func(b *bytes.Buffer) error {
			enc := json.NewEncoder(b)
			enc.SetIndent("", "  ")
			return enc.Encode(tl.Result(0))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, "testdata/golden/"+tc.name, b.Bytes())
		})
	}
}

func TestRead_badInput(t *testing.T) {
	real, err := os.ReadFile("testdata/alloc.trace")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "read trace"},
		{"not a trace", []byte("module example.com/x\n\ngo 1.26\n"), "not a Go execution trace"},
		{"pprof profile", []byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"), "not a Go execution trace"},
		{"header only", real[:16], "no events"},
		{"truncated", real[:len(real)/3], "truncated or corrupt"},
		{"future version", []byte("go 1.99 trace\x00\x00\x00"), "unsupported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl, err := Read(bytes.NewReader(tc.in))
			if err == nil {
				t.Fatalf("Read succeeded with %d cycles; want an error", len(tl.Cycles))
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestRead_noEventsIsErrNoEvents(t *testing.T) {
	real, err := os.ReadFile("testdata/alloc.trace")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Read(bytes.NewReader(real[:16]))
	if !errors.Is(err, ErrNoEvents) {
		t.Errorf("got %v, want ErrNoEvents", err)
	}
}

func FuzzRead(f *testing.F) {
	real, err := os.ReadFile("testdata/alloc.trace")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real[:2048])
	f.Add(real[:16])
	f.Add([]byte("go 1.26 trace\x00\x00\x00"))
	f.Add([]byte("go 1.21 trace\x00\x00\x00"))
	f.Add([]byte("go 1.19 trace\x00\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tl, err := Read(bytes.NewReader(data))
		if err != nil {
			if tl != nil {
				t.Fatal("a timeline with an error")
			}
			return
		}
		s := tl.Summarise()
		if s.GCShare < 0 || s.GCShare > 1 || s.STWShare < 0 || s.STWShare > 1 {
			t.Fatalf("shares outside [0,1]: %+v", s)
		}
		if r := tl.Result(0); len(r.Cycles) != len(tl.Cycles) || len(r.Heap) > DefaultMaxPoints {
			t.Fatalf("result of %d cycles and %d heap points from %d cycles", len(r.Cycles), len(r.Heap), len(tl.Cycles))
		}
	})
}
