package diagnose

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// liveInput builds n snapshots a minute apart: the exact live heap of
// each from live, and sampled in-use bytes per function from inuse, in
// objects of 64 bytes sampled at period.
func liveInput(n int, period int64, live func(i int) float64, inuse map[fn]func(i int) int64) Input {
	var in Input
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Minute)
		h := newHeap(at, period)
		alloc := int64(i+1) * 10 << 20
		h.sample([4]int64{alloc / 64, alloc, 0, 0}, httpRead)
		for f, v := range inuse {
			y := v(i)
			h.sample([4]int64{y / 64, y, y / 64, y}, f, handler)
		}
		in.Heap = append(in.Heap, Profile{Name: fmt.Sprintf("heap-%03d", i), Time: at, Profile: h.build()})
		in.Live = append(in.Live, Live{Bytes: uint64(live(i)), Objects: uint64(live(i) / 64)})
	}
	return in
}

func TestRun_liveHeapDecides(t *testing.T) {
	steady := func(i int) float64 { return 20*mib + float64(i)*mib }
	tests := []struct {
		name           string
		in             Input
		wantLeakAt     *fn     // a leak.inuse-growth at this site
		wantUnplaced   bool    // a leak.live-growth
		wantNoteSaying string  // when no leak: a note containing this
		wantBounded    bool    // when no leak: a low growth.bounded finding
		wantSeverity   string  // of the leak; high when empty
		wantSlope      float64 // of the live heap, B/min; 1 MiB/min when 0
	}{
		{
			name: "a steady leak, placed by the samples",
			in: liveInput(6, 512, steady, map[fn]func(int) int64{
				cacheAdd: func(i int) int64 { return 4*mib + int64(i)*mib },
				warm:     func(i int) int64 { return 2 * mib },
			}),
			wantLeakAt: &cacheAdd,
		},
		{
			// Recorded: the leaky cache under the README's load at the
			// default sampling rate, a snapshot every 7.5 s (in MiB, the
			// first before the load). Fewer ids are new as the window
			// goes on, so it grows more slowly; it never stops.
			name: "the leaky cache, recorded: slower later, still growing",
			in: func() Input {
				rec := []float64{1.96, 2.56, 3.07, 3.43, 3.80, 4.65, 4.86, 5.07, 5.25}
				in := liveInput(len(rec), 512<<10, func(i int) float64 { return rec[i] * mib }, map[fn]func(int) int64{
					cacheAdd: func(i int) int64 { return int64(i) * 384 << 10 },
				})
				in.FirstUnderLoad = 1
				return in
			}(),
			wantLeakAt: &cacheAdd,
			// 414 KiB a minute at a minute a snapshot, doubling in 13
			// minutes with no limit known.
			wantSeverity: "medium",
		},
		{
			// Recorded: the same, 30 s in five snapshots; the map's table
			// doubled before the last, so the line fits loosely (R² 0.85)
			// though the heap rose at every step.
			name: "the leaky cache, recorded: a doubling in the last step",
			in: func() Input {
				rec := []float64{2.0, 2.1, 2.6, 2.9, 3.2, 4.7}
				in := liveInput(len(rec), 512<<10, func(i int) float64 { return rec[i] * mib }, map[fn]func(int) int64{
					cacheAdd: func(i int) int64 { return int64(i) * 512 << 10 },
				})
				in.FirstUnderLoad = 1
				return in
			}(),
			wantLeakAt: &cacheAdd, // high: 594 KiB a minute here
		},
		{
			// Recorded: contexts with a timeout never cancelled, 10 s at
			// 100/s: a slow leak whose later half rises little, but at
			// the pace of its first.
			name: "a slow leak in a short window, recorded",
			in: liveInput(4, 512, func(i int) float64 { return []float64{298, 420, 533, 644}[i] * 1024 }, map[fn]func(int) int64{
				cacheAdd: func(i int) int64 { return int64(i) * 110 << 10 },
			}),
			wantLeakAt:   &cacheAdd,
			wantSeverity: "medium",
			wantSlope:    117_862.4, // the fitted 115.1 KiB a step
		},
		{
			name: "warm-up: grows, then holds",
			in: liveInput(6, 512, func(i int) float64 { return 20*mib + float64(min(i, 1))*4*mib + float64(i%2)*20e3 }, map[fn]func(int) int64{
				warm: func(i int) int64 { return int64(min(i, 1)) * 4 * mib },
			}),
			wantBounded: true,
		},
		{
			name: "a cache that evicts: sawtooth",
			in: liveInput(6, 512, func(i int) float64 { return 20*mib + float64(i%2)*3*mib }, map[fn]func(int) int64{
				lruInsert: func(i int) int64 { return 2*mib + int64(i%2)*3*mib },
			}),
			wantNoteSaying: "sawtooth",
		},
		{
			// The sampled figure of one site rises by chance; the exact
			// heap does not: no leak.
			name: "flat live heap, a site's samples drifting up",
			in: liveInput(6, 512<<10, func(i int) float64 { return 20*mib + float64(i%3)*30e3 }, map[fn]func(int) int64{
				cacheAdd: func(i int) int64 { return int64(i) * 512 << 10 },
			}),
			wantNoteSaying: "does not grow steadily",
		},
		{
			name: "growth below the floor of traffic in flight",
			in: liveInput(6, 512, func(i int) float64 { return 20*mib + float64(i)*30e3 }, map[fn]func(int) int64{
				cacheAdd: func(i int) int64 { return 4*mib + int64(i)*30e3 },
			}),
			wantNoteSaying: "flat",
		},
		{
			name: "a steady leak that no site's samples place",
			in: liveInput(6, 512<<10, steady, map[fn]func(int) int64{
				warm: func(i int) int64 { return 2 * mib },
			}),
			wantUnplaced: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Run(tt.in)
			leaks := findingsWith(rep.Findings, "leak.inuse-growth")
			unplaced := findingsWith(rep.Findings, "leak.live-growth")
			switch {
			case tt.wantLeakAt != nil:
				if len(leaks) != 1 || leaks[0].Function != tt.wantLeakAt.name || leaks[0].Line != tt.wantLeakAt.line {
					t.Fatalf("leaks %+v, want one at %s; notes %v", leaks, tt.wantLeakAt.name, rep.Notes)
				}
				f := leaks[0]
				if got, want := f.Evidence["live_slope_bytes_per_minute"], cmp.Or(tt.wantSlope, mib); tt.in.FirstUnderLoad == 0 && math.Abs(got-want) > 1 {
					t.Errorf("live slope %.1f B/min, want the exact %.1f", got, want)
				}
				want := cmp.Or(tt.wantSeverity, "high")
				if f.Severity != want || !strings.Contains(f.Title, "exact") || !strings.Contains(f.Title, "±") {
					t.Errorf("severity %s, title %q: want %s, the exact slope and the site's share with its uncertainty", f.Severity, f.Title, want)
				}
			case tt.wantUnplaced:
				if len(unplaced) != 1 || len(leaks) != 0 {
					t.Fatalf("unplaced %+v, leaks %+v: want one leak.live-growth and no site", unplaced, leaks)
				}
				if fix := unplaced[0].Fix; !strings.Contains(fix, "GODEBUG=memprofilerate=") || !strings.Contains(fix, "--duration") {
					t.Errorf("fix %q does not say what to run to place it", fix)
				}
			case tt.wantBounded:
				bounded := findingsWith(rep.Findings, "growth.bounded")
				if len(leaks)+len(unplaced) != 0 || len(bounded) != 1 {
					t.Fatalf("leak findings %+v %+v, bounded %+v: want one bounded growth, no leak", leaks, unplaced, bounded)
				}
				if f := bounded[0]; f.Severity != "low" || f.Evidence["plateau_bytes"] < 24*mib || !strings.Contains(f.Title, "levelled at") {
					t.Errorf("bounded growth %s %q %v: want low, its plateau of 24 MiB", f.Severity, f.Title, f.Evidence)
				}
			default:
				if len(leaks)+len(unplaced) != 0 {
					t.Fatalf("leak findings %+v %+v, want none", leaks, unplaced)
				}
				if !strings.Contains(strings.Join(rep.Notes, "\n"), tt.wantNoteSaying) {
					t.Errorf("notes %q lack %q", rep.Notes, tt.wantNoteSaying)
				}
			}
		})
	}
}

// TestRun_liveHeapMeetingTheLoad: a window that opens as the load begins
// grows at once (the service meeting the load) and then holds; that step
// is named and is no leak.
func TestRun_liveHeapMeetingTheLoad(t *testing.T) {
	in := liveInput(5, 512, func(i int) float64 { return 2*mib + float64(min(i, 1))*4*mib + float64(i%2)*10e3 }, map[fn]func(int) int64{
		warm: func(i int) int64 { return int64(min(i, 1)) * 4 * mib },
	})
	in.FirstUnderLoad = 1
	rep := Run(in)
	if leaks := findingsWith(rep.Findings, "leak.inuse-growth"); len(leaks) != 0 {
		t.Fatalf("leaks %+v, want none", leaks)
	}
	notes := strings.Join(rep.Notes, "\n")
	if !strings.Contains(notes, "grew by 4.0 MiB as the load began") {
		t.Errorf("notes %q do not name the step as the load began", notes)
	}
	// The same series without knowing when the load began: its first
	// step is most of the growth, and the shape is warm-up still.
	in.FirstUnderLoad = 0
	if leaks := findingsWith(Run(in).Findings, "leak.inuse-growth"); len(leaks) != 0 {
		t.Errorf("leaks %+v without FirstUnderLoad, want none", leaks)
	}
}

// TestRun_liveHeapFewSamples: at the default rate, a leak of a few MiB
// moves its site by a few samples; the finding gives the estimate with
// its uncertainty and says how to place it better, and a second site
// with one sample is left to a note.
func TestRun_liveHeapFewSamples(t *testing.T) {
	const period = 512 << 10
	// In 64-byte objects, 256 KiB a minute is about half a sample a
	// minute: two samples over the series. The LRU gains one sample's
	// worth at the end, by chance.
	in := liveInput(5, period, func(i int) float64 { return 20*mib + float64(i)*mib }, map[fn]func(int) int64{
		cacheAdd: func(i int) int64 { return int64(i) * 256 << 10 },
		lruInsert: func(i int) int64 {
			if i == 4 {
				return 512 << 10
			}
			return 0
		},
	})
	rep := Run(in)
	leaks := findingsWith(rep.Findings, "leak.inuse-growth")
	if len(leaks) != 1 || leaks[0].Function != cacheAdd.name {
		t.Fatalf("leaks %+v, want the cache alone; notes %v", leaks, rep.Notes)
	}
	f := leaks[0]
	n := f.Evidence["site_samples"]
	if n < 1 || n > 3 || f.Evidence["site_growth_uncertainty_bytes"] <= 0 {
		t.Errorf("evidence %v: want the samples and the uncertainty", f.Evidence)
	}
	if want := f.Evidence["site_growth_bytes"] / math.Sqrt(n); math.Abs(f.Evidence["site_growth_uncertainty_bytes"]-want) > 1 {
		t.Errorf("uncertainty %.0f, want growth/√n = %.0f", f.Evidence["site_growth_uncertainty_bytes"], want)
	}
	if !strings.Contains(f.Fix, "GODEBUG=memprofilerate=") {
		t.Errorf("fix %q does not say how to place it surely", f.Fix)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "too few to place growth there") {
		t.Errorf("notes %q do not account for the one-sample site", rep.Notes)
	}
}

func TestPlace(t *testing.T) {
	growing := func(i int) float64 { return 20*mib + float64(i)*mib }
	tests := []struct {
		name         string
		in           Input
		grows, place bool
	}{
		{"growth placed", liveInput(5, 512, growing, map[fn]func(int) int64{cacheAdd: func(i int) int64 { return int64(i) * mib }}), true, true},
		{"growth not placed yet", liveInput(5, 512<<10, growing, nil), true, false},
		{"no growth", liveInput(5, 512, func(i int) float64 { return 20 * mib }, nil), false, false},
		{"no live figures", Input{Heap: heapSeriesOf(5, map[fn]func(int) int64{cacheAdd: func(i int) int64 { return int64(i) * mib }})}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Place(tt.in)
			if got.Grows != tt.grows || got.Placed != tt.place {
				t.Errorf("Place = %+v, want grows %v placed %v", got, tt.grows, tt.place)
			}
		})
	}
}

func TestRateFor(t *testing.T) {
	tests := []struct {
		growth float64
		period int64
		want   int64
	}{
		{growth: 4 * mib, period: 512 << 10, want: 128 << 10},
		{growth: 100 << 10, period: 512 << 10, want: 2048},
		{growth: 1000, period: 512 << 10, want: 512},
		{growth: 1 << 40, period: 512 << 10, want: 512 << 10},
	}
	for _, tt := range tests {
		if got := rateFor(tt.growth, tt.period); got != tt.want {
			t.Errorf("rateFor(%.0f, %d) = %d, want %d", tt.growth, tt.period, got, tt.want)
		}
	}
}

// TestWithoutProfilerSteps: a CPU profile's buffers held from the second
// snapshot to the fourth make a step up and one down in a steady series;
// taken out, the series is the steady one again.
func TestWithoutProfilerSteps(t *testing.T) {
	xs := []float64{0, 1, 2, 3, 4, 5}
	ys := []float64{0, 1100, 1200, 1300, 400, 500}
	on := []bool{false, true, true, true, false, false}
	got := withoutProfilerSteps(xs, ys, on)
	for i, want := range []float64{0, 100, 200, 300, 400, 500} {
		if math.Abs(got[i]-want) > 1e-9 {
			t.Fatalf("withoutProfilerSteps = %v, want 0, 100, … 500", got)
		}
	}
	if ys[1] != 1100 {
		t.Error("the input was modified")
	}
	// No change of state: the series as it is.
	flat := []bool{true, true, true, true, true, true}
	if got := withoutProfilerSteps(xs, ys, flat); !slices.Equal(got, ys) {
		t.Errorf("without a change of state: %v, want %v", got, ys)
	}
}
