// Package problem turns a target's captures into problems: the findings
// of successive captures that share a cause key (diagnose.CauseKey: the
// finding's kind, the catalogue entry that explains it, the line it
// names) are one problem, with a state, the span it was seen over, how
// many captures showed it, its trend and its latest evidence.
//
// The steps of Find, over one target's captures in time order:
//  1. every finding above info gets its cause key (computed with
//     diagnose.CauseKey when the capture predates keys);
//  2. a capture showing a cause opens its problem, or reopens it when it
//     was resolved; it becomes the problem's latest capture;
//  3. ClearToResolve complete scheduled captures in a row, under load
//     comparable to the problem's latest capture (see Comparable), that
//     do not show the cause resolve it, dated at the first of them; a
//     partial capture, a bundle, or one under other load says nothing;
//  4. each problem takes its severity, title, site and evidence from the
//     latest capture that showed it, and its trend from that evidence;
//  5. a memory growth that began about when its only capture did (see
//     Young) is Unconfirmed, held at low, until a second capture shows it
//     again; the next comparable capture that does not show it resolves
//     it as growth that stopped: a process filling its caches after a
//     start and one leaking from it look alike in one window.
//
// The package is pure: captures in, problems out.
package problem

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/result"
)

// State is a problem's state.
type State string

// The states of a problem.
const (
	// Open is a problem the latest comparable captures still show.
	Open State = "open"
	// Resolved is a problem a later complete capture under comparable
	// load no longer shows.
	Resolved State = "resolved"
	// Reopened is a problem that was resolved and is shown again.
	Reopened State = "reopened"
)

// Active reports whether the problem is still there: open or reopened.
func (s State) Active() bool { return s == Open || s == Reopened }

// ParseState reads a state name: open, resolved or reopened.
func ParseState(name string) (State, bool) {
	switch s := State(name); s {
	case Open, Resolved, Reopened:
		return s, true
	}
	return "", false
}

// Finding is one finding of a capture, as much of it as a problem needs.
type Finding struct {
	// Cause is the cause key; empty, Find computes it from Kind and
	// the site with CauseOf (a finding stored before keys existed).
	Cause string
	// Kind is the finding's id (leak.inuse-growth).
	Kind     string
	Severity string
	Title    string
	// Where is the site: file:line, or the function when no file is known.
	Where    string
	Evidence map[string]float64
}

// Key is the finding's cause key: its Cause, or the one CauseOf gives
// its kind and site when it has none.
func (f Finding) Key() string {
	if f.Cause != "" {
		return f.Cause
	}
	return CauseOf(result.Finding{ID: f.Kind, Function: f.Where})
}

// CauseOf returns a result.json finding's cause key: the one it carries,
// or, for a run written before findings carried one, the key
// diagnose.CauseKey gives it.
func CauseOf(f result.Finding) string {
	if f.Cause != "" {
		return f.Cause
	}
	return diagnose.CauseKey(f)
}

// Capture is one capture of a target, in the terms problems need.
type Capture struct {
	Time time.Time
	// Path names the capture (its run directory in the store).
	Path string
	// Complete is true for a capture that collected everything; a partial
	// capture's missing finding says nothing.
	Complete bool
	// Bundle marks a trigger's bundle: a short window at a moment of
	// stress, which shows problems but whose missing finding resolves
	// none.
	Bundle bool
	// Load is the rate of requests driven during the capture, when
	// HasLoad; a capture of a service under its own traffic has none.
	Load    float64
	HasLoad bool
	// Findings are the capture's findings; info findings are ignored.
	Findings []Finding
}

// ClearToResolve is how many comparable captures in a row must not show
// a problem for it to be resolved: one capture's short window can miss
// a leak that the next one finds again.
const ClearToResolve = 2

// LoadTolerance is how far apart two loads may be and still be
// comparable: a fraction of the larger.
const LoadTolerance = 0.25

// Comparable reports whether the absence of a finding in capture b says
// anything about a capture a that showed it: both captures have no load
// figure (the service under its own traffic), or both have one and they
// differ by at most LoadTolerance of the larger. A capture with a load
// figure and one without are not comparable.
func Comparable(a, b Capture) bool {
	if a.HasLoad != b.HasLoad {
		return false
	}
	if !a.HasLoad {
		return true
	}
	hi := math.Max(math.Abs(a.Load), math.Abs(b.Load))
	return math.Abs(a.Load-b.Load) <= LoadTolerance*hi
}

// Trend is how fast a problem grows, from its latest evidence.
type Trend struct {
	// PerMinute is the growth per minute, in Unit.
	PerMinute float64 `json:"per_minute"`
	// Unit is bytes or goroutines.
	Unit string `json:"unit"`
	// SecondsToLimit is the time left before the memory limit at this
	// rate, when the limit is known.
	SecondsToLimit float64 `json:"seconds_to_limit,omitempty"`
}

// Problem is one cause seen in a target's captures.
type Problem struct {
	Target string `json:"target"`
	// Cause is the cause key the captures share.
	Cause string `json:"cause"`
	State State  `json:"state"`
	// Severity is the worst severity of the latest capture's findings
	// of this cause.
	Severity string `json:"severity"`
	// Kind, Title and Where are the latest capture's finding's.
	Kind  string `json:"kind"`
	Title string `json:"title"`
	Where string `json:"where,omitempty"`
	// FirstSeen and LastSeen are the times of the first and the latest
	// capture that showed it.
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// ResolvedAt is the time of the capture that resolved it, when
	// resolved.
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	// Captures counts the captures that showed it.
	Captures int `json:"captures"`
	// Trend is its growth, when its evidence has a rate.
	Trend *Trend `json:"trend,omitempty"`
	// Evidence is the latest capture's evidence.
	Evidence map[string]float64 `json:"evidence,omitempty"`
	// Latest is the path of the latest capture that showed it.
	Latest string `json:"latest,omitempty"`
	// Unconfirmed marks a memory growth that only one capture showed and
	// that began about when that capture did (Young): warm-up and a
	// young leak look alike until the next capture. Its Severity is held
	// at low (the finding's own is in Title's capture) until a second
	// capture shows it; a resolved unconfirmed problem is growth that
	// stopped.
	Unconfirmed bool `json:"unconfirmed,omitempty"`
}

// StateText is the state as people read it: the state, and for an
// unconfirmed problem what it waits for ("open, unconfirmed") or what it
// turned out to be ("resolved, growth stopped").
func (p Problem) StateText() string {
	switch {
	case p.Unconfirmed && p.State.Active():
		return string(p.State) + ", unconfirmed"
	case p.Unconfirmed:
		return string(p.State) + ", growth stopped"
	}
	return string(p.State)
}

// Rank orders severities: info 0, low 1, medium 2, high 3 (an unknown
// name is info).
func Rank(severity string) int {
	s, _ := diagnose.ParseSeverity(severity)
	return int(s)
}

// tracked is a problem being built, with the latest capture that showed
// it and the comparable captures since that did not (clear, the first
// one's time).
type tracked struct {
	Problem
	latest     Capture
	clear      int
	clearSince time.Time
}

// Find returns the problems of a target's captures (in any order: Find
// sorts them by time), active ones first, then by severity (worst
// first), then the most recently seen first.
func Find(target string, captures []Capture) []Problem {
	cs := slices.Clone(captures)
	slices.SortStableFunc(cs, func(a, b Capture) int { return a.Time.Compare(b.Time) })
	byCause := map[string]*tracked{}
	var order []string
	for _, c := range cs {
		shown := map[string][]Finding{}
		for _, f := range c.Findings {
			if Rank(f.Severity) == 0 {
				continue
			}
			key := f.Key()
			shown[key] = append(shown[key], f)
		}
		shown = place(shown, byCause)
		for _, key := range slices.Sorted(maps.Keys(shown)) {
			fs := shown[key]
			p, ok := byCause[key]
			if unplaced, found := byCause[Family(key)]; !ok && found && Family(key) != key && unplaced.State.Active() {
				// The site of a problem seen so far without one: the
				// same cause, now placed.
				delete(byCause, unplaced.Cause)
				order[slices.Index(order, unplaced.Cause)] = key
				unplaced.Cause, p, ok = key, unplaced, true
				byCause[key] = p
			}
			if !ok {
				p = &tracked{Problem: Problem{Target: target, Cause: key, State: Open, FirstSeen: c.Time}}
				byCause[key] = p
				order = append(order, key)
			} else if p.State == Resolved {
				p.State, p.ResolvedAt = Reopened, time.Time{}
			}
			p.Captures++
			p.LastSeen, p.latest, p.clear = c.Time, c, 0
			if p.Where != "" && !slices.ContainsFunc(fs, func(f Finding) bool { return Family(f.Key()) != f.Key() }) {
				continue // unplaced signs of a placed problem keep its site
			}
			p.describe(fs, c.Path)
		}
		if !c.Complete || c.Bundle {
			continue
		}
		for _, key := range order {
			p := byCause[key]
			if _, ok := shown[key]; ok || !p.State.Active() || !Comparable(p.latest, c) {
				continue
			}
			if p.clear++; p.clear == 1 {
				p.clearSince = c.Time
			}
			if p.clear >= ClearToResolve || p.Unconfirmed {
				p.State, p.ResolvedAt = Resolved, p.clearSince
			}
			if p.Unconfirmed {
				p.Title = "growth that stopped (the next capture did not show it): " + p.Title
			}
		}
	}
	out := make([]Problem, 0, len(order))
	for _, key := range order {
		out = append(out, byCause[key].Problem)
	}
	Sort(out)
	return out
}

// Family is a cause key's kind and catalogue entry, without its site:
// "leak" of "leak at main.Process (cache.go:42)". A key without a site is
// its own family: a problem seen so far without a site, which Find gives
// the site of the first placed problem of its family.
func Family(key string) string {
	f, _, _ := strings.Cut(key, " at ")
	return f
}

// place gives the findings of a capture that name no site (a leak the
// sampled profiles of one short window could not place) to the problem
// of their family that has one: the one the capture also shows, else the
// active one seen last. Findings with a site, or of a family with no
// placed problem, stay under their own key.
func place(shown map[string][]Finding, byCause map[string]*tracked) map[string][]Finding {
	for key, fs := range shown {
		if Family(key) != key {
			continue
		}
		var to string
		for k := range shown {
			if k != key && Family(k) == key && (to == "" || k < to) {
				to = k
			}
		}
		if to == "" {
			var last time.Time
			for k, p := range byCause {
				if k != key && Family(k) == key && p.State.Active() && p.LastSeen.After(last) {
					to, last = k, p.LastSeen
				}
			}
		}
		if to != "" {
			delete(shown, key)
			if _, both := shown[to]; !both {
				shown[to] = fs
			}
		}
	}
	return shown
}

// Sort orders problems: active ones first, then by severity (worst
// first), then the most recently seen first, then by target and cause.
func Sort(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if a.State.Active() != b.State.Active() {
			if a.State.Active() {
				return -1
			}
			return 1
		}
		return cmp.Or(
			cmp.Compare(Rank(b.Severity), Rank(a.Severity)),
			b.LastSeen.Compare(a.LastSeen),
			strings.Compare(a.Target, b.Target),
			strings.Compare(a.Cause, b.Cause))
	})
}

// describe takes the problem's latest figures from the findings of its
// cause in one capture: the worst of them leads.
func (p *tracked) describe(fs []Finding, path string) {
	worst := fs[0]
	for _, f := range fs[1:] {
		if Rank(f.Severity) > Rank(worst.Severity) {
			worst = f
		}
	}
	p.Severity, p.Kind, p.Title, p.Where = worst.Severity, worst.Kind, worst.Title, worst.Where
	p.Evidence, p.Latest = worst.Evidence, path
	p.Trend = TrendOf(worst.Evidence)
	p.Unconfirmed = p.Captures == 1 && path != "" && Young(worst.Evidence)
	if p.Unconfirmed && Rank(p.Severity) > Rank("low") {
		p.Severity = "low"
	}
}

// Young reports whether a finding's evidence is of a memory growth that
// began about when its window did: it grew in the window by half or more
// of what it held at the window's start (growth_bytes and first_bytes,
// or their live_ twins). At a steady rate r over an age A, the start
// holds r·A and the window of length W adds r·W: half or more means A ≤
// 2W, a site or a heap younger than two windows. A process filling its
// caches after a start is such a growth, and so is a leak from it; one
// capture cannot tell them apart, the next one can.
func Young(ev map[string]float64) bool {
	for _, k := range [][2]string{{"growth_bytes", "first_bytes"}, {"live_growth_bytes", "live_first_bytes"}} {
		first, ok := ev[k[1]]
		if growth := ev[k[0]]; ok && growth > 0 {
			return growth >= first/2
		}
	}
	return false
}

// TrendOf reads a growth rate from a finding's evidence: bytes per
// minute (slope_bytes_per_minute, live_slope_bytes_per_minute, or
// slope_bytes_per_hour), or goroutines per minute; and the time to the
// limit, from hours_to_limit or from limit_bytes, last_bytes and the
// rate. nil when the evidence holds no positive rate.
func TrendOf(ev map[string]float64) *Trend {
	var t Trend
	switch {
	case ev["slope_bytes_per_minute"] > 0:
		t = Trend{PerMinute: ev["slope_bytes_per_minute"], Unit: "bytes"}
	case ev["live_slope_bytes_per_minute"] > 0:
		t = Trend{PerMinute: ev["live_slope_bytes_per_minute"], Unit: "bytes"}
	case ev["slope_bytes_per_hour"] > 0:
		t = Trend{PerMinute: ev["slope_bytes_per_hour"] / 60, Unit: "bytes"}
	case ev["goroutines_per_minute"] > 0:
		t = Trend{PerMinute: ev["goroutines_per_minute"], Unit: "goroutines"}
	default:
		return nil
	}
	switch {
	case ev["hours_to_limit"] > 0:
		t.SecondsToLimit = ev["hours_to_limit"] * 3600
	case t.Unit == "bytes" && ev["limit_bytes"] > ev["last_bytes"] && ev["last_bytes"] > 0:
		t.SecondsToLimit = (ev["limit_bytes"] - ev["last_bytes"]) / t.PerMinute * 60
	}
	return &t
}
