package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/heapscope/heapscope/internal/atomicfile"
	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/fleet"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/run"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/shared"
	"github.com/heapscope/heapscope/internal/sysmem"
	"github.com/heapscope/heapscope/internal/target"
	"github.com/heapscope/heapscope/internal/trigger"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// occasion says why a capture is made: its schedule's slot, or a trigger
// that fired (then at is when it crossed).
type occasion struct {
	slot   time.Time
	firing *trigger.Firing
	// guard, in a fleet, is what the capture is stored under: its claim
	// on the slot, or its owner's lease for a bundle.
	guard shared.Guard
	// admitted, when set, is called once the capture holds one of the
	// concurrency slots.
	admitted func()
}

func scheduled(slot time.Time) occasion { return occasion{slot: slot} }

func (o occasion) kind() store.Kind {
	if o.firing != nil {
		return store.KindBundle
	}
	return store.KindRun
}

// errPreempted ends a scheduled capture that a trigger's bundle of the
// same target pre-empted.
var errPreempted = errors.New("pre-empted by a trigger's bundle")

// takeTurn waits for the target's turn to capture: one capture of a
// target at a time, so that a bundle never collides with a scheduled run
// (the process gives its CPU profile to one of them only, and the other
// is partial). A bundle does not wait for a scheduled run: it cancels it
// (errPreempted, the run's slot missed); a scheduled run waits for a
// bundle, which is short. done gives the turn back; ctx is the capture's.
func (w *Watcher) takeTurn(ctx context.Context, wt *watched, o occasion) (context.Context, func(), error) {
	if o.firing != nil {
		w.mu.Lock()
		if r := wt.running; r != nil && r.scheduled {
			r.cancel(errPreempted)
		}
		w.mu.Unlock()
	}
	select {
	case wt.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx, nil, ctx.Err()
	}
	cctx, cancel := context.WithCancelCause(ctx)
	r := &running{scheduled: o.firing == nil, cancel: cancel}
	w.mu.Lock()
	wt.running = r
	w.mu.Unlock()
	return cctx, func() {
		w.mu.Lock()
		if wt.running == r {
			wt.running = nil
		}
		w.mu.Unlock()
		cancel(nil)
		<-wt.turn
	}, nil
}

// downAfter is how many captures of a target must fail in a row for the
// webhook to hear it is down.
const downAfter = 3

// capture profiles the target once into the store: a scheduled run over
// the target's window, or a trigger's bundle over the short bundle window
// with what explains the moment (goroutine dump, smaps_rollup, the
// cgroup's memory.stat) and its comparison with the last healthy run.
func (w *Watcher) capture(ctx context.Context, wt *watched, o occasion) (store.Entry, *result.Run, error) {
	t := wt.target
	kind := o.kind()
	ctx, done, err := w.takeTurn(ctx, wt, o)
	if err != nil {
		return store.Entry{}, nil, err
	}
	defer done()
	start := w.opts.now()
	release := func() {}
	// A target that does not answer fails before it takes one of the
	// concurrency slots, which the others' captures need.
	err = answers(ctx, targetOptions(t))
	if err != nil && ctx.Err() != nil {
		return store.Entry{}, nil, ctx.Err()
	}
	if err == nil {
		select {
		case w.sem <- struct{}{}:
		case <-ctx.Done():
			return store.Entry{}, nil, ctx.Err()
		}
		release = sync.OnceFunc(func() { <-w.sem })
		defer release()
		if o.admitted != nil {
			o.admitted()
		}
		start = w.opts.now()
		if o.firing == nil {
			w.metrics.scheduleLag.Observe(max(0, start.Sub(o.slot).Seconds()))
		}
	}
	var entry store.Entry
	var res *result.Run
	if err == nil {
		entry, res, err = w.captureInto(ctx, wt, o)
	}
	outcome := "failed"
	switch {
	case err != nil && errors.Is(context.Cause(ctx), errPreempted):
		// The trigger's moment matters more than the slot.
		w.metrics.captures.WithLabelValues(string(kind), "preempted").Inc()
		w.metrics.missed.Inc()
		w.log.Warn("scheduled capture pre-empted by a trigger's bundle: its slot is missed", "target", t.Key,
			"slot", o.slot.UTC().Format(time.RFC3339Nano))
		return store.Entry{}, nil, errPreempted
	case err == nil:
		outcome = entry.Status
	case errors.Is(err, fleet.ErrClaimLost) || errors.Is(err, fleet.ErrNotOwner):
		// Not a failure of the target's: the capture belongs to the
		// watcher the target moved to, which stores its own.
		outcome = "dropped"
	}
	w.metrics.captures.WithLabelValues(string(kind), outcome).Inc()
	w.metrics.captureSeconds.WithLabelValues(string(kind)).Observe(w.opts.now().Sub(start).Seconds())
	if outcome == "dropped" {
		w.log.Warn("capture dropped: the target moved to another watcher while this one was cut off from the fleet",
			"target", t.Key, "kind", kind, "err", err)
		return entry, nil, err
	}
	if err != nil {
		failures := 0
		w.setHealth(wt, func(h *Health) {
			h.LastError, h.LastErrorTime = err.Error(), w.opts.now()
			h.ConsecutiveFailures++
			failures = h.ConsecutiveFailures
		})
		if ctx.Err() == nil {
			attrs := []any{"target", t.Key, "kind", kind, "err", err}
			if o.firing == nil {
				attrs = append(attrs, "slot", o.slot.UTC().Format(time.RFC3339Nano))
			}
			w.log.Error("capture failed", attrs...)
			if failures == downAfter {
				w.record(Event{Kind: "down", Target: t.Key, Labels: t.Labels, Time: w.opts.now(), Link: w.targetLink(t.Key),
					Text: fmt.Sprintf("heapscope: %s is down: %d captures failed in a row; the last: %v", t.Key, failures, err)}, err.Error())
			}
		}
		return entry, nil, err
	}
	w.metrics.captureBytes.WithLabelValues(string(kind)).Add(float64(entry.Bytes))
	w.updateStoreSize()
	wasDown := false
	w.setHealth(wt, func(h *Health) {
		h.LastSuccess = w.opts.now()
		wasDown = h.ConsecutiveFailures >= downAfter
		h.ConsecutiveFailures = 0
	})
	if wasDown {
		w.record(Event{Kind: "up", Target: t.Key, Labels: t.Labels, Time: w.opts.now(), Link: w.targetLink(t.Key),
			Text: fmt.Sprintf("heapscope: %s is back: captured again", t.Key)}, "captured again")
	}
	w.followProblems(wt, res)
	attrs := []any{"target", t.Key, "kind", kind, "path", entry.Path, "status", entry.Status,
		"seconds", w.opts.now().Sub(start).Seconds()}
	if o.firing == nil {
		attrs = append(attrs, "slot", o.slot.UTC().Format(time.RFC3339Nano), "late", start.Sub(o.slot).Seconds())
	}
	w.log.Info("captured", attrs...)
	// The push holds no capture slot: a slow Pyroscope delays this
	// target's loop, never another target's capture.
	release()
	w.pushToPyroscope(ctx, t, entry)
	return entry, res, nil
}

// captureInto makes the run in a pending directory of the store and
// commits it, or abandons it on any failure.
func (w *Watcher) captureInto(ctx context.Context, wt *watched, o occasion) (store.Entry, *result.Run, error) {
	t := wt.target
	s := t.Settings
	p, err := w.opts.Store.Begin(o.kind(), t.Key)
	if err != nil {
		return store.Entry{}, nil, err
	}
	committed := false
	defer func() {
		if !committed {
			p.Abandon()
		}
	}()
	pid := t.PID
	w.mu.Lock()
	if wt.sampler != nil {
		pid = wt.sampler.pid()
	}
	w.mu.Unlock()
	window := s.Window
	if o.firing != nil {
		window = w.opts.BundleWindow
	}
	cfg := run.Config{
		Target:        targetOptions(t),
		Duration:      window,
		CPU:           slices.Contains(s.Profiles, "cpu"),
		PID:           pid,
		OutDir:        p.Dir(),
		Name:          "capture",
		Lean:          true,
		AnalysisSlots: w.analyses,
		// The start, the middle and the end: three forced collections
		// a capture, the least that shows a trend.
		Snapshots: 3,
		Version:   w.opts.Version,
	}
	for _, e := range []string{"block", "mutex"} {
		if slices.Contains(s.Profiles, e) {
			cfg.Extra = append(cfg.Extra, e)
		}
	}
	if o.firing != nil {
		// A few seconds under pressure show symptoms; the target's
		// history knows their cause.
		cfg.Known = w.knownFindings(ctx, t.Key, o.firing.At)
	}
	// The whole capture is bounded: its window, plus the timeout for the
	// requests around it.
	cctx, cancel := context.WithTimeout(ctx, window+s.Timeout)
	defer cancel()
	res, dir, err := run.Profile(cctx, cfg)
	if err != nil {
		return store.Entry{}, nil, err
	}
	if ctx.Err() != nil {
		return store.Entry{}, nil, ctx.Err()
	}
	// A run is dated at its window's start, when it measured the
	// target, with the slot it was captured for beside it: a late run's
	// points fall where they were measured, its lateness recorded.
	e := store.Entry{
		Kind:      o.kind(),
		Target:    t.Key,
		Labels:    t.Labels,
		Scheduled: o.firing == nil,
		Slot:      o.slot,
	}
	if o.firing != nil {
		e.Slot = time.Time{}
		f := o.firing
		e.Time = f.At
		e.Trigger = &store.Trigger{Expr: f.Expr, Value: f.Value, Threshold: f.Threshold, Unit: f.Unit}
		w.addBundleFiles(cctx, dir, cfg.Target, res)
		w.compareWithBaseline(ctx, dir, t.Key, f.At)
		// Measured to the bundle's completeness: everything but the
		// index row, which Commit adds in one transaction.
		e.CaptureSeconds = w.opts.now().Sub(f.At).Seconds()
	}
	var entry store.Entry
	if o.guard != nil {
		entry, err = shared.CommitGuarded(p, dir, e, o.guard)
	} else {
		entry, err = p.Commit(dir, e)
	}
	w.commitDone(err)
	if err != nil {
		return store.Entry{}, nil, err
	}
	committed = true
	return entry, res, nil
}

// targetOptions are how a capture asks the target.
func targetOptions(t config.Target) target.Options {
	s := t.Settings
	return target.Options{
		BaseURL:        t.URL.String(),
		PprofPath:      s.PprofPath,
		MetricsPath:    s.MetricsPath,
		Timeout:        s.Timeout,
		TimeoutSetting: timeoutSetting(t),
		MaxBody:        s.MaxBody,
	}
}

// answers asks the target for its command line (a few bytes), within its
// timeout, holding no concurrency slot: a target that does not answer, or
// is not there, fails here and holds none of the slots the others'
// captures need, however long it takes to fail. Any answer will do, a 404
// of a pprof served without cmdline too.
func answers(ctx context.Context, opts target.Options) error {
	c, err := target.New(opts)
	if err != nil {
		return err
	}
	_, err = c.Profile(ctx, "cmdline", nil)
	if se := (*target.StatusError)(nil); errors.As(err, &se) {
		return nil
	}
	return err
}

// timeoutSetting names, for the error of a request that ran out of its
// timeout, where the target's is set: --timeout in the command line's
// form, the timeout key of its group in a config file.
func timeoutSetting(t config.Target) string {
	if t.Group == config.CLIGroup {
		return "--timeout"
	}
	return fmt.Sprintf("timeout of group %s", t.Group)
}

// addBundleFiles adds to a bundle what a scheduled run leaves out: the
// goroutines as text (their states and wait times), and when the process is
// local its smaps_rollup and its cgroup's memory.stat. A file that cannot
// be had is noted in missing.txt rather than failing the bundle.
func (w *Watcher) addBundleFiles(ctx context.Context, dir string, opts target.Options, res *result.Run) {
	var missing []string
	note := func(what string, err error) { missing = append(missing, fmt.Sprintf("%s: %v", what, err)) }
	if c, err := target.New(opts); err != nil {
		note("goroutines.txt", err)
	} else if b, err := c.Profile(ctx, "goroutine", url.Values{"debug": {"2"}}); err != nil {
		note("goroutines.txt", err)
	} else if err := os.WriteFile(filepath.Join(dir, "goroutines.txt"), b, 0o644); err != nil {
		note("goroutines.txt", err)
	}
	if pid := res.Target.PID; pid > 0 {
		copyFile := func(name, from string) {
			if err := copyInto(filepath.Join(dir, name), from); err != nil {
				note(name, err)
			}
		}
		copyFile("smaps_rollup", fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if cg, err := (sysmem.Proc{}).Cgroup(pid); err != nil {
			note("memory.stat", err)
		} else {
			copyFile("memory.stat", filepath.Join(cg.Dir, "memory.stat"))
		}
	}
	if len(missing) > 0 {
		text := ""
		for _, m := range missing {
			text += m + "\n"
		}
		os.WriteFile(filepath.Join(dir, "missing.txt"), []byte(text), 0o644)
	}
}

// relabel names a side of one run, and its run, label.
func relabel(s *compare.Side, label string) {
	s.Label = label
	for i := range s.Samples {
		s.Samples[i].Label = label
	}
}

// copyInto copies a (small, /proc or cgroupfs) file.
func copyInto(to, from string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	return atomicfile.Write(to, func(w io.Writer) error {
		_, err := io.Copy(w, io.LimitReader(in, 16<<20))
		return err
	})
}

// compareWithBaseline writes compare.md and compare.json into a bundle: the
// bundle against the target's last complete scheduled run before the
// crossing, site by site, with the findings that appeared. Without a
// baseline it says so in compare.md.
func (w *Watcher) compareWithBaseline(ctx context.Context, dir, key string, at time.Time) {
	md := filepath.Join(dir, "compare.md")
	base, ok, err := w.opts.Store.LastHealthyRun(key, at)
	if err != nil || !ok {
		why := "no complete scheduled run of this target precedes the bundle"
		if err != nil {
			why = err.Error()
		}
		os.WriteFile(md, []byte("No comparison: "+why+".\n"), 0o644)
		return
	}
	baseDir, err := w.opts.Store.RunDir(ctx, base)
	if err == nil {
		err = writeComparison(baseDir, base.Path, dir)
	}
	if err != nil {
		os.WriteFile(md, []byte("No comparison with "+base.Path+": "+err.Error()+".\n"), 0o644)
	}
}

// writeComparison compares the bundle in bundleDir with the run in
// baseDir, stored at basePath. The sides are named as the store names
// them: the run by its path, the bundle as itself (its directory is not
// yet where it will be kept, and the run's may be a copy fetched for the
// comparison).
func writeComparison(baseDir, basePath, bundleDir string) error {
	before, _, err := compare.ReadSide([]string{baseDir})
	if err != nil {
		return err
	}
	after, _, err := compare.ReadSide([]string{bundleDir})
	if err != nil {
		return err
	}
	relabel(&before, basePath)
	relabel(&after, "this bundle")
	c, err := compare.Compare(before, after, compare.Options{})
	if err != nil {
		return err
	}
	doc := report.Comparison{Comparison: c}
	return errors.Join(
		atomicfile.Write(filepath.Join(bundleDir, "compare.md"), func(w io.Writer) error {
			return report.Write(w, report.FormatMarkdown, doc)
		}),
		atomicfile.Write(filepath.Join(bundleDir, "compare.json"), func(w io.Writer) error {
			return report.Write(w, report.FormatJSON, doc)
		}))
}
