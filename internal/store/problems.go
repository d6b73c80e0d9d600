package store

import (
	"fmt"
	"time"

	"github.com/heapscope/heapscope/internal/problem"
)

// Problems returns the problems of the captures a query selects (its
// Target, Labels, Since and Until; not its Severities or Limit): every
// stored run and bundle is a capture, and each diagnosis over a target's
// series one more, which shows what it found but, finding only growth,
// resolves nothing. Problems come sorted as problem.Sort sorts them.
func Problems(s Store, q Query) ([]problem.Problem, error) {
	q.Severities, q.Limit = []string{"low", "medium", "high"}, 0
	h, err := s.History(q)
	if err != nil {
		return nil, fmt.Errorf("problems: %w", err)
	}
	var out []problem.Problem
	for target, cs := range Captures(h) {
		out = append(out, problem.Find(target, cs)...)
	}
	problem.Sort(out)
	if out == nil {
		out = []problem.Problem{}
	}
	return out, nil
}

// Captures turns a history into each target's captures: its runs and
// bundles, with the findings indexed with them, and one capture per
// diagnosis of its series (never complete: it lists only what it found).
func Captures(h History) map[string][]problem.Capture {
	type seriesKey struct {
		target string
		time   time.Time
	}
	out := map[string][]problem.Capture{}
	byPath := map[string]*problem.Capture{}
	add := func(target string, c problem.Capture) *problem.Capture {
		out[target] = append(out[target], c)
		return &out[target][len(out[target])-1]
	}
	for _, list := range [][]Entry{h.Runs, h.Bundles} {
		for _, e := range list {
			add(e.Target, problem.Capture{Time: e.Time, Path: e.Path, Complete: e.Status == "complete", Bundle: e.Kind == KindBundle,
				Load: e.LoadRate, HasLoad: e.LoadRate != 0})
		}
	}
	// Pointers into the slices are taken once they stop growing.
	for _, cs := range out {
		for i := range cs {
			byPath[cs[i].Path] = &cs[i]
		}
	}
	series := map[seriesKey][]problem.Finding{}
	for _, f := range h.Findings {
		pf := problem.Finding{Cause: f.Cause, Kind: f.Kind, Severity: f.Severity, Title: f.Title, Where: f.Where, Evidence: f.Evidence}
		if f.Source == SourceSeries {
			k := seriesKey{f.Target, f.Time}
			series[k] = append(series[k], pf)
			continue
		}
		if c, ok := byPath[f.Path]; ok {
			c.Findings = append(c.Findings, pf)
		}
	}
	for k, fs := range series {
		out[k.target] = append(out[k.target], problem.Capture{Time: k.time, Findings: fs})
	}
	return out
}
