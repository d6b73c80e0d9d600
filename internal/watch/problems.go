package watch

import (
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/store"
)

// told is what the webhook was last told of one problem.
type told struct {
	state    problem.State
	severity string
	at       time.Time
}

// change is a problem's news: opened, reopened, escalated, resolved, or
// still open after the repeat interval.
type change struct {
	what string
	p    problem.Problem
}

// problemChanges compares a target's problems now with what was told of
// them (prev, by cause) and returns the news and what is told after it.
// Only problems of medium severity or above are news. When first (the
// watcher's first look at the target), a problem first seen before since
// (when this watcher began to watch it) was told by whoever watched it
// then: it is noted, not news.
func problemChanges(prev map[string]told, ps []problem.Problem, now, since time.Time, repeat time.Duration, first bool) ([]change, map[string]told) {
	next := make(map[string]told, len(prev))
	for k, v := range prev {
		next[k] = v
	}
	var out []change
	for _, p := range ps {
		if problem.Rank(p.Severity) < problem.Rank("medium") {
			continue
		}
		open := p.State != problem.Resolved
		t, seen := prev[p.Cause]
		if fam := problem.Family(p.Cause); !seen && fam != p.Cause {
			// A problem told before its site was known, now placed at
			// the service's line: the same problem, said once more with
			// the line.
			if u, ok := next[fam]; ok && u.state != problem.Resolved && open {
				delete(next, fam)
				next[p.Cause] = told{state: p.State, severity: p.Severity, at: now}
				out = append(out, change{"placed", p})
				continue
			}
		}
		what := ""
		switch {
		case !seen && first && p.FirstSeen.Before(since):
		case !seen && open:
			what = "opened"
		case !seen:
		case t.state == problem.Resolved && open:
			what = "reopened"
		case t.state != problem.Resolved && !open:
			what = "resolved"
		case open && problem.Rank(p.Severity) > problem.Rank(t.severity):
			what = "escalated"
		case open && repeat > 0 && now.Sub(t.at) >= repeat:
			what = "still open"
		}
		at := t.at
		if what != "" || !seen {
			at = now
		}
		next[p.Cause] = told{state: p.State, severity: p.Severity, at: at}
		if what != "" {
			out = append(out, change{what, p})
		}
	}
	return out, next
}

// followProblems looks at the target's problems after a capture was
// stored (res, nil after the long-term diagnosis) and tells the webhook
// what changed: one event per problem opened, reopened, escalated or
// resolved, and per problem still open every repeat interval. Nothing
// without a webhook; nothing to read for a healthy target, whose capture
// found nothing of medium or above and which has nothing open.
func (w *Watcher) followProblems(wt *watched, res *result.Run) {
	h := w.opts.Config.Webhook
	if w.outbox == nil || h == nil {
		return
	}
	if res != nil && !serious(res.Findings) && !w.anyOpen(wt) {
		return
	}
	key, now := wt.target.Key, w.opts.now()
	ps, err := store.Problems(w.opts.Store, store.Query{Target: key, Since: now.Add(-knownSpan)})
	if err != nil {
		w.log.Debug("problems", "target", key, "err", err)
		return
	}
	w.mu.Lock()
	first := wt.told == nil
	changes, next := problemChanges(wt.told, ps, now, wt.since, h.RepeatInterval, first)
	wt.told = next
	w.mu.Unlock()
	for _, c := range changes {
		p := c.p
		ev := Event{Kind: "problem", Change: c.what, Problem: &p, Target: key, Labels: wt.target.Labels, Time: now,
			Link: w.problemLink(p)}
		// One line a chat shows: the headline without the title, which
		// the event carries whole.
		short := p
		short.Title = ""
		ev.Text = fmt.Sprintf("heapscope: problem %s on %s: %s %s", c.what, key, p.Severity, short.Headline())
		if ev.Link != "" {
			ev.Text += " " + ev.Link
		}
		w.notify(ev)
	}
}

// serious says whether one of the findings is of medium or above.
func serious(fs []result.Finding) bool {
	return slices.ContainsFunc(fs, func(f result.Finding) bool { return problem.Rank(f.Severity) >= problem.Rank("medium") })
}

// anyOpen says whether the webhook was told of a problem of the target
// that it was not told resolved.
func (w *Watcher) anyOpen(wt *watched) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range wt.told {
		if t.state != problem.Resolved {
			return true
		}
	}
	return false
}

// problemLink is the problem's page under the webhook's external URL,
// over the time since it was first seen; "" without an external URL.
func (w *Watcher) problemLink(p problem.Problem) string {
	h := w.opts.Config.Webhook
	if h == nil || h.ExternalURL == "" {
		return ""
	}
	return h.ExternalURL + "/problem?target=" + url.QueryEscape(p.Target) + "&cause=" + url.QueryEscape(p.Cause) +
		"&from=" + url.QueryEscape(p.FirstSeen.Add(-time.Minute).UTC().Format(time.RFC3339))
}

// targetLink is the target's page under the webhook's external URL, ""
// without one.
func (w *Watcher) targetLink(key string) string {
	h := w.opts.Config.Webhook
	if h == nil || h.ExternalURL == "" {
		return ""
	}
	return h.ExternalURL + "/target?target=" + url.QueryEscape(key)
}
