package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/run"
	"github.com/heapscope/heapscope/internal/store"
)

// DefaultMaxRangeRuns bounds the runs a merge or a side of a diff reads.
const DefaultMaxRangeRuns = 2000

// windowSlack is how long before a range a run's window may start and
// still end in it: longer than any window watch takes in practice.
const windowSlack = time.Hour

// rangeRuns lists a target's runs whose windows end in [from, to) — a
// run is where its series' points are, at its window's end — oldest
// first, within the limit.
func (s *Server) rangeRuns(target string, from, to time.Time) ([]store.Entry, error) {
	max := s.opts.Limits.MaxRangeRuns
	h, err := s.opts.Store.History(store.Query{Target: target, Since: from.Add(-windowSlack), Until: to, Limit: 2*max + 1})
	if err != nil {
		return nil, err
	}
	var runs []store.Entry
	for i := len(h.Runs) - 1; i >= 0; i-- {
		if e := h.Runs[i]; !e.End.Before(from) && e.End.Before(to) {
			runs = append(runs, e)
		}
	}
	switch {
	case len(runs) == 0:
		return nil, notFound("no run of %s from %s to %s", target, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	case len(runs) > max || len(h.Runs) > 2*max:
		return nil, &requestError{http.StatusUnprocessableEntity,
			fmt.Errorf("more than %d runs of %s from %s to %s: ask for a shorter range", max, target, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))}
	}
	return runs, nil
}

// diffOf compares the runs of two ranges of a target (base_from/base_to
// against from/to) as heapscope compare compares run directories: the
// figures and the allocation sites with their significance tests, and
// the differential flame graph of the allocations.
func (s *Server) diffOf(q url.Values) (report.Comparison, error) {
	target := q.Get("target")
	if target == "" {
		return report.Comparison{}, badRequest("give target, and the two ranges: base_from, base_to, from, to")
	}
	var sides [2]compare.Side
	for i, names := range [2][2]string{{"base_from", "base_to"}, {"from", "to"}} {
		rq := url.Values{}
		for j, n := range names {
			v := q.Get(n)
			if v == "" {
				return report.Comparison{}, badRequest("give %s: the diff compares base_from–base_to with from–to", n)
			}
			rq.Set([]string{"from", "to"}[j], v)
		}
		from, to, err := s.timeRange(rq)
		if err != nil {
			return report.Comparison{}, err
		}
		runs, err := s.rangeRuns(target, from, to)
		if err != nil {
			return report.Comparison{}, err
		}
		dirs := make([]string, len(runs))
		for k, e := range runs {
			dirs[k] = s.opts.Store.Dir() + "/" + e.Path
		}
		if sides[i], _, err = run.ReadSide(dirs); err != nil {
			return report.Comparison{}, err
		}
		// Name the runs by their paths in the store, not on this machine.
		for k := range sides[i].Samples {
			sides[i].Samples[k].Label = strings.TrimPrefix(sides[i].Samples[k].Label, s.opts.Store.Dir()+"/")
		}
		sides[i].Label = from.UTC().Format(time.RFC3339) + " – " + to.UTC().Format(time.RFC3339)
	}
	c, err := compare.Compare(sides[0], sides[1], compare.Options{})
	if err != nil {
		return report.Comparison{}, &requestError{http.StatusUnprocessableEntity, err}
	}
	doc := report.Comparison{Comparison: c}
	if doc.Flame, err = compare.Flame(sides[0], sides[1], c); err != nil {
		return report.Comparison{}, err
	}
	return doc, nil
}

// diff answers the comparison as JSON, as heapscope compare --format json.
func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	doc, err := s.diffOf(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := report.Write(w, report.FormatJSON, doc); err != nil {
		s.log.Error("server", "path", r.URL.Path, "err", err)
	}
}

// comparePage draws the comparison as heapscope compare's HTML page: the
// tables, and the differential flame graph, whose script is inline, so
// the page carries view's policy.
func (s *Server) comparePage(w http.ResponseWriter, r *http.Request) {
	doc, err := s.diffOf(r.URL.Query())
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := report.Write(w, report.FormatHTML, doc); err != nil {
		s.log.Error("server", "path", r.URL.Path, "err", err)
	}
}
