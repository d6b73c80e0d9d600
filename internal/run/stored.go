package run

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/store"
)

// MaxStoredProfiles is how many stored runs' heap profiles DiagnoseStored
// reads at most, evenly spread over the range: a week of runs every 15
// minutes is 672, and the per-site slopes need a series, not every point.
const MaxStoredProfiles = 48

// DiagnoseStored diagnoses a watched target over its stored runs since a
// time, as one long series: the heap profile at the end of up to
// MaxStoredProfiles runs, spread over the range (onGrid) and oldest first, makes the heap
// series whose per-site growth the leak checks judge (hours or days apart
// rather than seconds), and heap after GC over every run gives the
// long-term growth finding with the time to the memory limit. Only the
// runs of the target's latest process count: cumulative allocations that
// went down between two runs mark a restart, and the series starts after
// it. target is a target's URL as history lists it, or any prefix of it
// that names one target, such as http://127.0.0.1:6060.
func DiagnoseStored(ctx context.Context, st store.Store, target string, since time.Time, opts Diagnosis) (diagnose.Report, []error, error) {
	key, err := storedTarget(st, target)
	if err != nil {
		return diagnose.Report{}, nil, err
	}
	h, err := st.History(store.Query{Target: key, Since: since})
	if err != nil {
		return diagnose.Report{}, nil, err
	}
	runs := onGrid(h.Runs, MaxStoredProfiles) // newest first
	var (
		paths      []string
		limit      float64
		newer      *result.Run
		notes      []string
		seriesFrom = since
	)
	for _, e := range runs {
		dir, err := st.RunDir(ctx, e)
		if err != nil {
			continue
		}
		res, err := rundir.Read(dir)
		if err != nil {
			continue
		}
		if newer != nil && res.MemStats.TotalAllocBytes > newer.MemStats.TotalAllocBytes {
			notes = append(notes, fmt.Sprintf("the target restarted between its runs of %s and %s (its cumulative allocations went down): the series starts after the restart",
				e.Time.UTC().Format(time.RFC3339), newer.Window.Start.UTC().Format(time.RFC3339)))
			seriesFrom = newer.Window.Start
			break
		}
		newer = res
		if p := lastHeapSnapshot(res.Profiles); p != "" {
			paths = append(paths, filepath.Join(dir, p))
		}
		if cg := res.RSS.Cgroup; cg != nil && cg.LimitBytes > 0 && limit == 0 {
			limit = float64(cg.LimitBytes)
		}
	}
	if limit == 0 {
		limit = opts.MemoryLimit
	}
	if len(paths) == 0 {
		return diagnose.Report{}, nil, fmt.Errorf("no stored run of %s since %s has a heap profile", key, since.UTC().Format(time.RFC3339))
	}
	slices.Reverse(paths) // oldest first
	rep, warnings, err := DiagnosePaths(ctx, paths, opts)
	if err != nil {
		return diagnose.Report{}, nil, err
	}
	if len(h.Runs) > len(runs) {
		notes = append(notes, fmt.Sprintf("per-site growth over the heap profiles of %d of the %d stored runs, spread over their span", len(runs), len(h.Runs)))
	}
	rep.Notes = append(rep.Notes, notes...)
	pts, err := st.Series(key, store.MetricHeapAfterGC, seriesFrom, time.Time{})
	if err != nil {
		return diagnose.Report{}, nil, err
	}
	series := make([]diagnose.LongTermPoint, len(pts))
	for i, p := range pts {
		series[i] = diagnose.LongTermPoint{Time: p.Time, Bytes: p.Value}
	}
	if f, ok := diagnose.LongTermGrowth(series, limit); ok {
		rep.Findings = append(rep.Findings, f)
		diagnose.Sort(rep.Findings)
	} else {
		runs := "runs"
		if len(series) == 1 {
			runs = "run"
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("heap after GC over %d stored %s (%s): no steady growth", len(series), runs, spanOf(pts)))
	}
	return rep, warnings, nil
}

// onGrid returns at most n of the entries (newest first, as History
// lists them), spread over their span: the oldest entry of each cell of
// a time grid aligned to the Unix epoch, the cells as wide as it takes
// for the span to touch at most n-1 of them, and the newest entry. The grid does not move
// as time passes, so the diagnosis that runs every hour over the last
// week picks the same runs as the hour before but for its two ends: a
// shared store's cache already holds them, where picks spread by count
// moved every hour and were downloaded afresh.
func onGrid(es []store.Entry, n int) []store.Entry {
	switch {
	case len(es) <= n || n < 2:
		return es[:min(len(es), max(n, 0))]
	case n < 4: // too few for a grid: the ends, and the middle
		picks := []store.Entry{es[0]}
		if n == 3 {
			picks = append(picks, es[len(es)/2])
		}
		return append(picks, es[len(es)-1])
	}
	span := es[0].Time.Sub(es[len(es)-1].Time)
	// Cells of a power of two seconds, wide enough that the span touches
	// at most n-1 of them: span/cell + 2 when its ends fall mid-cell.
	cell := time.Second
	for span/cell+2 > time.Duration(n-1) {
		cell *= 2
	}
	out := make([]store.Entry, 0, n)
	last := int64(math.MinInt64)
	for i := len(es) - 1; i >= 0; i-- { // oldest first
		if c := es[i].Time.UnixNano() / int64(cell); c != last {
			out, last = append(out, es[i]), c
		}
	}
	if newest := es[0]; out[len(out)-1].Path != newest.Path {
		out = append(out, newest)
	}
	slices.Reverse(out)
	return out
}

// storedTarget finds the stored target a user names: exactly, or as the
// one target whose URL starts with it.
func storedTarget(st store.Store, name string) (string, error) {
	keys, err := st.Targets()
	if err != nil {
		return "", err
	}
	var matches []string
	for _, k := range keys {
		if k == name {
			return k, nil
		}
		if strings.HasPrefix(k, name) {
			matches = append(matches, k)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", fmt.Errorf("the store has no target %s (it has %s)", name, strings.Join(keys, ", "))
	}
	return "", fmt.Errorf("%s names %d targets (%s): give one whole", name, len(matches), strings.Join(matches, ", "))
}

// lastHeapSnapshot is the path of a run's last heap snapshot.
func lastHeapSnapshot(ps []result.Profile) string {
	last := ""
	for _, p := range ps {
		if p.Kind == "heap" {
			last = p.Path
		}
	}
	return last
}

func spanOf(pts []store.Point) string {
	if len(pts) < 2 {
		return "too few to span any time"
	}
	return humanize.Hours(pts[len(pts)-1].Time.Sub(pts[0].Time).Hours())
}
