package watch

import (
	"time"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/store"
)

// longTermSpan is how far back the long-term diagnosis looks, and
// longTermEvery how often it stores a finding of one target that keeps
// growing (each scheduled run checks).
const (
	longTermSpan  = 7 * 24 * time.Hour
	longTermEvery = time.Hour
)

// diagnoseLongTerm fits heap after GC over the target's stored runs of the
// last week and stores a finding when it grows steadily, at most once an
// hour per target.
func (w *Watcher) diagnoseLongTerm(wt *watched, limit float64) {
	now := w.opts.now()
	w.mu.Lock()
	last := wt.lastLongTerm
	w.mu.Unlock()
	if now.Sub(last) < longTermEvery {
		return
	}
	pts, err := w.opts.Store.Series(wt.target.Key, store.MetricHeapAfterGC, now.Add(-longTermSpan), now)
	if err != nil {
		w.log.Error("read heap series", "target", wt.target.Key, "err", err)
		return
	}
	ps := make([]diagnose.LongTermPoint, len(pts))
	for i, p := range pts {
		ps[i] = diagnose.LongTermPoint{Time: p.Time, Bytes: p.Value}
	}
	f, ok := diagnose.LongTermGrowth(ps, limit)
	if !ok {
		return
	}
	err = w.opts.Store.AddFindings([]store.Finding{{
		Target: wt.target.Key, Time: now, Severity: f.Severity, Kind: f.ID, Title: f.Title, Source: "series",
	}})
	if err != nil {
		w.log.Error("store finding", "target", wt.target.Key, "err", err)
		return
	}
	w.mu.Lock()
	wt.lastLongTerm = now
	w.mu.Unlock()
	w.log.Warn("long-term growth", "target", wt.target.Key, "finding", f.Title)
}
