package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/store"
)

// DefaultMaxRangeRuns bounds the runs a merge or a side of a diff reads.
const DefaultMaxRangeRuns = 2000

// windowSlack is how long before a range a run's window may start and
// still end in it: longer than any window watch takes in practice.
const windowSlack = time.Hour

// selection is what picks a range's runs: one target, or every target
// whose runs carry the labels, or both.
type selection struct {
	target string
	labels map[string]string
}

// selectionOf reads target and label=name=value parameters; one of them
// is required.
func selectionOf(q url.Values) (selection, error) {
	labels, err := labelParams(q)
	if err != nil {
		return selection{}, err
	}
	sel := selection{target: q.Get("target"), labels: labels}
	if sel.target == "" && len(labels) == 0 {
		return selection{}, badRequest("give target, or label=name=value to take the runs of every target that carries it")
	}
	return sel, nil
}

func (sel selection) String() string {
	if sel.target != "" {
		return sel.target
	}
	var parts []string
	for k, v := range sel.labels {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return "the targets labelled " + strings.Join(parts, ",")
}

// rangeRuns lists the runs a selection picks whose windows end in
// [from, to) — a run is where its series' points are, at its window's
// end — oldest first, within the limit.
func (s *Server) rangeRuns(sel selection, from, to time.Time) ([]store.Entry, error) {
	max := s.opts.Limits.MaxRangeRuns
	h, err := s.opts.Store.History(store.Query{Target: sel.target, Labels: sel.labels, Since: from.Add(-windowSlack), Until: to, Limit: 2*max + 1})
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
		return nil, notFound("no run of %s from %s to %s", sel, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	case len(runs) > max || len(h.Runs) > 2*max:
		return nil, &requestError{http.StatusUnprocessableEntity,
			fmt.Errorf("more than %d runs of %s from %s to %s: ask for a shorter range", max, sel, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))}
	}
	return runs, nil
}

// diffOf compares the runs of two ranges of a target (base_from/base_to
// against from/to) as heapscope compare compares run directories: the
// figures and the allocation sites with their significance tests, and
// the differential flame graph of the allocations.
func (s *Server) diffOf(ctx context.Context, q url.Values) (report.Comparison, error) {
	sel, err := selectionOf(q)
	if err != nil {
		return report.Comparison{}, err
	}
	tctx, cancel := context.WithTimeout(ctx, s.opts.Limits.MergeTimeout)
	defer cancel()
	release, err := s.acquire(tctx)
	if err != nil {
		return report.Comparison{}, err
	}
	defer release()
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
		runs, err := s.rangeRuns(sel, from, to)
		if err != nil {
			return report.Comparison{}, err
		}
		if len(runs) > MaxDiffRuns {
			return report.Comparison{}, &requestError{http.StatusUnprocessableEntity,
				fmt.Errorf("%d runs from %s to %s, more than the %d a side of a diff reads: ask for a shorter range", len(runs), from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), MaxDiffRuns)}
		}
		dirs := make([]string, len(runs))
		for k, e := range runs {
			if dirs[k], err = s.opts.Store.RunDir(ctx, e); err != nil {
				return report.Comparison{}, err
			}
		}
		if sides[i], _, err = compare.ReadSide(dirs); err != nil {
			return report.Comparison{}, err
		}
		// Name the runs by their paths in the store, not on this machine.
		for k := range sides[i].Samples {
			sides[i].Samples[k].Label = strings.TrimPrefix(sides[i].Samples[k].Label, s.opts.Store.RunRoot()+"/")
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

// diff answers the comparison as JSON, as heapscope compare --format json,
// or, with format=folded, the data of a differential flame graph.
func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	switch f := r.URL.Query().Get("format"); f {
	case "folded":
		s.diffFolded(w, r)
		return
	case "", "json":
	default:
		s.fail(w, r, badRequest("format=%q: want json or folded", f))
		return
	}
	doc, err := s.diffOf(r.Context(), r.URL.Query())
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
	doc, err := s.diffOf(r.Context(), r.URL.Query())
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := report.Write(w, report.FormatHTML, doc); err != nil {
		s.log.Error("server", "path", r.URL.Path, "err", err)
	}
}

// diffFolded answers the allocations of the two ranges, each merged, as
// folded stacks side by side — "root;…;leaf before after", alloc_space in
// bytes, a line for each stack of either — what Brendan Gregg's
// difffolded.pl writes, and flamegraph.pl draws as a differential flame
// graph.
func (s *Server) diffFolded(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var sides [2]map[string]int64
	for i, names := range [2][2]string{{"base_from", "base_to"}, {"from", "to"}} {
		rq := url.Values{}
		for k, v := range q {
			rq[k] = v
		}
		for j, n := range names {
			if q.Get(n) == "" {
				s.fail(w, r, badRequest("give %s: the diff compares base_from–base_to with from–to", n))
				return
			}
			rq.Set([]string{"from", "to"}[j], q.Get(n))
		}
		rq.Set("type", "allocs")
		m, err := s.mergeRange(r.Context(), rq)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		idx, err := m.m.SampleIndex("alloc_space")
		if err != nil {
			s.fail(w, r, &requestError{http.StatusUnprocessableEntity, err})
			return
		}
		var buf bytes.Buffer
		if err := m.m.WriteFolded(&buf, idx); err != nil {
			s.fail(w, r, err)
			return
		}
		sides[i] = map[string]int64{}
		for line := range strings.Lines(buf.String()) {
			stack, n, ok := cutFolded(strings.TrimSuffix(line, "\n"))
			if ok {
				sides[i][stack] += n
			}
		}
	}
	stacks := slices.Sorted(maps.Keys(sides[0]))
	for k := range sides[1] {
		if _, ok := sides[0][k]; !ok {
			stacks = append(stacks, k)
		}
	}
	slices.Sort(stacks)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	bw := bufio.NewWriter(w)
	for _, k := range stacks {
		fmt.Fprintf(bw, "%s %d %d\n", k, sides[0][k], sides[1][k])
	}
	bw.Flush()
}

// cutFolded splits a folded line into its stack and its value.
func cutFolded(line string) (string, int64, bool) {
	i := strings.LastIndexByte(line, ' ')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(line[i+1:], 10, 64)
	return line[:i], n, err == nil
}
