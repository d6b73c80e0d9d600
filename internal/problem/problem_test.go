package problem

import (
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/result"
)

var t0 = time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

var leak = Finding{Cause: "leak at main.Process (cache.go:42)", Kind: "leak.inuse-growth", Severity: "high",
	Title: "inuse_space grows", Where: "cache.go:42", Evidence: map[string]float64{"slope_bytes_per_minute": 2 << 20}}

var hot = Finding{Cause: "alloc at main.Encode (kv.go:7)", Kind: "alloc.hot-spot", Severity: "medium", Title: "hot", Where: "kv.go:7"}

var note = Finding{Cause: "gc.pressure", Kind: "gc.pressure", Severity: "info", Title: "GC runs often"}

// capture is a complete capture with no load figure.
func capture(min int, fs ...Finding) Capture {
	return Capture{Time: at(min), Path: "runs/a/" + at(min).Format("150405"), Complete: true, Findings: fs}
}

func loaded(c Capture, rate float64) Capture {
	c.Load, c.HasLoad = rate, true
	return c
}

func bundle(c Capture) Capture {
	c.Bundle = true
	return c
}

func partial(c Capture) Capture {
	c.Complete = false
	return c
}

// want is what a test checks of a problem.
type want struct {
	cause    string
	state    State
	severity string
	first    time.Time
	last     time.Time
	resolved time.Time
	captures int
	hasTrend bool
	latest   string
	// unconfirmed: a young growth only one capture showed.
	unconfirmed bool
}

// young is the leak growing in its window by four times what its site
// held at the window's start: a site younger than two windows.
var young = withEvidence(leak, map[string]float64{"slope_bytes_per_minute": 2 << 20, "growth_bytes": 8 << 20, "first_bytes": 2 << 20})

func withEvidence(f Finding, ev map[string]float64) Finding {
	f.Evidence = ev
	return f
}

func TestFind(t *testing.T) {
	worse := leak
	worse.Severity, worse.Evidence = "medium", nil
	milder := leak
	milder.Severity = "low"
	for _, tc := range []struct {
		name     string
		captures []Capture
		want     []want
	}{
		{
			name:     "leak in 3 captures is one open problem",
			captures: []Capture{capture(0, leak), capture(10, leak), capture(20, leak)},
			want:     []want{{cause: leak.Cause, state: Open, severity: "high", first: at(0), last: at(20), captures: 3, hasTrend: true, latest: capture(20).Path}},
		},
		{
			name:     "captures out of order are sorted by time",
			captures: []Capture{capture(20, leak), capture(0, leak), capture(10, leak)},
			want:     []want{{cause: leak.Cause, state: Open, severity: "high", first: at(0), last: at(20), captures: 3, hasTrend: true, latest: capture(20).Path}},
		},
		{
			name:     "gone from two comparable captures in a row is resolved, from the first",
			captures: []Capture{capture(0, leak), capture(10, leak), capture(20), capture(30)},
			want:     []want{{cause: leak.Cause, state: Resolved, severity: "high", first: at(0), last: at(10), resolved: at(20), captures: 2, hasTrend: true, latest: capture(10).Path}},
		},
		{
			name:     "gone from one capture only is still open",
			captures: []Capture{capture(0, leak), capture(10, leak), capture(20)},
			want:     []want{{cause: leak.Cause, state: Open, severity: "high", first: at(0), last: at(10), captures: 2, hasTrend: true, latest: capture(10).Path}},
		},
		{
			name:     "missed once between two that show it is still open",
			captures: []Capture{capture(0, leak), capture(10), capture(20, leak), capture(30)},
			want:     []want{{cause: leak.Cause, state: Open, severity: "high", first: at(0), last: at(20), captures: 2, hasTrend: true, latest: capture(20).Path}},
		},
		{
			name:     "a trigger's bundle without it resolves nothing",
			captures: []Capture{capture(0, leak), bundle(capture(10)), bundle(capture(20))},
			want:     []want{{cause: leak.Cause, state: Open, severity: "high", first: at(0), last: at(0), captures: 1, hasTrend: true, latest: capture(0).Path}},
		},
		{
			name:     "back after resolved is reopened",
			captures: []Capture{capture(0, leak), capture(10), capture(15), capture(20, leak)},
			want:     []want{{cause: leak.Cause, state: Reopened, severity: "high", first: at(0), last: at(20), captures: 2, hasTrend: true, latest: capture(20).Path}},
		},
		{
			name:     "gone only under a different load is not resolved",
			captures: []Capture{loaded(capture(0, leak), 100), loaded(capture(10), 500), loaded(capture(20), 40)},
			want:     []want{{cause: leak.Cause, state: Open, severity: "high", first: at(0), last: at(0), captures: 1, hasTrend: true, latest: capture(0).Path}},
		},
		{
			name:     "gone under load within a quarter is resolved",
			captures: []Capture{loaded(capture(0, leak), 100), loaded(capture(10), 80), loaded(capture(20), 110)},
			want:     []want{{cause: leak.Cause, state: Resolved, severity: "high", first: at(0), last: at(0), resolved: at(10), captures: 1, hasTrend: true, latest: capture(0).Path}},
		},
		{
			name:     "a capture with load and one without are not comparable",
			captures: []Capture{capture(0, leak), loaded(capture(10), 100)},
			want:     []want{{cause: leak.Cause, state: Open, severity: "high", first: at(0), last: at(0), captures: 1, hasTrend: true, latest: capture(0).Path}},
		},
		{
			name:     "a partial capture without it says nothing",
			captures: []Capture{capture(0, leak), partial(capture(10))},
			want:     []want{{cause: leak.Cause, state: Open, severity: "high", first: at(0), last: at(0), captures: 1, hasTrend: true, latest: capture(0).Path}},
		},
		{
			name:     "a partial capture showing it counts",
			captures: []Capture{capture(0, leak), partial(capture(10, leak))},
			want:     []want{{cause: leak.Cause, state: Open, severity: "high", first: at(0), last: at(10), captures: 2, hasTrend: true, latest: capture(10).Path}},
		},
		{
			name:     "info findings are not problems",
			captures: []Capture{capture(0, note), capture(10, note)},
			want:     nil,
		},
		{
			name:     "severity is the worst of the latest capture",
			captures: []Capture{capture(0, leak), capture(10, milder, worse)},
			want:     []want{{cause: leak.Cause, state: Open, severity: "medium", first: at(0), last: at(10), captures: 2, latest: capture(10).Path}},
		},
		{
			name:     "two causes are two problems, open before resolved, worst first",
			captures: []Capture{capture(0, hot, leak), capture(10, leak), capture(20, leak)},
			want: []want{
				{cause: leak.Cause, state: Open, severity: "high", first: at(0), last: at(20), captures: 3, hasTrend: true, latest: capture(20).Path},
				{cause: hot.Cause, state: Resolved, severity: "medium", first: at(0), last: at(0), resolved: at(10), captures: 1, latest: capture(0).Path},
			},
		},
		{
			name:     "a young growth in one capture waits for the next, held at low",
			captures: []Capture{capture(0, young)},
			want:     []want{{cause: leak.Cause, state: Open, severity: "low", first: at(0), last: at(0), captures: 1, hasTrend: true, latest: capture(0).Path, unconfirmed: true}},
		},
		{
			name:     "a young growth the next capture does not show stopped: resolved at once",
			captures: []Capture{capture(0, young), capture(10)},
			want:     []want{{cause: leak.Cause, state: Resolved, severity: "low", first: at(0), last: at(0), resolved: at(10), captures: 1, hasTrend: true, latest: capture(0).Path, unconfirmed: true}},
		},
		{
			name:     "a young growth the next capture shows again is the leak, at its severity",
			captures: []Capture{capture(0, young), capture(10, young)},
			want:     []want{{cause: leak.Cause, state: Open, severity: "high", first: at(0), last: at(10), captures: 2, hasTrend: true, latest: capture(10).Path}},
		},
		{
			name:     "a growth long under way is a leak from its first capture",
			captures: []Capture{capture(0, withEvidence(leak, map[string]float64{"slope_bytes_per_minute": 2 << 20, "growth_bytes": 1 << 20, "first_bytes": 64 << 20}))},
			want:     []want{{cause: leak.Cause, state: Open, severity: "high", first: at(0), last: at(0), captures: 1, hasTrend: true, latest: capture(0).Path}},
		},
		{
			name:     "a young growth under other load is not dismissed",
			captures: []Capture{loaded(capture(0, young), 100), loaded(capture(10), 1000)},
			want:     []want{{cause: leak.Cause, state: Open, severity: "low", first: at(0), last: at(0), captures: 1, hasTrend: true, latest: capture(0).Path, unconfirmed: true}},
		},
		{
			name:     "growth that stopped and came back is the leak",
			captures: []Capture{capture(0, young), capture(10), capture(20, young)},
			want:     []want{{cause: leak.Cause, state: Reopened, severity: "high", first: at(0), last: at(20), captures: 2, hasTrend: true, latest: capture(20).Path}},
		},
		{
			name:     "no captures, no problems",
			captures: nil,
			want:     nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Find("a", tc.captures)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems %+v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Target != "a" || g.Cause != w.cause || g.State != w.state || g.Severity != w.severity ||
					!g.FirstSeen.Equal(w.first) || !g.LastSeen.Equal(w.last) || !g.ResolvedAt.Equal(w.resolved) ||
					g.Captures != w.captures || (g.Trend != nil) != w.hasTrend || g.Latest != w.latest || g.Unconfirmed != w.unconfirmed {
					t.Errorf("problem %d:\n got %+v\nwant %+v", i, g, w)
				}
			}
		})
	}
}

func TestFind_growthThatStoppedSaysSo(t *testing.T) {
	got := Find("a", []Capture{capture(0, young), capture(10)})
	if len(got) != 1 || !strings.HasPrefix(got[0].Title, "growth that stopped") {
		t.Fatalf("got %+v, want the problem titled as growth that stopped", got)
	}
}

func TestYoung(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   map[string]float64
		want bool
	}{
		{"a site new in the window", map[string]float64{"growth_bytes": 4 << 20, "first_bytes": 0}, true},
		{"grew by half what it held", map[string]float64{"growth_bytes": 2 << 20, "first_bytes": 4 << 20}, true},
		{"grew by a tenth of what it held", map[string]float64{"growth_bytes": 1 << 20, "first_bytes": 10 << 20}, false},
		{"the live heap, young", map[string]float64{"live_growth_bytes": 6 << 20, "live_first_bytes": 3 << 20}, true},
		{"the live heap, long under way", map[string]float64{"live_growth_bytes": 1 << 20, "live_first_bytes": 300 << 20}, false},
		{"no start figure", map[string]float64{"growth_bytes": 4 << 20}, false},
		{"no growth", map[string]float64{"growth_bytes": 0, "first_bytes": 0}, false},
		{"no evidence", nil, false},
	} {
		if got := Young(tc.ev); got != tc.want {
			t.Errorf("%s: Young(%v) = %v, want %v", tc.name, tc.ev, got, tc.want)
		}
	}
}

func TestFind_causeOfAnOldFinding(t *testing.T) {
	old := Finding{Kind: "leak.inuse-growth", Severity: "high", Where: "cache.go:42"}
	got := Find("a", []Capture{capture(0, old), capture(10, old)})
	if len(got) != 1 || got[0].Captures != 2 || got[0].Cause == "" {
		t.Fatalf("got %+v, want one problem with a computed cause seen twice", got)
	}
}

func TestCauseOf(t *testing.T) {
	f := result.Finding{ID: "leak.inuse-growth", Function: "main.Process", File: "/src/cache.go", Line: 42}
	computed := CauseOf(f)
	if computed == "" || computed == f.ID {
		t.Errorf("CauseOf(no cause) = %q, want a key naming the site", computed)
	}
	f.Cause = "leak/unbounded-map at main.Process (cache.go:42)"
	if got := CauseOf(f); got != f.Cause {
		t.Errorf("CauseOf(with cause) = %q, want %q", got, f.Cause)
	}
}

func TestComparable(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b Capture
		want bool
	}{
		{"neither has load", capture(0), capture(1), true},
		{"one has load", capture(0), loaded(capture(1), 10), false},
		{"equal loads", loaded(capture(0), 10), loaded(capture(1), 10), true},
		{"a quarter apart", loaded(capture(0), 100), loaded(capture(1), 75), true},
		{"a third apart", loaded(capture(0), 150), loaded(capture(1), 100), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Comparable(tc.a, tc.b); got != tc.want {
				t.Errorf("Comparable = %v, want %v", got, tc.want)
			}
			if got := Comparable(tc.b, tc.a); got != tc.want {
				t.Errorf("Comparable reversed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTrendOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   map[string]float64
		want *Trend
	}{
		{"no rate", map[string]float64{"samples": 3}, nil},
		{"bytes per minute", map[string]float64{"slope_bytes_per_minute": 1024}, &Trend{PerMinute: 1024, Unit: "bytes"}},
		{"bytes per hour with hours to limit", map[string]float64{"slope_bytes_per_hour": 6000, "hours_to_limit": 2},
			&Trend{PerMinute: 100, Unit: "bytes", SecondsToLimit: 7200}},
		{"limit and last bytes", map[string]float64{"slope_bytes_per_minute": 100, "limit_bytes": 1100, "last_bytes": 100},
			&Trend{PerMinute: 100, Unit: "bytes", SecondsToLimit: 600}},
		{"goroutines", map[string]float64{"goroutines_per_minute": 3}, &Trend{PerMinute: 3, Unit: "goroutines"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TrendOf(tc.ev)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("TrendOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestProblem_Headline(t *testing.T) {
	p := Find("a", []Capture{capture(0, leak)})[0]
	p.Trend.SecondsToLimit = 3 * 3600
	got := p.Headline()
	want := "leak.inuse-growth at cache.go:42, +2.0 MiB/min, limit in 3.0 hours: inuse_space grows"
	if got != want {
		t.Errorf("Headline = %q, want %q", got, want)
	}
	// A site in the toolchain's or the module cache's files is named by
	// its package directory and file, as in a stack trace read by people.
	p.Where = "/usr/local/go/src/bufio/bufio.go:57"
	if got, want := p.Headline(), "leak.inuse-growth at bufio/bufio.go:57,"; !strings.HasPrefix(got, want) {
		t.Errorf("Headline = %q, want it to begin %q", got, want)
	}
}

// TestFind_unplacedLeakIsThePlacedOne: a leak a short window could not
// place (cause "leak", no site) and the same leak placed at its line by
// a longer one are one problem, at the line, from the first capture that
// showed either; the unplaced sign of it later neither opens another
// problem nor takes its site away.
func TestFind_unplacedLeakIsThePlacedOne(t *testing.T) {
	unplaced := Finding{Cause: "leak", Kind: "leak.live-growth", Severity: "high", Title: "the live heap grows; the sampled profiles cannot place it yet",
		Evidence: map[string]float64{"live_slope_bytes_per_minute": 1 << 20}}
	got := Find("a", []Capture{bundle(capture(0, unplaced)), capture(5, leak), capture(10, leak), bundle(capture(12, unplaced)), capture(15, leak)})
	if len(got) != 1 {
		t.Fatalf("%d problems %+v, want the leak once", len(got), got)
	}
	p := got[0]
	if p.Cause != leak.Cause || p.Where != leak.Where || p.State != Open || !p.FirstSeen.Equal(at(0)) || !p.LastSeen.Equal(at(15)) || p.Captures != 5 {
		t.Errorf("problem %+v: want the leak at %s, open, first seen at the unplaced sign, in 5 captures", p, leak.Where)
	}
	// Without a placed one, the unplaced leak is a problem of its own.
	if got := Find("a", []Capture{capture(0, unplaced), capture(5, unplaced)}); len(got) != 1 || got[0].Cause != "leak" || got[0].Captures != 2 {
		t.Errorf("unplaced alone: %+v, want one problem of cause leak", got)
	}
	// Between two placed ones, an unplaced sign goes to the one seen last.
	other := leak
	other.Cause, other.Where = "leak at main.Store (store.go:9)", "store.go:9"
	got = Find("a", []Capture{capture(0, leak), capture(5, other), capture(10, unplaced)})
	for _, p := range got {
		if want := map[string]int{leak.Cause: 1, other.Cause: 2}[p.Cause]; p.Captures != want {
			t.Errorf("%s in %d captures, want %d", p.Cause, p.Captures, want)
		}
	}
}
