package run

import (
	"context"
	"fmt"
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

// DiagnoseStored diagnoses a watched target over its stored runs since a
// time, as one long series: the heap profile at each run's end, oldest
// first, makes the heap series whose per-site growth the leak checks
// judge (days apart rather than seconds), and heap after GC over the runs
// gives the long-term growth finding with the time to the memory limit.
// target is a target's URL as history lists it, or any prefix of it that
// names one target, such as http://127.0.0.1:6060.
func DiagnoseStored(ctx context.Context, st *store.Store, target string, since time.Time, opts Diagnosis) (diagnose.Report, []error, error) {
	key, err := storedTarget(st, target)
	if err != nil {
		return diagnose.Report{}, nil, err
	}
	h, err := st.History(store.Query{Target: key, Since: since})
	if err != nil {
		return diagnose.Report{}, nil, err
	}
	var (
		paths []string
		limit float64
	)
	runs := h.Runs
	slices.Reverse(runs) // oldest first
	for _, e := range runs {
		dir := filepath.Join(st.Dir(), e.Path)
		res, err := rundir.Read(dir)
		if err != nil {
			continue
		}
		if p := lastHeapSnapshot(res.Profiles); p != "" {
			paths = append(paths, filepath.Join(dir, p))
		}
		if cg := res.RSS.Cgroup; cg != nil && cg.LimitBytes > 0 {
			limit = float64(cg.LimitBytes)
		}
	}
	if len(paths) == 0 {
		return diagnose.Report{}, nil, fmt.Errorf("no stored run of %s since %s has a heap profile", key, since.UTC().Format(time.RFC3339))
	}
	rep, warnings, err := DiagnosePaths(ctx, paths, opts)
	if err != nil {
		return diagnose.Report{}, nil, err
	}
	pts, err := st.Series(key, store.MetricHeapAfterGC, since, time.Time{})
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

// storedTarget finds the stored target a user names: exactly, or as the
// one target whose URL starts with it.
func storedTarget(st *store.Store, name string) (string, error) {
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
