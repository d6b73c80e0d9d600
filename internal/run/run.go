// Package run carries out one profiling run end to end and keeps it in a run
// directory.
//
// The steps of Profile:
//
//  1. fetch a heap profile with a forced GC (heap?gc=1), a goroutine
//     profile and MemStats (heap?debug=1): the window's start;
//  2. find the process on this machine when the target is on loopback, and
//     read its build info, environment and uptime;
//  3. for the window: drive load, take a CPU profile (and block and mutex
//     profiles when asked), and take heap snapshots at intervals, each
//     with a goroutine profile for the goroutine leak check;
//  4. at the window's end: a last heap?gc=1 snapshot and MemStats, the
//     goroutine profile, RSS from /proc (or /metrics for a remote target);
//  5. derive the window's allocation profile (end minus start), the top
//     sites, GC figures, heap growth and per-request costs;
//  6. draw flame graphs of the window's allocations, the heap in use at
//     its end and the CPU profile, and render report.html with them;
//  7. write the raw profiles, memstats.json, load.json, the flame graphs,
//     report.md, report.html and, last and by rename, result.json.
//
// Nothing here prints: progress goes to a callback and the summary is a
// value.
package run

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/option"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/sysmem"
	"github.com/heapscope/heapscope/internal/target"
)

// Fetcher is what a run needs from the service; *target.Client is one.
type Fetcher interface {
	Profile(ctx context.Context, name string, query url.Values) ([]byte, error)
	MemStats(ctx context.Context, gc bool) (gcstats.MemStats, error)
	Metrics(ctx context.Context) ([]byte, error)
}

var _ Fetcher = (*target.Client)(nil)

// Config describes one profiling run.
type Config struct {
	// Target says how to reach the service.
	Target target.Options
	// Duration is the collection window; the load, if any, runs for it.
	Duration time.Duration
	// Snapshots is the number of heap snapshots over the window, the start
	// and end included (at least 2). Interval, when set, replaces it: a
	// snapshot every Interval from the start, and one at the end.
	Snapshots int
	Interval  time.Duration
	// CPU takes a CPU profile over the window (whole seconds, at least 1).
	CPU bool
	// Extra lists further profiles over the window: "block", "mutex".
	Extra []string
	// Trace, when set, captures an execution trace of this long (whole
	// seconds) from the window's start, kept as profiles/trace.out, and
	// puts its GC timeline in the result.
	Trace time.Duration
	// Load, when set, is driven during the window: its Duration is the
	// window's, it has no MaxRequests, and its Progress is the run's.
	Load *load.Options
	// Warmup, when set, drives the load this long before the window
	// opens, so caches, pools and connections reach their steady size and
	// their filling is not mistaken for growth. It needs Load.
	Warmup time.Duration
	// PID names the target's process when it cannot be found from its
	// port; 0 means look for it when the target is on loopback.
	PID int
	// OutDir is where the run directory is created.
	OutDir string
	// Name names the run directory, <Name>-<time>; the target's host and
	// port when empty.
	Name string
	// Version is heapscope's version, recorded in the result.
	Version string
	// Progress, when set, is called about every 200 ms during the window.
	Progress func(Progress)
	// Repeat, when above 1, records that many consecutive windows under
	// windows/NNN/ of one run directory (see ProfileRepeated).
	Repeat int
	// UntilConfident keeps the window open past Duration, a snapshot
	// interval at a time and the load running, while the exact live heap
	// grows steadily but the samples cannot yet place the growth (see
	// diagnose.Place); MaxDuration bounds it (0: 5 × Duration).
	UntilConfident bool
	MaxDuration    time.Duration
	// Lean leaves out the flame graphs and report.html, which heapscope
	// view draws from the profiles when asked: a watcher that captures
	// every 15 minutes keeps the profiles, result.json and report.md. A
	// lean run also holds its profiles compressed through the window and
	// decodes them once, after it: a watcher has many windows open at
	// once, and a decoded profile takes tens of times its compressed size.
	Lean bool
	// AnalysisSlots, when set, is a semaphore shared by concurrent runs:
	// the decoding and analysis after the window, which hold decoded
	// profiles and use a CPU, take one of its slots. Many lean runs then
	// hold at most cap(AnalysisSlots) analyses in memory at once.
	AnalysisSlots chan struct{}
	// AllFindings keeps the allocation hot spots too small to matter,
	// which the diagnosis otherwise only counts.
	AllFindings bool
	// Known are the findings the target's history holds open, each with
	// its cause key (watch gives them to a trigger's bundle): they lead
	// the run's findings, this window's of the same cause listed under
	// them (diagnose.WithKnown).
	Known []result.Finding

	// fetcher, now and proc replace the real service, clock and /proc in
	// tests.
	fetcher Fetcher
	now     func() time.Time
	proc    sysmem.Proc
	// limits bound what parsing each fetched profile may cost: its
	// decompressed size and the memory of its decoded form, both checked
	// on a streaming pass before the profile is held whole
	// (pprofx.ParseWithin); the defaults when zero. MaxDecoded bounds
	// the profiles a window holds decoded, its heap and goroutine
	// snapshots, all together.
	limits pprofx.Limits
	// pprofURL is the target's pprof URL without user information, for
	// errors.
	pprofURL string
}

// Progress is the state of a run during its window.
type Progress struct {
	Elapsed, Total time.Duration
	// Requests counts the requests sent so far.
	Requests uint64
	// Errors counts failed requests so far.
	Errors uint64
}

// String describes the progress on one line: "window 3s/10s, 1200
// requests (4 errors)", the requests only under load, the errors only
// when some failed.
func (p Progress) String() string {
	line := fmt.Sprintf("window %s/%s", p.Elapsed.Round(time.Second), p.Total)
	if p.Requests > 0 {
		line += fmt.Sprintf(", %d requests", p.Requests)
		if p.Errors > 0 {
			line += fmt.Sprintf(" (%d errors)", p.Errors)
		}
	}
	return line
}

// Defaults of a run.
const (
	DefaultDuration = 30 * time.Second
	// DefaultSnapshots: the window's start, then four under the load,
	// enough to tell steady growth from warm-up and noise.
	DefaultSnapshots = 5
	// DefaultMaxDurationFactor bounds a window kept open until the
	// samples place a growing heap: 5 × the window asked.
	DefaultMaxDurationFactor = 5
	// topSites is how many sites each top table keeps in result.json.
	topSites = 20
	// maxSnapshots bounds the heap snapshots of one window: each forces a
	// GC on the target and is kept in memory until the run is written.
	maxSnapshots = 1000
	// minInterval is the shortest --interval: a forced GC and a heap
	// profile take tens of milliseconds on a large heap.
	minInterval = 100 * time.Millisecond
	// overrunShare and overrunMin say how much longer than asked a window
	// may run (slow snapshots, a slow target) before the run says so: a
	// tenth of the window, and never less than the few hundred
	// milliseconds the opening snapshot, MemStats and /proc reads take.
	overrunShare = 0.1
	overrunMin   = 500 * time.Millisecond
)

// setDefaults fills the defaults of the zero fields, the load's too (on a
// copy of it).
func (c *Config) setDefaults() {
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Snapshots == 0 {
		c.Snapshots = DefaultSnapshots
	}
	c.MaxDuration = c.maxDuration()
	if c.Repeat == 0 {
		c.Repeat = 1
	}
	if c.Load != nil {
		lo := *c.Load
		lo.SetDefaults()
		c.Load = &lo
	}
	if c.OutDir == "" {
		c.OutDir = DefaultOutDir
	}
	if c.now == nil {
		c.now = time.Now
	}
}

// Validate reports the first field that cannot make a run, the errors
// about the fields of Target and Load from within them (option.Within).
// Profile fills the defaults of zero fields before it validates; Validate
// takes the configuration as it is, so a zero Duration or Repeat, which a
// command line gives only when its user typed 0, is an error here (a zero
// Snapshots or MaxDuration is the default still). It reads no file and
// contacts nothing: Profile then compiles the load's requests and reaches
// the target.
func (c *Config) Validate() error {
	if err := c.Target.Validate(); err != nil {
		return option.Within("Target", err)
	}
	if c.Duration <= 0 {
		return option.Errorf("Duration", "{Duration} %s: give a positive window such as 30s", c.Duration)
	}
	if c.Repeat < 1 {
		return option.Errorf("Repeat", "{Repeat} %d: give a number of windows ≥ 1", c.Repeat)
	}
	if c.MaxDuration < 0 || c.MaxDuration > 0 && c.MaxDuration < c.Duration {
		return option.Errorf("MaxDuration", "{MaxDuration} %s: give at least the {Duration} window, %s", c.MaxDuration, c.Duration)
	}
	if c.Load != nil {
		lo := c.loadOptions(nil)
		if err := lo.Validate(); err != nil {
			return option.Within("Load", err)
		}
	}
	if c.Duration < 100*time.Millisecond {
		return option.Errorf("Duration", "duration %s is too short: give at least 100ms", c.Duration)
	}
	if err := c.validateSnapshots(); err != nil {
		return err
	}
	for _, e := range c.Extra {
		if e != "block" && e != "mutex" {
			return option.Errorf("Extra", "profile %q cannot be collected over a window: choose block or mutex", e)
		}
	}
	if c.PID < 0 {
		return option.Errorf("PID", "pid %d is negative", c.PID)
	}
	if err := c.validateTrace(); err != nil {
		return err
	}
	if c.Repeat > maxRepeat {
		return option.Errorf("Repeat", "repeat %d: give between 1 and %d windows", c.Repeat, maxRepeat)
	}
	if c.Warmup < 0 || c.Warmup > maxWarmup {
		return option.Errorf("Warmup", "warm-up %s: give a duration between 0 and %s", c.Warmup, maxWarmup)
	}
	if c.Warmup > 0 && c.Load == nil {
		return option.Errorf("Warmup", "a warm-up drives the load before the window: give the load too")
	}
	_, err := target.ParseBaseURL(c.Target.BaseURL)
	return err
}

// validateSnapshots checks Snapshots and Interval: a zero Snapshots is the
// default.
func (c *Config) validateSnapshots() error {
	switch {
	case c.Interval < 0:
		return option.Errorf("Interval", "interval %s is negative", c.Interval)
	case c.Interval > 0 && c.Interval > c.Duration:
		return option.Errorf("Interval", "interval %s is longer than the %s window", c.Interval, c.Duration)
	case c.Interval > 0 && c.Interval < minInterval:
		return option.Errorf("Interval", "interval %s is too short: a snapshot forces a GC, give at least %s", c.Interval, minInterval)
	case c.Interval > 0 && c.Duration/c.Interval >= maxSnapshots:
		return option.Errorf("Interval", "interval %s makes %d snapshots over the %s window: give at most %d", c.Interval, c.Duration/c.Interval+1, c.Duration, maxSnapshots)
	case c.Snapshots != 0 && c.Snapshots < 2:
		return option.Errorf("Snapshots", "snapshots must be at least 2 (the window's start and end), not %d", c.Snapshots)
	case c.Snapshots > maxSnapshots:
		return option.Errorf("Snapshots", "snapshots %d is too many: give at most %d", c.Snapshots, maxSnapshots)
	}
	return nil
}

// prepare fills the defaults, validates, compiles the load's requests
// (reading the files of their placeholders) and makes the target's client
// unless a test gave a fetcher.
func (c *Config) prepare() error {
	c.setDefaults()
	if err := c.Validate(); err != nil {
		return err
	}
	if c.Load != nil {
		if _, err := load.New(c.loadOptions(nil)); err != nil {
			return err
		}
	}
	if c.fetcher == nil {
		client, err := target.New(c.Target)
		if err != nil {
			return err
		}
		c.fetcher = client
		c.pprofURL = client.PprofURL()
	}
	return nil
}

// maxWarmup bounds the warm-up: longer ones are a load test of their own.
const maxWarmup = 10 * time.Minute

// warmUp drives the load for Warmup before the window opens. Its results
// are not kept; a load that cannot run at all ends the run, as it would
// have in the window.
func (c *Config) warmUp(ctx context.Context) error {
	if c.Warmup <= 0 {
		return nil
	}
	o := c.loadOptions(nil)
	o.Duration, o.Series = c.Warmup, false
	if _, err := load.Run(ctx, o); err != nil {
		return fmt.Errorf("warm-up load: %w", err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("warm-up: %w", ErrInterrupted)
	}
	return nil
}

// loadOptions returns the options of the window's load, reporting progress
// to progress.
func (c *Config) loadOptions(progress func(load.Progress)) load.Options {
	o := *c.Load
	o.Duration, o.MaxRequests = c.Duration, 0
	if c.UntilConfident {
		// The window may stay open: the run stops the load when it ends.
		o.Duration = c.maxDuration()
	}
	o.Series = true // for load.json
	o.Progress = progress
	return o
}

// maxDuration is the longest window UntilConfident keeps open:
// MaxDuration, or DefaultMaxDurationFactor × Duration when it is 0.
func (c *Config) maxDuration() time.Duration {
	if c.MaxDuration == 0 {
		return DefaultMaxDurationFactor * c.Duration
	}
	return c.MaxDuration
}

// DefaultOutDir is where run directories go unless said otherwise.
const DefaultOutDir = "heapscope-runs"

// snapshotOffsets returns when, from the window's start, each heap snapshot
// is taken: the first at 0 and the last at the window's end.
func (c *Config) snapshotOffsets() []time.Duration {
	var offs []time.Duration
	if c.Interval > 0 {
		for t := time.Duration(0); t < c.Duration; t += c.Interval {
			offs = append(offs, t)
		}
		return append(offs, c.Duration)
	}
	n := c.Snapshots
	for i := range n {
		offs = append(offs, c.Duration*time.Duration(i)/time.Duration(n-1))
	}
	return offs
}

// ErrInterrupted marks a run stopped by its context before the window ended.
var ErrInterrupted = errors.New("interrupted")

// Profile carries out one run and returns its summary and directory. An
// error means no usable run was kept: the target could not be profiled at
// all, or the run directory could not be written (the directory, if any,
// then says status failed or has no result.json). A run that collected
// something but not everything comes back with Status partial and no error.
func Profile(ctx context.Context, cfg Config) (*result.Run, string, error) {
	if err := cfg.prepare(); err != nil {
		return nil, "", err
	}
	if cfg.Repeat > 1 {
		if err := cfg.warmUp(ctx); err != nil {
			return nil, "", err
		}
		return profileRepeated(ctx, cfg)
	}
	if err := cfg.warmUp(ctx); err != nil {
		return nil, "", err
	}
	c := &collector{cfg: &cfg}
	if err := c.start(ctx); err != nil {
		return nil, "", err
	}
	dir, err := createRunDir(cfg.OutDir, c.runName(), c.startTime)
	if err != nil {
		return nil, "", err
	}
	c.window(ctx)
	c.finish(ctx)
	if cfg.AnalysisSlots != nil {
		select {
		case cfg.AnalysisSlots <- struct{}{}:
		case <-ctx.Done():
			return nil, dir, fmt.Errorf("waiting to analyse the run: %w", ErrInterrupted)
		}
		defer func() { <-cfg.AnalysisSlots }()
	}
	if cfg.Lean {
		c.decodeHeld()
		if len(c.snaps) == 0 {
			return nil, dir, fmt.Errorf("no heap snapshot of the window could be decoded: %s", c.fails.list[0].Error)
		}
	}
	res, delta := c.summarise()
	var rendered []renderedFile
	if !cfg.Lean {
		rendered = c.render(res, delta)
	}
	if err := writeRun(dir, c, res, delta, rendered...); err != nil {
		return nil, dir, err
	}
	return res, dir, nil
}

// failures collects the steps that failed, safe for concurrent use.
type failures struct {
	mu   sync.Mutex
	list []result.Failure
}

func (f *failures) add(step string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, result.Failure{Step: step, Error: err.Error()})
}
