package gcstats

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseTrace_recorded reads the logs recorded under each toolchain
// (testdata/gctrace/gen/record.sh) and checks every runtime line was read.
func TestParseTrace_recorded(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "gctrace", "go1.*.txt"))
	if err != nil || len(files) < 6 {
		t.Fatalf("recorded logs: %v %v", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			// Count the runtime's lines independently of the parser.
			var gcLines, forced, scav int
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				l := sc.Text()
				switch {
				case strings.HasPrefix(l, "gc "):
					gcLines++
					if strings.HasSuffix(l, "(forced)") {
						forced++
					}
				case strings.HasPrefix(l, "scav "):
					scav++
				}
			}
			tr, err := ParseTrace(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Warnings) != 0 {
				t.Errorf("warnings: %v", tr.Warnings)
			}
			if len(tr.Cycles) != gcLines || len(tr.Scavenges) != scav {
				t.Errorf("%d cycles, %d scavenges; the log has %d gc and %d scav lines", len(tr.Cycles), len(tr.Scavenges), gcLines, scav)
			}
			s := Summarize(tr)
			if s.Forced != forced {
				t.Errorf("%d forced cycles, want %d", s.Forced, forced)
			}
			// gctracegen idles until the runtime's periodic GC.
			if tr.PeriodicGCs != 1 || s.Periodic != 1 || !tr.Cycles[len(tr.Cycles)-1].Periodic {
				t.Errorf("periodic: %d GC forced lines, %d periodic cycles", tr.PeriodicGCs, s.Periodic)
			}
			wantLeak := 0
			if strings.Contains(file, "go1.26") {
				wantLeak = 1
			}
			if s.LeakChecks != wantLeak {
				t.Errorf("%d leak-checking cycles, want %d", s.LeakChecks, wantLeak)
			}
			for i, c := range tr.Cycles {
				if c.N != i+1 || c.HeapGoalBytes == 0 || c.Procs == 0 || c.HeapEndBytes < c.HeapLiveBytes {
					t.Errorf("cycle %d: %+v", i+1, c)
				}
			}
			if s.PauseSeconds.Max < s.PauseSeconds.P50 || s.CyclesPerSecond <= 0 {
				t.Errorf("summary %+v", s)
			}
		})
	}
}

func TestTraceParser_Line(t *testing.T) {
	tests := []struct {
		name string
		line string
		kind LineKind
		want Cycle // checked for LineCycle
	}{
		{
			name: "go1.26 leak check forced",
			line: "gc 11 @0.496s 6% (checking for goroutine leaks): 0.059+0.52+0.003 ms clock, 0.11+0/0.14/0.084+0.006 ms cpu, 0->1->0 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)\n",
			kind: LineCycle,
			want: Cycle{N: 11, AtSeconds: 0.496, GCCPUShare: 0.06, SweepTermSeconds: 0.059e-3, MarkSeconds: 0.52e-3, MarkTermSeconds: 0.003e-3,
				SweepTermCPUSeconds: 0.11e-3, BackgroundCPUSeconds: 0.14e-3, IdleCPUSeconds: 0.084e-3, MarkTermCPUSeconds: 0.006e-3,
				HeapEndBytes: 1 << 20, HeapGoalBytes: 4 << 20, Procs: 2, Forced: true, LeakCheck: true},
		},
		{
			name: "go1.17 without stacks and globals",
			line: "gc 3 @1.5s 1%: 0.1+2+0.2 ms clock, 0.4+0.5/1/2+0.8 ms cpu, 12->14->6 MB, 13 MB goal, 8 P",
			kind: LineCycle,
			want: Cycle{N: 3, AtSeconds: 1.5, GCCPUShare: 0.01, SweepTermSeconds: 0.1e-3, MarkSeconds: 2e-3, MarkTermSeconds: 0.2e-3,
				SweepTermCPUSeconds: 0.4e-3, AssistCPUSeconds: 0.5e-3, BackgroundCPUSeconds: 1e-3, IdleCPUSeconds: 2e-3, MarkTermCPUSeconds: 0.8e-3,
				HeapStartBytes: 12 << 20, HeapEndBytes: 14 << 20, HeapLiveBytes: 6 << 20, HeapGoalBytes: 13 << 20, Procs: 8},
		},
		{
			name: "unknown field of a later release, CRLF",
			line: "gc 1 @0.1s 0%: 1+2+3 ms clock, 1+0/0/0+1 ms cpu, 4->4->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 7 MB arenas, 2 P\r\n",
			kind: LineCycle,
			want: Cycle{N: 1, AtSeconds: 0.1, SweepTermSeconds: 1e-3, MarkSeconds: 2e-3, MarkTermSeconds: 3e-3, SweepTermCPUSeconds: 1e-3, MarkTermCPUSeconds: 1e-3,
				HeapStartBytes: 4 << 20, HeapEndBytes: 4 << 20, HeapLiveBytes: 1 << 20, HeapGoalBytes: 4 << 20, Procs: 2},
		},
		{name: "scavenger", line: "scav 28504 KiB work (bg), 0 KiB work (eager), 4440 KiB now, 49% util", kind: LineScavenge},
		{name: "scavenger go1.19 forced", line: "scav 36040 KiB work, 64960 KiB total, 100% util (forced)", kind: LineScavenge},
		{name: "GC forced", line: "GC forced\n", kind: LineGCForced},
		{name: "program output", line: "listening on :8080", kind: LineOther},
		{name: "gc word in prose", line: "gc is fine", kind: LineOther},
		{name: "truncated", line: "gc 5 @0.2s 3%: 0.1+0.2+0.3 ms clock, 0.1+0/0", kind: LineMalformed},
		{name: "bad number", line: "gc 5 @x.2s 3%: 1+2+3 ms clock, 1+0/0/0+1 ms cpu, 4->4->1 MB, 4 MB goal, 2 P", kind: LineMalformed},
		{name: "negative", line: "gc 5 @0.2s 3%: -1+2+3 ms clock, 1+0/0/0+1 ms cpu, 4->4->1 MB, 4 MB goal, 2 P", kind: LineMalformed},
		{name: "scav missing util", line: "scav 1 KiB work (bg), 2 KiB now", kind: LineMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p TraceParser
			kind := p.Line([]byte(tt.line))
			if kind != tt.kind {
				t.Fatalf("kind %d, want %d; warnings %v", kind, tt.kind, p.Trace().Warnings)
			}
			tr := p.Trace()
			if (kind == LineMalformed) != (len(tr.Warnings) == 1) {
				t.Errorf("warnings %v", tr.Warnings)
			}
			if kind == LineCycle {
				got := tr.Cycles[0]
				tt.want.Line = 1
				if !approxCycle(got, tt.want) {
					t.Errorf("got  %+v\nwant %+v", got, tt.want)
				}
			}
		})
	}
}

// approxCycle compares cycles, times to within a nanosecond.
func approxCycle(a, b Cycle) bool {
	near := func(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }
	fa := []float64{a.AtSeconds, a.GCCPUShare, a.SweepTermSeconds, a.MarkSeconds, a.MarkTermSeconds, a.SweepTermCPUSeconds, a.AssistCPUSeconds, a.BackgroundCPUSeconds, a.IdleCPUSeconds, a.MarkTermCPUSeconds}
	fb := []float64{b.AtSeconds, b.GCCPUShare, b.SweepTermSeconds, b.MarkSeconds, b.MarkTermSeconds, b.SweepTermCPUSeconds, b.AssistCPUSeconds, b.BackgroundCPUSeconds, b.IdleCPUSeconds, b.MarkTermCPUSeconds}
	for i := range fa {
		if !near(fa[i], fb[i]) {
			return false
		}
	}
	a2, b2 := a, b
	a2.AtSeconds, a2.GCCPUShare, a2.SweepTermSeconds, a2.MarkSeconds, a2.MarkTermSeconds = 0, 0, 0, 0, 0
	b2.AtSeconds, b2.GCCPUShare, b2.SweepTermSeconds, b2.MarkSeconds, b2.MarkTermSeconds = 0, 0, 0, 0, 0
	a2.SweepTermCPUSeconds, a2.AssistCPUSeconds, a2.BackgroundCPUSeconds, a2.IdleCPUSeconds, a2.MarkTermCPUSeconds = 0, 0, 0, 0, 0
	b2.SweepTermCPUSeconds, b2.AssistCPUSeconds, b2.BackgroundCPUSeconds, b2.IdleCPUSeconds, b2.MarkTermCPUSeconds = 0, 0, 0, 0, 0
	return a2 == b2
}

func TestParseTrace_errors(t *testing.T) {
	tests := []struct {
		name, log string
		want      error
		warnings  int
	}{
		{"empty", "", ErrNoCycles, 0},
		{"program output only", "hello\nworld\n", ErrNoCycles, 0},
		{"only malformed", "gc 1 @0.1s 0%: garbage\n", ErrNoCycles, 1},
		{"restart", "gc 2 @0.1s 0%: 1+2+3 ms clock, 1+0/0/0+1 ms cpu, 4->4->1 MB, 4 MB goal, 2 P\ngc 1 @0.1s 0%: 1+2+3 ms clock, 1+0/0/0+1 ms cpu, 4->4->1 MB, 4 MB goal, 2 P\n", nil, 1},
		{"long line", strings.Repeat("x", 100<<10) + "\ngc 1 @0.1s 0%: 1+2+3 ms clock, 1+0/0/0+1 ms cpu, 4->4->1 MB, 4 MB goal, 2 P", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := ParseTrace(strings.NewReader(tt.log))
			if !errors.Is(err, tt.want) {
				t.Errorf("error %v, want %v", err, tt.want)
			}
			if len(tr.Warnings) != tt.warnings {
				t.Errorf("warnings %v, want %d", tr.Warnings, tt.warnings)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	log := strings.Join([]string{
		"gc 1 @1.000s 1%: 1+10+1 ms clock, 2+1/8/1+2 ms cpu, 4->5->2 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P",
		"gc 2 @2.000s 2%: 2+20+2 ms clock, 4+2/16/2+4 ms cpu, 8->9->6 MB, 8 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)",
		"scav 100 KiB work (bg), 20 KiB work (eager), 500 KiB now, 50% util",
		"GC forced",
		"gc 3 @5.000s 1%: 3+30+3 ms clock, 6+3/24/3+6 ms cpu, 12->12->3 MB, 12 MB goal, 0 MB stacks, 0 MB globals, 4 P",
	}, "\n")
	tr, err := ParseTrace(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(tr)
	near := func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }
	checks := []struct {
		name      string
		got, want float64
	}{
		{"cycles", float64(s.Cycles), 3},
		{"forced", float64(s.Forced), 1},
		{"periodic", float64(s.Periodic), 1},
		{"rate", s.CyclesPerSecond, 2.0 / 4},
		{"pause p50", s.PauseSeconds.P50, 4e-3},
		{"pause max", s.PauseSeconds.Max, 6e-3},
		{"pause total", s.PauseTotalSeconds, 12e-3},
		{"cpu total", s.CPUTotalSeconds, 14e-3 + 28e-3 + 42e-3},
		{"stw cpu", s.STWCPUTotalSeconds, 24e-3},
		{"assist", s.AssistCPUTotalSeconds, 6e-3},
		{"share", s.GCCPUShare, 0.01},
		{"share peak", s.GCCPUSharePeak, 0.02},
		{"heap start peak", float64(s.HeapStartPeakBytes), 12 << 20},
		{"live peak", float64(s.HeapLivePeakBytes), 6 << 20},
		{"procs", float64(s.Procs), 4},
		{"scav bg", float64(s.Scavenger.BackgroundBytes), 100 << 10},
		{"scav released", float64(s.Scavenger.ReleasedLastBytes), 500 << 10},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if tr.Scavenges[0].AfterCycle != 2 {
		t.Errorf("scavenge after cycle %d, want 2", tr.Scavenges[0].AfterCycle)
	}
}

func FuzzTraceParser_Line(f *testing.F) {
	for _, s := range []string{
		"gc 11 @0.496s 6% (checking for goroutine leaks): 0.059+0.52+0.003 ms clock, 0.11+0/0.14/0.084+0.006 ms cpu, 0->0->0 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)",
		"gc 3 @1.5s 1%: 0.1+2+0.2 ms clock, 0.4+0.5/1/2+0.8 ms cpu, 12->14->6 MB, 13 MB goal, 8 P",
		"scav 36040 KiB work, 64960 KiB total, 100% util (forced)",
		"scav 0 KiB work (bg), 34984 KiB work (eager), 69024 KiB now, 100% util (forced)",
		"GC forced",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var p TraceParser
		kind := p.Line([]byte(line))
		tr := p.Trace()
		switch kind {
		case LineCycle:
			c := tr.Cycles[0]
			if c.HeapStartBytes%(1<<20) != 0 || c.PauseSeconds() < 0 || c.CPUSeconds() < 0 || c.AtSeconds < 0 {
				t.Errorf("cycle %+v", c)
			}
		case LineMalformed:
			if len(tr.Warnings) != 1 {
				t.Errorf("malformed line without one warning: %v", tr.Warnings)
			}
		case LineScavenge:
			if len(tr.Scavenges) != 1 {
				t.Error("scavenge not kept")
			}
		}
		_ = Summarize(tr)
	})
}

// BenchmarkParseTrace reads the Go 1.26 log repeated to 10,000 lines, as
// gctrace reads a long-running service's stderr.
func BenchmarkParseTrace(b *testing.B) {
	one, err := os.ReadFile(filepath.Join("testdata", "gctrace", "go1.26.txt"))
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Count(one, []byte("\n"))
	data := bytes.Repeat(one, 10_000/lines)
	n := lines * (10_000 / lines)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	r := bytes.NewReader(data)
	for b.Loop() {
		r.Reset(data)
		if _, err := ParseTrace(r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/line")
}
