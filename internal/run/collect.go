package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/clock"
	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/exectrace"
	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rss"
	"github.com/heapscope/heapscope/internal/sysmem"
	"github.com/heapscope/heapscope/internal/target"
)

// finishTimeout bounds the steps after an interrupted window: the user asked
// to stop, so what is left gets a few seconds.
const finishTimeout = 5 * time.Second

// collector holds everything a run fetched, in the order it came.
type collector struct {
	// timedRunning counts the timed profiles (CPU, block, mutex) being
	// fetched: while one is, the target holds its buffers.
	timedRunning atomic.Int32
	// held is the memory the profiles kept decoded take, as estimated
	// before each was decoded: what is left of the window's budget
	// (Config.limits) bounds the next.
	held  atomic.Int64
	cfg   *Config
	fails failures

	warnMu   sync.Mutex
	warnings []string

	startTime, endTime time.Time
	interrupted        bool

	snaps []snapshot

	memStart, memEnd     gcstats.MemStats
	memStartAt, memEndAt time.Time
	haveMemEnd           bool

	cpu       []byte
	extra     map[string][]byte
	goroutine []byte
	// extendedBy is how long the window stayed open past Duration (see
	// extend), and extendedFrom what the samples placed when it began.
	extendedBy   time.Duration
	extendedFrom diagnose.Placement

	// goroutineFailed says a goroutine profile of the series could not
	// be fetched (warned about once); memFailed the same of MemStats.
	goroutineFailed, memFailed bool

	trace         []byte
	traceTimeline *exectrace.Timeline

	load    *load.Result
	sent    atomic.Uint64
	errored atomic.Uint64

	proc processFacts
}

// snapshot is one heap profile taken with a forced GC.
type snapshot struct {
	at     time.Time
	offset time.Duration
	raw    []byte
	// profile leaves out what the pprof handlers allocated (see
	// pprofx.WithoutProfiler); raw keeps everything, as fetched.
	profile *profile.Profile
	// profilerAlloc is alloc_space of the pprof handlers since the
	// process started.
	profilerAlloc int64
	// decoded is what profile was estimated to take when it was decoded;
	// profile and decoded are zero while a lean run holds the snapshot
	// compressed (Config.Lean).
	decoded int64
	// profiling is true when a timed profile ran in the target at the
	// snapshot (result.HeapSnapshot.Profiling).
	profiling bool
	// goroutines is the goroutine profile fetched right after the heap
	// profile, for the goroutine leak check; nil when it failed.
	goroutines *goroutineSnapshot
	// mem is MemStats read right after the heap profile's forced GC:
	// HeapAlloc and HeapObjects are then the live heap, exactly (plus
	// what the target allocated in the few milliseconds between). nil
	// when the read failed, memErr saying why.
	mem    *gcstats.MemStats
	memAt  time.Time
	memErr error
}

// goroutineSnapshot is one goroutine profile (debug=0) of a series.
type goroutineSnapshot struct {
	at      time.Time
	raw     []byte
	profile *profile.Profile
}

// processFacts is what /proc told about a local target, or the target's
// /metrics about a remote one.
type processFacts struct {
	pid                      int
	buildInfo                *debug.BuildInfo
	env                      map[string]string
	uptimeStart, uptimeEnd   time.Duration
	status                   *sysmem.Status
	heapMappings             *sysmem.HeapMappings
	cgroup                   *sysmem.Cgroup
	metricsRSS               uint64
	haveMetricsRSS, readProc bool
	// endError says why /proc/PID could not be read at the window's end.
	endError string
	// mappings sums smaps by kind of mapping.
	mappings []result.MappingKind
}

func (c *collector) warn(format string, args ...any) {
	c.warnMu.Lock()
	defer c.warnMu.Unlock()
	c.warnings = append(c.warnings, fmt.Sprintf(format, args...))
}

// runName names the run directory: the configured name, or the target's host
// and port.
func (c *collector) runName() string {
	if c.cfg.Name != "" {
		return c.cfg.Name
	}
	u, err := target.ParseBaseURL(c.cfg.Target.BaseURL)
	if err != nil {
		return "target"
	}
	return u.Host
}

// start takes the window's opening heap snapshot and MemStats and finds the
// process. Its errors end the run: nothing has been collected yet.
func (c *collector) start(ctx context.Context) error {
	c.startTime = c.cfg.now()
	snap, err := c.snapshot(ctx, 0)
	if err != nil {
		return err
	}
	if snap.memErr != nil {
		return snap.memErr
	}
	c.addGoroutines(ctx, &snap)
	c.snaps = append(c.snaps, snap)
	c.memStart, c.memStartAt = *snap.mem, snap.memAt
	return c.findProcess()
}

// snapshot fetches heap?gc=1, checks it is a heap profile, and reads
// MemStats right after it, while the heap is still the live heap the
// forced GC left.
func (c *collector) snapshot(ctx context.Context, offset time.Duration) (snapshot, error) {
	at := c.cfg.now()
	raw, err := c.cfg.fetcher.Profile(ctx, "heap", heapQuery)
	if err != nil {
		return snapshot{}, err
	}
	snap := snapshot{at: at, offset: offset, raw: raw, profiling: c.timedRunning.Load() > 0}
	switch {
	case !c.cfg.Lean:
		err = c.decodeSnapshot(&snap)
	case offset == 0:
		// The window's first snapshot says whether the target serves
		// heap profiles at all: checked now, kept compressed.
		err = c.decodeSnapshot(&snap)
		c.held.Add(-snap.decoded)
		snap.profile, snap.decoded = nil, 0
	}
	if err != nil {
		return snapshot{}, err
	}
	if ms, msAt, err := c.memStats(ctx); err != nil {
		snap.memErr = err
	} else {
		snap.mem, snap.memAt = &ms, msAt
	}
	return snap, nil
}

// heapQuery asks for a heap profile after a forced GC.
var heapQuery = url.Values{"gc": {"1"}}

// decodeSnapshot decodes the heap profile snap fetched, within the
// window's memory budget, checks that it is one and takes out what the
// pprof handlers allocated.
func (c *collector) decodeSnapshot(snap *snapshot) error {
	p, decoded, err := c.parseFetched("heap", heapQuery, snap.raw, true)
	if err != nil {
		return err
	}
	if _, err := pprofx.SampleIndex(p, "inuse_space"); err != nil {
		c.held.Add(-decoded)
		return fmt.Errorf("read heap profile from %s: not a heap profile: %w", c.profileURL("heap", heapQuery), err)
	}
	app, dropped := pprofx.WithoutProfiler(p)
	si, _ := pprofx.SampleIndex(p, "alloc_space")
	snap.profile, snap.profilerAlloc, snap.decoded = app, dropped[si], decoded
	return nil
}

// decodeHeld decodes what a lean run kept compressed through its window
// (Config.Lean): its heap and goroutine snapshots, which the analysis
// needs, and the profiles it only checks. A profile that does not decode
// is dropped with a failure, as it would have been when fetched.
func (c *collector) decodeHeld() {
	c.decodeSnapshots()
	if c.goroutine != nil {
		if _, _, err := c.parseFetched("goroutine", nil, c.goroutine, false); err != nil {
			c.fails.add("goroutine profile", err)
			c.goroutine = nil
		}
	}
	c.checkTimed("profile", &c.cpu)
	for name, raw := range c.extra {
		c.checkTimed(name, &raw)
		if raw == nil {
			delete(c.extra, name)
		}
	}
}

// decodeSnapshots decodes the heap and goroutine snapshots a lean run
// holds compressed.
func (c *collector) decodeSnapshots() {
	kept := c.snaps[:0]
	for _, s := range c.snaps {
		if s.profile == nil {
			if err := c.decodeSnapshot(&s); err != nil {
				c.fails.add(fmt.Sprintf("heap snapshot at %s", s.offset.Round(time.Millisecond)), err)
				continue
			}
		}
		if g := s.goroutines; g != nil && g.profile == nil {
			p, _, err := c.parseFetched("goroutine", goroutineQuery, g.raw, true)
			if err != nil {
				c.goroutineSnapshotFailed(s.offset, err)
				s.goroutines = nil
			}
			g.profile = p
		}
		kept = append(kept, s)
	}
	c.snaps = kept
}

// checkTimed decodes the timed profile *raw fetched from endpoint name
// and drops it with a failure when it does not decode.
func (c *collector) checkTimed(name string, raw *[]byte) {
	if *raw == nil {
		return
	}
	query := url.Values{"seconds": {strconv.Itoa(int(c.cfg.Duration / time.Second))}}
	if _, _, err := c.parseFetched(name, query, *raw, false); err != nil {
		c.fails.add(kindOf(name)+" profile", err)
		*raw = nil
	}
}

// goroutineSnapshotFailed warns, once a run, that a goroutine profile of
// the series is missing.
func (c *collector) goroutineSnapshotFailed(offset time.Duration, err error) {
	if !c.goroutineFailed {
		c.goroutineFailed = true
		c.warn("goroutine profile with the heap snapshot at +%s: %v; the goroutine leak check has fewer profiles", offset.Round(time.Millisecond), err)
	}
}

// goroutineQuery asks for a goroutine profile in pprof's format.
var goroutineQuery = url.Values{"debug": {"0"}}

// addGoroutines fetches a goroutine profile (debug=0, pprof format) to go
// with a heap snapshot: the series lets diagnose see goroutines pile up.
// Its failure is a warning: the end-of-window goroutine profile is the
// one whose failure makes a run partial.
func (c *collector) addGoroutines(ctx context.Context, snap *snapshot) {
	at := c.cfg.now()
	raw, err := c.cfg.fetcher.Profile(ctx, "goroutine", goroutineQuery)
	var p *profile.Profile
	if err == nil && !c.cfg.Lean {
		p, _, err = c.parseFetched("goroutine", goroutineQuery, raw, true)
	}
	if err != nil {
		c.goroutineSnapshotFailed(snap.offset, err)
		return
	}
	snap.goroutines = &goroutineSnapshot{at: at, raw: raw, profile: p}
}

// parse decodes a profile within the run's limits: a gzip bomb, or a
// profile that would take too much memory to decode, is refused on a
// streaming pass before anything holds it whole.
func (c *collector) parse(raw []byte) (*profile.Profile, error) {
	p, _, err := pprofx.ParseWithin(raw, c.cfg.limits)
	return p, err
}

// parseFetched decodes a profile just fetched from endpoint name with
// query within what is left of the window's memory budget, and counts
// it against the budget when the window keeps it. So a target that
// serves profiles costly to decode, each within the limit, costs the
// window no more than the limit: its later snapshots fail instead. The
// errors say which profile, from where.
func (c *collector) parseFetched(name string, query url.Values, raw []byte, keep bool) (*profile.Profile, int64, error) {
	lim := c.cfg.limits
	budget := cmp.Or(lim.MaxDecoded, pprofx.DefaultMaxDecoded)
	held := c.held.Load()
	lim.MaxDecoded = max(budget-held, 1)
	p, decoded, err := pprofx.ParseWithin(raw, lim)
	var tl *pprofx.TooLargeError
	if errors.As(err, &tl) && tl.Decoded && held > 0 {
		err = fmt.Errorf("%w left of the %d bytes the window's profiles may take", err, budget)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read %s profile from %s: %w", kindOf(name), c.profileURL(name, query), err)
	}
	if keep {
		c.held.Add(decoded)
	}
	return p, decoded, nil
}

// profileURL is the URL of a profile for errors, without user
// information.
func (c *collector) profileURL(name string, query url.Values) string {
	u := c.cfg.pprofURL + name
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u
}

func (c *collector) memStats(ctx context.Context) (gcstats.MemStats, time.Time, error) {
	at := c.cfg.now()
	// A second forced GC: sync.Pool keeps what it holds through one, so
	// after the heap profile's GC alone the live heap still counts the
	// pools' buffers, more of them just after load changes (connections
	// closing put theirs back); after two it is what the program keeps.
	ms, err := c.cfg.fetcher.MemStats(ctx, true)
	return ms, at, err
}

// findProcess looks for the target's process on this machine. A PID given
// by the user must exist; one looked up by port is a bonus.
func (c *collector) findProcess() error {
	p := c.cfg.proc
	pid, port := c.cfg.PID, 0
	if pid > 0 {
		if _, err := p.Status(pid); err != nil {
			return fmt.Errorf("read process %d given by --pid: %w", pid, err)
		}
	} else {
		u, err := target.ParseBaseURL(c.cfg.Target.BaseURL)
		if err != nil {
			return err
		}
		var ok bool
		if port, ok = target.LoopbackPort(u); !ok {
			return nil
		}
		pid, err = p.ListeningPID(port)
		if err != nil {
			c.warn("find the process listening on port %d: %v; RSS comes from /metrics if the target serves it (or give --pid)", port, err)
			return nil
		}
	}
	// The uptime first: it goes with the MemStats just read, for the
	// window's GC CPU share.
	up, upErr := p.Uptime(pid)
	bi, err := p.BuildInfo(pid)
	switch {
	case err != nil && c.cfg.PID == 0:
		// Whatever listens on the port is not a Go program: a proxy or
		// a sidecar in front of the service. Its memory is not the
		// target's.
		c.warn("process %d listening on port %d has no Go build info (%v): a proxy in front of the service? its RSS is left out; give --pid to use it anyway", pid, port, err)
		return nil
	case err != nil:
		c.warn("read build info of process %d: %v", pid, err)
	default:
		c.proc.buildInfo = bi
	}
	c.proc.pid = pid
	c.proc.readProc = true
	if env, err := p.GoEnv(pid); err != nil {
		c.warn("read environment of process %d: %v", pid, err)
	} else {
		c.proc.env = env.Set()
	}
	if upErr != nil {
		c.warn("read uptime of process %d: %v; GC CPU share is the process' lifetime figure", pid, upErr)
	} else {
		c.proc.uptimeStart = up
	}
	return nil
}

// window runs the load, the timed profiles and the snapshots until the
// window ends or ctx is cancelled.
func (c *collector) window(ctx context.Context) {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	seconds := int(c.cfg.Duration / time.Second)

	timed := c.cfg.Extra
	if c.cfg.CPU {
		timed = append([]string{"profile"}, timed...)
	}
	var timedMu sync.Mutex
	var timedWG sync.WaitGroup
	c.extra = map[string][]byte{}
	for _, name := range timed {
		if seconds < 1 {
			c.warn("%s profile skipped: it needs a window of at least 1s", kindOf(name))
			continue
		}
		c.timedRunning.Add(1)
		timedWG.Go(func() {
			query := url.Values{"seconds": {strconv.Itoa(seconds)}}
			raw, err := c.cfg.fetcher.Profile(wctx, name, query)
			c.timedRunning.Add(-1)
			if err == nil && !c.cfg.Lean {
				_, _, err = c.parseFetched(name, query, raw, false)
			}
			if err != nil {
				if ctx.Err() != nil {
					err = fmt.Errorf("%w before the window ended", ErrInterrupted)
				}
				c.fails.add(kindOf(name)+" profile", err)
				return
			}
			timedMu.Lock()
			defer timedMu.Unlock()
			if name == "profile" {
				c.cpu = raw
			} else {
				c.extra[name] = raw
			}
		})
	}

	wg.Go(timedWG.Wait)

	c.startTrace(ctx, wctx, &wg)

	// The load stops with the window, which may outlast Duration.
	endLoad := make(chan struct{})
	stopLoad := sync.OnceFunc(func() { close(endLoad) })
	defer stopLoad()
	if c.cfg.Load != nil {
		wg.Go(func() {
			opts := c.cfg.loadOptions(func(p load.Progress) {
				c.sent.Store(p.Requests)
				c.errored.Store(p.Errors)
			})
			opts.Stop = endLoad
			res, err := load.Run(wctx, opts)
			if err != nil {
				c.fails.add("load", err)
				return
			}
			c.load = &res
		})
	}

	done := make(chan struct{})
	if c.cfg.Progress != nil {
		var pwg sync.WaitGroup
		pwg.Go(func() { c.reportProgress(done) })
		defer pwg.Wait()
	}
	defer close(done)

	c.takeSnapshots(wctx)
	if c.cfg.UntilConfident {
		// The load was asked for MaxDuration: it ends with the window,
		// and not before Duration (the last snapshot may come a little
		// earlier, inside the timed profiles).
		if !c.interrupted {
			c.extend(wctx)
			c.waitUntil(wctx, c.startTime.Add(c.cfg.Duration))
		}
		stopLoad()
	}
	if c.interrupted {
		stop()
	}
	wg.Wait()
	c.endTime = c.cfg.now()
}

func kindOf(endpoint string) string {
	if endpoint == "profile" {
		return "cpu"
	}
	return endpoint
}

// reportProgress reports the window's progress every 200 ms, and once
// more when done is closed: a window's progress ends at its end even when
// the ticks were starved of CPU (the last report of one window is where
// the next one's, under Repeat, begins).
func (c *collector) reportProgress(done <-chan struct{}) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	report := func() {
		elapsed := min(c.cfg.now().Sub(c.startTime), c.cfg.Duration)
		c.cfg.Progress(Progress{Elapsed: elapsed, Total: c.cfg.Duration, Requests: c.sent.Load(), Errors: c.errored.Load()})
	}
	for {
		select {
		case <-done:
			report()
			return
		case <-tick.C:
			report()
		}
	}
}

// takeSnapshots takes the heap snapshots after the first, each at its offset
// from the start, and MemStats with the last. When ctx ends early it still
// takes the last one, so an interrupted window keeps a delta.
func (c *collector) takeSnapshots(ctx context.Context) {
	offsets := c.cfg.snapshotOffsets()
	for i, off := range offsets[1:] {
		last := i == len(offsets)-2
		if last && (c.cfg.CPU || len(c.cfg.Extra) > 0) {
			// The target holds a timed profile's buffers (about 1 MiB for
			// a CPU profile) while it runs, and releases them as the
			// window ends: the last snapshot is taken just before, so
			// every snapshot from the second on sees them, rather than
			// the last one alone catching their release.
			off -= min(lastSnapshotLead, (off-offsets[i])/4)
		}
		if !c.waitUntil(ctx, c.startTime.Add(off)) {
			c.interrupted = true
			c.fails.add("window", fmt.Errorf("%w after %s of %s", ErrInterrupted, c.cfg.now().Sub(c.startTime).Round(time.Millisecond), c.cfg.Duration))
			last = true
		}
		sctx := ctx
		if c.interrupted {
			var cancel context.CancelFunc
			sctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
			defer cancel()
			off = c.cfg.now().Sub(c.startTime)
		}
		snap, err := c.snapshot(sctx, off)
		if err != nil {
			c.fails.add(fmt.Sprintf("heap snapshot at %s", off.Round(time.Millisecond)), err)
		} else {
			if snap.memErr != nil && !last && !c.memFailed {
				c.memFailed = true
				c.warn("MemStats with the heap snapshot at +%s: %v; the live heap series has a gap", off.Round(time.Millisecond), snap.memErr)
			}
			c.addGoroutines(sctx, &snap)
			c.snaps = append(c.snaps, snap)
		}
		if last {
			ms, at, err := snap.mem, snap.memAt, snap.memErr
			if snap.mem == nil && err == nil {
				// The snapshot itself failed: MemStats alone may still
				// come.
				var m gcstats.MemStats
				m, at, err = c.memStats(sctx)
				ms = &m
			}
			if err != nil {
				c.fails.add("memstats at end", err)
			} else {
				c.memEnd, c.memEndAt, c.haveMemEnd = *ms, at, true
				if c.proc.readProc {
					if up, err := c.cfg.proc.Uptime(c.proc.pid); err == nil {
						c.proc.uptimeEnd = up
					}
				}
			}
			return
		}
	}
}

// extend keeps the window open while the exact live heap grows steadily
// and the samples cannot yet place the growth: one more snapshot every
// snapshot interval, until they can or MaxDuration has passed.
func (c *collector) extend(ctx context.Context) {
	offsets := c.cfg.snapshotOffsets()
	step := offsets[len(offsets)-1] - offsets[len(offsets)-2]
	for off := offsets[len(offsets)-1] + step; off <= c.cfg.MaxDuration; off += step {
		pl := c.placement()
		if !pl.Grows || pl.Placed {
			return
		}
		if c.extendedBy == 0 {
			c.extendedFrom = pl
		}
		if !c.waitUntil(ctx, c.startTime.Add(off)) {
			return // the user stopped the run: the window ends here
		}
		snap, err := c.snapshot(ctx, off)
		if err != nil || snap.mem == nil {
			c.warn("extra heap snapshot at %s: %v; the window ends at the last one taken", off.Round(time.Millisecond), cmp.Or(err, snap.memErr))
			return
		}
		c.addGoroutines(ctx, &snap)
		c.snaps = append(c.snaps, snap)
		c.memEnd, c.memEndAt, c.haveMemEnd = *snap.mem, snap.memAt, true
		if c.proc.readProc {
			if up, err := c.cfg.proc.Uptime(c.proc.pid); err == nil {
				c.proc.uptimeEnd = up
			}
		}
		c.extendedBy = off - offsets[len(offsets)-1]
	}
}

// liveBytes is the service's live heap at the snapshot: HeapAlloc right
// after the forced GCs. What heapscope's own timed profiles hold in the
// target while they run is in it; the leak check takes out the step
// where that changes (snapshot.profiling), as a sampled estimate of it
// would be off by a sample or two.
func (s snapshot) liveBytes() uint64 { return s.mem.HeapAlloc }

// lastSnapshotLead is how long before the timed profiles end the window's
// last snapshot is taken.
const lastSnapshotLead = 250 * time.Millisecond

// placement judges the snapshots so far as the leak check will.
func (c *collector) placement() diagnose.Placement {
	if c.cfg.Lean {
		c.decodeSnapshots()
	}
	in := diagnose.Input{FirstUnderLoad: firstUnderLoad(c.cfg.Load != nil, c.cfg.Warmup.Seconds())}
	for i, s := range c.snaps {
		if s.mem == nil {
			return diagnose.Placement{}
		}
		in.Heap = append(in.Heap, diagnose.Profile{Name: snapshotFile(i), Time: s.at, Profile: s.profile})
		in.Live = append(in.Live, diagnose.Live{Bytes: s.liveBytes(), Objects: s.mem.HeapObjects, Profiling: s.profiling})
	}
	if c.proc.readProc {
		// As the diagnosis will: the source names a holder's line.
		in.Source = &SourceFiles{}
	}
	return diagnose.Place(in)
}

// waitUntil sleeps until t and reports false when ctx ends first.
func (c *collector) waitUntil(ctx context.Context, t time.Time) bool {
	return clock.SleepUntil(ctx, t, c.cfg.now)
}

// finish collects what belongs to the window's end: goroutines and memory
// as the kernel sees it.
func (c *collector) finish(ctx context.Context) {
	if c.interrupted {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		defer cancel()
	}
	if raw, err := c.cfg.fetcher.Profile(ctx, "goroutine", nil); err != nil {
		c.fails.add("goroutine profile", err)
	} else if c.cfg.Lean {
		c.goroutine = raw // checked with the rest after the window
	} else if _, _, err := c.parseFetched("goroutine", nil, raw, false); err != nil {
		c.fails.add("goroutine profile", err)
	} else {
		c.goroutine = raw
	}
	if c.proc.readProc {
		c.readProcEnd()
		return
	}
	body, err := c.cfg.fetcher.Metrics(ctx)
	if err != nil {
		if !errors.Is(err, target.ErrNotFound) {
			c.warn("read RSS from /metrics: %v", err)
		}
		return
	}
	if rss, ok := target.ResidentMemory(body); ok {
		c.proc.metricsRSS, c.proc.haveMetricsRSS = rss, true
	}
}

func (c *collector) readProcEnd() {
	p, pid := c.cfg.proc, c.proc.pid
	st, err := p.Status(pid)
	if err != nil {
		c.fails.add("rss", err)
		c.proc.endError = "it had exited"
		if !errors.Is(err, fs.ErrNotExist) {
			c.proc.endError = err.Error()
		}
		return
	}
	c.proc.status = &st
	// The mappings stream through the classifier of heapscope rss; an
	// unreadable /proc/PID/exe leaves it to take the first file mapped.
	exe, _ := p.Exe(pid)
	cl := rss.Classifier{Exe: exe}
	if err := p.ScanSmaps(pid, cl.Add); err != nil {
		c.warn("read smaps of process %d: %v", pid, err)
	} else {
		res := cl.Result()
		hm := res.Heap(c.memEnd.HeapSys)
		c.proc.heapMappings = &hm
		c.proc.mappings = mappingKinds(&res)
	}
	if cg, err := p.Cgroup(pid); err != nil {
		c.warn("read cgroup of process %d: %v", pid, err)
	} else {
		c.proc.cgroup = &cg
	}
}

// mappingNames names rss's kinds in result.json.
var mappingNames = map[rss.Kind]string{
	rss.KindGoHeap:   result.MappingGoHeap,
	rss.KindStack:    result.MappingStack,
	rss.KindAnon:     result.MappingAnon,
	rss.KindReserved: result.MappingReserved,
	rss.KindBinary:   result.MappingBinary,
	rss.KindLibrary:  result.MappingLibraries,
	rss.KindFile:     result.MappingFiles,
}

// mappingKinds turns a classification into result.json's per-kind sums,
// in rss's order, leaving out kinds without a mapping.
func mappingKinds(cl *rss.Classification) []result.MappingKind {
	var out []result.MappingKind
	for k := rss.KindGoHeap; k <= rss.KindFile; k++ {
		u := cl.Kind(k)
		if u.Mappings == 0 {
			continue
		}
		out = append(out, result.MappingKind{Kind: mappingNames[k], Count: u.Mappings, SizeBytes: u.SizeBytes, RSSBytes: u.RSSBytes, PSSBytes: u.PSSBytes, SwapBytes: u.SwapBytes})
	}
	return out
}
