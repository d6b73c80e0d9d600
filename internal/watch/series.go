package watch

import (
	"context"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/run"
	"github.com/heapscope/heapscope/internal/store"
)

// longTermSpan is how far back the long-term diagnosis looks, and
// longTermEvery how often it runs for one target (after a scheduled run).
const (
	longTermSpan  = 7 * 24 * time.Hour
	longTermEvery = time.Hour
)

// longTermDue says whether the target's long-term diagnosis last ran
// longTermEvery ago or more, and if so notes it as run now, so that it
// is started once.
func (w *Watcher) longTermDue(wt *watched) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.opts.now()
	if now.Sub(wt.lastLongTerm) < longTermEvery {
		return false
	}
	wt.lastLongTerm = now
	return true
}

// diagnoseLongTerm diagnoses the target over its stored runs of the last
// week, one target at a time (longTermSlot): per-site growth over the heap
// profiles of up to run.MaxStoredProfiles runs, and heap after GC over
// every run with the time to the memory limit. The leaks it finds are
// stored as findings of the series.
func (w *Watcher) diagnoseLongTerm(ctx context.Context, wt *watched) {
	now := w.opts.now()
	w.mu.Lock()
	limit := wt.limit
	w.mu.Unlock()
	select {
	case w.longTermSlot <- struct{}{}:
	case <-ctx.Done():
		return
	}
	rep, _, err := run.DiagnoseStored(ctx, w.opts.Store, wt.target.Key, now.Add(-longTermSpan), run.Diagnosis{MemoryLimit: limit})
	<-w.longTermSlot
	w.mu.Lock()
	wt.lastLongTerm = now
	w.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			w.log.Error("long-term diagnosis", "target", wt.target.Key, "err", err)
		}
		return
	}
	var found []store.Finding
	for _, f := range rep.Findings {
		if !strings.HasPrefix(f.ID, "leak.") {
			continue // the hot spots and the rest belong to each run
		}
		found = append(found, store.SeriesFinding(wt.target.Key, now, f))
		w.log.Warn("long-term growth", "target", wt.target.Key, "finding", f.Title)
	}
	if len(found) == 0 {
		return
	}
	if err := w.opts.Store.AddFindings(found); err != nil {
		w.log.Error("store findings", "target", wt.target.Key, "err", err)
		return
	}
	w.followProblems(wt, nil)
}
