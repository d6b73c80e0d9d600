package watch

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/store"
)

// knownSpan is how far back a bundle looks for the causes the target's
// captures found.
const knownSpan = 7 * 24 * time.Hour

// knownFindings are the causes the target's stored captures hold open, of
// medium severity or above, each as the latest capture that showed it
// found it (with its fix and symptoms), its title saying since when and
// in how many captures: a trigger's bundle leads with them. Nothing when
// the history cannot be read; a cause whose capture cannot be read is
// given from the index alone.
func (w *Watcher) knownFindings(ctx context.Context, key string, at time.Time) []result.Finding {
	q := store.Query{Target: key, Since: at.Add(-knownSpan), Until: at}
	ps, err := store.Problems(w.opts.Store, q)
	if err != nil {
		w.log.Debug("a bundle's history", "target", key, "err", err)
		return nil
	}
	var h store.History
	haveHistory := false
	var known []result.Finding
	for _, p := range ps {
		if p.State == problem.Resolved || problem.Rank(p.Severity) < problem.Rank("medium") {
			continue
		}
		if !haveHistory {
			h, _ = w.opts.Store.History(q)
			haveHistory = true
		}
		f := w.latestFinding(ctx, h, p)
		f.Title = fmt.Sprintf("known since %s (%d capture%s): %s", p.FirstSeen.UTC().Format(time.RFC3339), p.Captures, plural(p.Captures), f.Title)
		known = append(known, f)
	}
	return known
}

// latestFinding is the finding of the problem's latest capture, read from
// its result; from the index when that cannot be read.
func (w *Watcher) latestFinding(ctx context.Context, h store.History, p problem.Problem) result.Finding {
	f := result.Finding{ID: p.Kind, Severity: p.Severity, Title: p.Title, Cause: p.Cause, Evidence: p.Evidence,
		Fix: "see the capture that found it, " + p.Latest}
	i := slices.IndexFunc(slices.Concat(h.Runs, h.Bundles), func(e store.Entry) bool { return e.Path == p.Latest })
	if i < 0 {
		return f
	}
	e := slices.Concat(h.Runs, h.Bundles)[i]
	dir, err := w.opts.Store.RunDir(ctx, e)
	if err != nil {
		return f
	}
	res, err := rundir.Read(dir)
	if err != nil {
		return f
	}
	if j := slices.IndexFunc(res.Findings, func(g result.Finding) bool { return problem.CauseOf(g) == p.Cause }); j >= 0 {
		g := res.Findings[j]
		g.Cause = p.Cause // a run written before cause keys has none
		return g
	}
	return f
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
