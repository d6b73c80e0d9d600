package server

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/store"
)

// problemLink is the page of a target's problem over a range.
func problemLink(target, cause string, from, to time.Time) string {
	return "/problem?target=" + url.QueryEscape(target) + "&cause=" + url.QueryEscape(cause) +
		"&from=" + url.QueryEscape(from.UTC().Format(time.RFC3339)) + "&to=" + url.QueryEscape(to.UTC().Format(time.RFC3339))
}

// problemCapture is one capture of a target on a problem's page: whether
// it showed the problem.
type problemCapture struct {
	When, Kind, Status, Path, Link string
	// Shows is "shows it", "clear" (a complete capture without it) or
	// "says nothing" (a partial one).
	Shows string
}

// problemView is what the problem page shows.
type problemView struct {
	Title, Key, TargetLink, Headline string
	Problem                          problem.Problem
	FirstSeen, LastSeen, Resolved    string
	// Line is the service's line the problem names, and its function.
	Line, Function string
	// Fix is the latest capture's fix; Finding its whole finding, when
	// its result could be read.
	Fix      string
	Finding  *result.Finding
	Evidence []string
	Symptoms []string
	// FindingTitle is the latest capture's finding's title in full, with
	// every figure and site: the headline gives its gist.
	FindingTitle string
	// Healthy is the last capture before the latest that showed the
	// problem, complete and without it; Diff compares it with that one.
	Healthy  *problemCapture
	DiffLink string
	Captures []problemCapture
}

// problemPage serves /problem?target=KEY&cause=CAUSE: one problem of a
// target over a range (from, to; the last day by default) — its headline,
// the service's line and the fix, its evidence folded, every capture of
// the range and whether it showed the problem, and a comparison of the
// latest run that showed it against the last healthy one.
func (s *Server) problemPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key, cause := q.Get("target"), q.Get("cause")
	if key == "" || cause == "" {
		s.failPage(w, r, badRequest("give target and cause: a problem as a target page links it"))
		return
	}
	from, to, err := s.timeRange(q)
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	h, err := s.opts.Store.History(store.Query{Target: key, Since: from, Until: to, Severities: []string{"low", "medium", "high"}, Limit: s.opts.Limits.MaxEntries})
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	captures := store.Captures(h)[key]
	ps := problem.Find(key, captures)
	i := slices.IndexFunc(ps, func(p problem.Problem) bool { return p.Cause == cause })
	if i < 0 {
		// A link to a problem told before its site was known: the
		// problem its family was placed into since.
		i = slices.IndexFunc(ps, func(p problem.Problem) bool { return problem.Family(p.Cause) == cause })
	}
	if i < 0 {
		s.failPage(w, r, notFound("target %s has no problem %q from %s to %s", key, cause, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339)))
		return
	}
	p := ps[i]
	v := problemView{Title: "Problem of " + key, Key: key, TargetLink: targetLink(key), Headline: p.Headline(), Problem: p,
		FirstSeen: when(p.FirstSeen), LastSeen: when(p.LastSeen), Line: p.Where}
	if !p.ResolvedAt.IsZero() {
		v.Resolved = when(p.ResolvedAt)
	}
	v.FindingTitle = strings.Join(strings.Fields(p.Title), " ")
	for _, name := range slices.Sorted(maps.Keys(p.Evidence)) {
		v.Evidence = append(v.Evidence, name+" "+report.EvidenceValue(name, p.Evidence[name]))
	}
	if f, err := s.findingOf(r, p); err != nil {
		s.log.Warn("problem page: reading the latest capture", "path", p.Latest, "err", err)
	} else if f != nil {
		v.Finding, v.Fix = f, f.Fix
		if f.File != "" {
			v.Line = humanize.Location(f.File, f.Line)
		}
		v.Function = f.Function
		for _, sym := range f.Symptoms {
			v.Symptoms = append(v.Symptoms, symptomLine(sym))
		}
	}
	v.Captures, v.Healthy, v.DiffLink = s.problemTimeline(h, captures, p)
	s.render(w, r, "problem.html", v)
}

// findingOf reads the finding of the problem's cause from its latest
// capture's result: nil when the capture is not a stored run (a
// diagnosis of a series) or no longer names it.
func (s *Server) findingOf(r *http.Request, p problem.Problem) (*result.Finding, error) {
	if p.Latest == "" {
		return nil, nil
	}
	e, ok, err := s.opts.Store.EntryAt(p.Latest)
	if err != nil || !ok {
		return nil, err
	}
	dir, err := s.opts.Store.RunDir(r.Context(), e)
	if err != nil {
		return nil, err
	}
	res, err := rundir.Read(dir)
	if err != nil {
		return nil, err
	}
	for i, f := range res.Findings {
		if sameCause(problem.CauseOf(f), p.Cause) {
			return &res.Findings[i], nil
		}
	}
	return nil, nil
}

// problemTimeline lists a target's captures newest first, each with
// whether it showed the problem; the last healthy run before the latest
// run that showed it; and the link comparing those two runs, empty when
// either is missing.
func (s *Server) problemTimeline(h store.History, captures []problem.Capture, p problem.Problem) ([]problemCapture, *problemCapture, string) {
	entries := map[string]store.Entry{}
	for _, e := range slices.Concat(h.Runs, h.Bundles) {
		entries[e.Path] = e
	}
	cs := slices.Clone(captures)
	slices.SortStableFunc(cs, func(a, b problem.Capture) int { return a.Time.Compare(b.Time) })
	var rows []problemCapture
	var sick, healthy *store.Entry
	for _, c := range cs {
		shows := slices.ContainsFunc(c.Findings, func(f problem.Finding) bool {
			return problem.Rank(f.Severity) > 0 && sameCause(f.Key(), p.Cause)
		})
		e, stored := entries[c.Path]
		if !stored {
			if shows {
				rows = append(rows, problemCapture{When: when(c.Time), Kind: "series", Shows: "shows it"})
			}
			continue
		}
		row := problemCapture{When: when(c.Time), Kind: string(e.Kind), Status: e.Status, Path: e.Path, Link: runLink(e.Path)}
		switch {
		case shows:
			row.Shows = "shows it"
			if e.Kind == store.KindRun {
				sick = &e
			}
		case c.Complete:
			row.Shows = "clear"
			if e.Kind == store.KindRun && sick == nil {
				healthy = &e
			}
		default:
			row.Shows = "says nothing"
		}
		rows = append(rows, row)
	}
	slices.Reverse(rows)
	if healthy == nil {
		return rows, nil, ""
	}
	h0 := rowOf(*healthy)
	hc := &problemCapture{When: h0.When, Kind: h0.Kind, Status: h0.Status, Path: h0.Path, Link: h0.Link, Shows: "clear"}
	if sick == nil {
		return rows, hc, ""
	}
	// A range of a nanosecond at each run's window end picks that run.
	at := func(e *store.Entry) (string, string) {
		return url.QueryEscape(e.End.UTC().Format(time.RFC3339Nano)), url.QueryEscape(e.End.Add(time.Nanosecond).UTC().Format(time.RFC3339Nano))
	}
	bf, bt := at(healthy)
	sf, st := at(sick)
	return rows, hc, fmt.Sprintf("/compare?target=%s&base_from=%s&base_to=%s&from=%s&to=%s", url.QueryEscape(p.Target), bf, bt, sf, st)
}

// sameCause says whether a finding of cause key is a sign of the problem
// of cause: the same key, or one without a site of the family the
// problem was placed in (problem.Find gives it those).
func sameCause(key, cause string) bool {
	return key == cause || key == problem.Family(key) && key == problem.Family(cause)
}

// symptomLine is one symptom of a finding in a line.
func symptomLine(sym result.Symptom) string {
	var b strings.Builder
	b.WriteString(sym.Severity + " " + sym.ID)
	if sym.File != "" {
		b.WriteString(" at " + humanize.Location(sym.File, sym.Line))
	}
	b.WriteString(": " + strings.Join(strings.Fields(sym.Title), " "))
	return b.String()
}
