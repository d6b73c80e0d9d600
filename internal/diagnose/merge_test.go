package diagnose

import (
	"testing"

	"github.com/heapscope/heapscope/internal/result"
)

func TestRun_smallHotSpotsHiddenAndCounted(t *testing.T) {
	// 3 KiB/s and 7 KiB/s: both below every low threshold.
	in := allocRun(10, 1000, map[fn][2]int64{cacheAdd: {30 << 10, 100}, lruInsert: {70 << 10, 200}})
	in.Run.MemStats.GCCPUFraction = 0.001
	rep := Run(in)
	if got := findingsWith(rep.Findings, "alloc.hot-spot"); len(got) != 0 || rep.HiddenHotSpots != 2 {
		t.Errorf("hot spots %+v, %d hidden: want none shown and 2 hidden", got, rep.HiddenHotSpots)
	}
	in.All = true
	rep = Run(in)
	if got := findingsWith(rep.Findings, "alloc.hot-spot"); len(got) != 2 || rep.HiddenHotSpots != 0 {
		t.Errorf("with All: hot spots %+v, %d hidden: want both shown", got, rep.HiddenHotSpots)
	}
}

func TestRun_hotSpotFoldsIntoThePatternAtItsLine(t *testing.T) {
	// 40 MiB/s at a line that converts: one finding, the pattern's, at
	// the hot spot's severity, with its cost.
	conv := fn{"example.com/svc/api.(*Server).key", "/src/svc/api/key.go", 5}
	in := allocRun(10, 1000, map[fn][2]int64{conv: {400 << 20, 100_000}})
	alone := findingsWith(Run(in).Findings, "alloc.hot-spot")
	if len(alone) != 1 {
		t.Fatalf("without the source: hot spots %+v, want one", alone)
	}
	in.Source = mapSource{{file: conv.file, line: conv.line}: `	k := []byte(id)`}
	rep := Run(in)
	if got := findingsWith(rep.Findings, "alloc.hot-spot"); len(got) != 0 {
		t.Errorf("hot spots %+v beside the pattern at the same line, want them folded", got)
	}
	got := findingsWith(rep.Findings, "pattern.string-bytes-conversion")
	if len(got) != 1 {
		t.Fatalf("conversion findings %+v, want one", got)
	}
	if got[0].Severity != alone[0].Severity || got[0].Evidence["bytes_per_second"] != alone[0].Evidence["bytes_per_second"] || got[0].Evidence["samples"] < 1 {
		t.Errorf("finding %+v: want the hot spot's severity %s and its cost figures", got[0], alone[0].Severity)
	}
}

func TestCauseKey(t *testing.T) {
	at := func(id, cause string) result.Finding {
		return result.Finding{ID: id, Cause: cause, Function: "example.com/svc/api.(*Server).fetch", File: "/src/svc/api/fetch.go", Line: 42}
	}
	tests := []struct {
		name string
		f    result.Finding
		want string
	}{
		{"leak at a line", at("leak.inuse-growth", ""), "leak at api.(*Server).fetch (api/fetch.go:42)"},
		{"goroutine growth at the same line is the same cause", at("leak.goroutine-growth", ""), "leak at api.(*Server).fetch (api/fetch.go:42)"},
		{"explained by a misuse", at("leak.goroutine-growth", "http-response-body-not-closed"), "leak/http-response-body-not-closed at api.(*Server).fetch (api/fetch.go:42)"},
		{"pattern", at("pattern.json-per-call", ""), "pattern at api.(*Server).fetch (api/fetch.go:42)"},
		{"no site", result.Finding{ID: "gc.pressure"}, "gc.pressure"},
		{"known bug on its version", result.Finding{ID: "regression.go-72991"}, "regression.go-72991"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CauseKey(tt.f); got != tt.want {
				t.Errorf("CauseKey = %q, want %q", got, tt.want)
			}
		})
	}
}
