package diagnose

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/humanize"
)

// contention is check 7: the sites where goroutines wait the longest for
// locks (mutex profiles) or block (block profiles), per second of the
// window.
func (d *diagnosis) contention() {
	th := d.th.Contention
	type waitSite struct {
		at      site
		seconds float64
		events  float64
		kinds   map[string]bool
		lock    string // the sync function waited on
	}
	for _, cp := range d.in.Contention {
		p := cp.Profile
		di, ci := index(p, "delay"), index(p, "contentions")
		if di < 0 {
			d.note("contention check: %s is not a block or mutex profile (no delay sample type)", cp.Name)
			continue
		}
		window := d.window
		if p.DurationNanos > 0 {
			window = float64(p.DurationNanos) / 1e9
		}
		kind := contentionKind(cp.Name, p.Sample)
		if window <= 0 {
			d.note("contention check: %s covers an unknown length of time (a cumulative profile, not ?seconds=N): its delay cannot be rated per second", cp.Name)
			continue
		}
		m := map[site]*waitSite{}
		var total float64
		for _, s := range p.Sample {
			fs := frames(s)
			at, lock, ok := d.waitSite(fs)
			if !ok {
				continue
			}
			w := m[at]
			if w == nil {
				w = &waitSite{at: at, lock: lock}
				m[at] = w
			}
			secs := float64(s.Value[di]) / 1e9
			w.seconds += secs
			total += secs
			if ci >= 0 {
				w.events += float64(s.Value[ci])
			}
		}
		sites := slices.SortedFunc(maps.Values(m), func(a, b *waitSite) int {
			if c := cmp.Compare(b.seconds, a.seconds); c != 0 {
				return c
			}
			return cmp.Compare(a.at.where(), b.at.where())
		})
		reported := 0
		for _, w := range sites {
			perSec := w.seconds / window
			sev := th.DelayPerSecond.of(perSec)
			if sev < Low || reported == th.MaxSites {
				continue
			}
			reported++
			ev := map[string]float64{
				"delay_seconds_per_second": perSec,
				"delay_seconds":            w.seconds,
				"contentions":              w.events,
				"window_seconds":           window,
				"share_of_delay":           w.seconds / total,
			}
			if d.requests > 0 {
				ev["delay_seconds_per_request"] = w.seconds / d.requests
			}
			what := "waiting for a lock"
			if kind == "mutex" {
				what = "lock contention (time others waited for locks released here)"
			} else if w.lock != "" && !strings.HasPrefix(w.lock, "sync.") {
				what = "blocking in " + humanize.ShortFunction(w.lock)
			}
			title := fmt.Sprintf("%s at %s: %s of waiting per second (%s of the %s profile's delay)", what, w.at.where(), humanize.Seconds(perSec), humanize.Percent(w.seconds/total), kind)
			d.add(newFinding("contention.lock", sev, w.at, title, ev, d.contentionFix(w.at, w.lock), 0.8))
		}
		if reported == 0 {
			d.note("contention check: %s: %s of delay over %.1fs, below %s per second at every site", cp.Name, humanize.Seconds(total), window, humanize.Seconds(th.DelayPerSecond.Low))
		}
	}
}

// waitSite returns the frame a wait is attributed to: the innermost frame
// of the service's own code (else the first outside sync and the runtime),
// and the sync or runtime function waited in.
func (d *diagnosis) waitSite(fs []frame) (site, string, bool) {
	lock := ""
	for _, f := range fs {
		if isRuntime(f.function) {
			if lock == "" || strings.HasPrefix(f.function, "sync.") {
				lock = f.function
			}
			continue
		}
		break
	}
	if f, ok := d.app.firstApp(fs); ok {
		return f.site(), lock, true
	}
	for _, f := range fs {
		if !isRuntime(f.function) {
			return f.site(), lock, true
		}
	}
	return site{}, lock, false
}

// contentionKind tells a mutex profile from a block profile: their sample
// types are the same, but a mutex profile's stacks end in the unlock that
// ended the wait, a block profile's in the blocking call.
func contentionKind(name string, samples []*profile.Sample) string {
	lower := strings.ToLower(name)
	switch {
	case strings.Contains(lower, "mutex"):
		return "mutex"
	case strings.Contains(lower, "block"):
		return "block"
	}
	for _, s := range samples {
		for _, f := range frames(s) {
			if strings.Contains(f.function, "Unlock") {
				return "mutex"
			}
			if !isRuntime(f.function) {
				break
			}
		}
	}
	return "block"
}

// contentionFix suggests a fix from what the site's code looks like.
func (d *diagnosis) contentionFix(at site, lock string) string {
	src, _ := d.sourceLine(at)
	fn := strings.ToLower(at.function)
	switch {
	case strings.Contains(fn, "count") || strings.Contains(fn, "stat") || strings.Contains(fn, "metric") || strings.Contains(src, "++"):
		return "counters behind a mutex serialise every request: use sync/atomic (atomic.Uint64 per counter) or per-CPU/sharded counters summed on read"
	case strings.Contains(lock, "RWMutex"):
		return "readers and writers queue on one RWMutex: shorten the write sections, shard the data by key, or publish immutable snapshots with atomic.Pointer for readers"
	default:
		return "one mutex serialises this path: if it is read-mostly use sync.RWMutex (RLock for reads), shard the data by key hash across several locks, keep the critical section short (no encoding, I/O or allocation while holding it: copy what is needed, unlock, then write the response), or replace it with atomics or sync.Map for simple cases"
	}
}
