package load

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Generator drives the load that Options describe. New compiles the
// requests once; Run may be called more than once, each call a fresh run
// with fresh connections.
type Generator struct {
	opts    Options
	targets []*target
	sched   Schedule

	// newClient and sleeper replace HTTP and the pacer's sleep in tests.
	newClient func() client
	sleeper   func() sleeper
}

// New fills the defaults of opts, validates it (Options.Validate) and
// compiles its requests, reading the files of their {pick:FILE}
// placeholders. Its errors are one line.
func New(opts Options) (*Generator, error) {
	opts.SetDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{opts: opts, sched: Schedule{Rate: opts.Rate, Ramp: opts.Ramp}}
	for i, r := range opts.Targets {
		t, err := r.compile(opts.ReadFile)
		if err != nil {
			if len(opts.Targets) > 1 {
				return nil, fmt.Errorf("load request %d: %w", i+1, err)
			}
			return nil, fmt.Errorf("load request: %w", err)
		}
		switch opts.Protocol {
		case ProtocolHTTP2:
			t.std = true
		case ProtocolAuto:
			t.std = t.tls
		}
		g.targets = append(g.targets, t)
	}
	g.newClient = func() client { return newHTTPClient(&g.opts, g.targets) }
	g.sleeper = func() sleeper { return &timerSleeper{} }
	return g, nil
}

// Run validates opts and runs the load; see Generator.Run.
func Run(ctx context.Context, opts Options) (Result, error) {
	g, err := New(opts)
	if err != nil {
		return Result{}, err
	}
	return g.Run(ctx)
}

// Run sends the load and returns what happened. It first checks that every
// target's address accepts connections; an unreachable one is its only
// error. Then it runs until Duration has elapsed or MaxRequests were sent,
// and the outstanding requests have completed or timed out; with a
// Duration, those still outstanding EndGrace after its end are cancelled
// (ErrorKindUnfinished), so a stalled service cannot hold the run past
// Duration plus EndGrace. A target that fails during the run shows in the
// Result's errors.
//
// When ctx ends, Run stops sending at once, fails the outstanding requests
// (ErrorKindCanceled) and returns the results so far with Interrupted set
// and a nil error: the caller decides what an interrupted run means.
func (g *Generator) Run(ctx context.Context) (Result, error) {
	opts := &g.opts
	cl := g.newClient()
	defer cl.close()
	if err := cl.check(ctx); err != nil {
		return Result{}, fmt.Errorf("load %s: %w", opts.Targets[0].URL, err)
	}

	r := &runner{g: g, ctx: ctx, cl: cl, stop: make(chan struct{}), paceStop: make(chan struct{}), openedBefore: cl.opened()}
	ready := r.warmWorkers()
	start := time.Now()
	r.start, r.rec = start, newRecorder(start, opts.Series, opts.Rate > 0)
	finished := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() { r.watch(finished) })
	if opts.Progress != nil {
		bg.Go(func() { r.reportProgress(finished) })
	}

	var workers sync.WaitGroup
	if opts.Rate > 0 {
		r.pace(&workers, ready)
	} else {
		r.closed(&workers, ready)
	}
	workers.Wait()
	end := time.Now()
	close(finished)
	bg.Wait()

	res := g.result(r, end)
	if opts.Progress != nil {
		p := r.rec.progress(res.Elapsed)
		p.Duration, p.MaxRequests = opts.Duration, opts.MaxRequests
		opts.Progress(p)
	}
	return res, nil
}

// runner is the state of one run.
type runner struct {
	g     *Generator
	ctx   context.Context
	cl    client
	start time.Time
	rec   *recorder

	// stop is closed when no more requests may be sent: the window ended
	// or ctx did. paceStop is the open model's pacer's, closed BehindLag
	// after the window's end.
	stop, paceStop chan struct{}
	stopAt         time.Time // when stop was closed
	// windowEnd is when the window ended, by Duration or Stop; set before
	// windowEnded.
	windowEnd   time.Time
	windowEnded atomic.Bool
	interrupted atomic.Bool
	// cut is set when the requests outstanding EndGrace after the window's
	// end were cancelled.
	cut          atomic.Bool
	openedBefore uint64 // connections the reachability check opened
	dropped      uint64
	// atBound counts the open model's requests that fell due while
	// MaxInFlight requests were outstanding and had to wait for one.
	atBound uint64
	sendEnd time.Time // open model: the end of the schedule that ran
	started int       // open model: the workers started
}

// watch closes stop at the end of the window or when ctx ends, and aborts
// the outstanding requests when ctx ends before the run has finished, or
// EndGrace after the window's end. It closes paceStop with stop, except at
// the end of the window, when the open model's pacer gets BehindLag more
// to send the requests due in the window that wait for a worker: those are
// late, not dropped.
func (r *runner) watch(finished <-chan struct{}) {
	var window <-chan time.Time
	if d := r.g.opts.Duration; d > 0 {
		t := time.NewTimer(time.Until(r.start.Add(d)))
		defer t.Stop()
		window = t.C
	}
	select {
	case <-finished:
		r.stopAt = time.Now()
		close(r.stop)
		close(r.paceStop)
		return
	case <-window:
		r.stopAt = time.Now()
		r.windowEnd = r.start.Add(r.g.opts.Duration)
		r.windowEnded.Store(true)
		close(r.stop)
	case <-r.g.opts.Stop:
		r.stopAt = time.Now()
		r.windowEnd = r.stopAt
		r.windowEnded.Store(true)
		close(r.stop)
	case <-r.ctx.Done():
		r.stopAt = time.Now()
		r.interrupted.Store(true)
		close(r.stop)
		close(r.paceStop)
		r.cl.abort()
		return
	}
	grace := time.NewTimer(BehindLag)
	defer grace.Stop()
	end := time.NewTimer(EndGrace)
	defer end.Stop()
	pacing := true
	for {
		select {
		case <-finished:
			if pacing {
				close(r.paceStop)
			}
			return
		case <-grace.C:
			close(r.paceStop)
			pacing = false
		case <-end.C:
			r.cut.Store(true)
			r.cl.abort()
		case <-r.ctx.Done():
			r.interrupted.Store(true)
			if pacing {
				close(r.paceStop)
			}
			r.cl.abort()
			return
		}
	}
}

// pastWindow reports whether the window has ended before due: the grace
// after its end is for requests due inside it that wait for a worker, not
// for the schedule to run on.
func (r *runner) pastWindow(due time.Time) bool {
	// windowEnd is written before stop is closed.
	return r.stopped() && r.windowEnded.Load() && due.After(r.windowEnd)
}

// stopped reports whether stop is closed.
func (r *runner) stopped() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

// worker is one sender: a session, a buffer for URLs and its shard of the
// recorder; in the open model, the channel its requests come through.
type worker struct {
	r       *runner
	sess    session
	buf     []byte
	rec     *shard // nil until its first request
	tickets chan ticket
}

func (r *runner) newWorker() *worker {
	return &worker{r: r, sess: r.cl.session(), buf: make([]byte, 0, 256)}
}

// warmWorkers makes the workers a run starts with, their connections open:
// the closed model's, and in the open model enough for a millisecond of
// requests (more start when needed).
func (r *runner) warmWorkers() []*worker {
	opts := &r.g.opts
	n := opts.Connections
	if opts.Rate > 0 {
		n = min(opts.MaxInFlight, int(math.Ceil(opts.Rate/1000))+1)
	}
	ws := make([]*worker, n)
	var wg sync.WaitGroup
	for i := range ws {
		ws[i] = r.newWorker()
		t := r.g.targets[i%len(r.g.targets)]
		wg.Go(func() { ws[i].sess.warm(t) })
	}
	wg.Wait()
	return ws
}

// send sends request seq, due at due (its send time in the closed model),
// records its outcome and returns its error kind and when it ended.
func (w *worker) send(seq uint64, due time.Time, closed bool) (errorKind, time.Time) {
	r := w.r
	targets := r.g.targets
	t := targets[seq%uint64(len(targets))]
	url := t.constURL
	if url == nil {
		w.buf = t.url.Expand(w.buf[:0], seq, uint64(r.g.opts.Seed))
		url = w.buf
	}
	if w.rec == nil {
		// Made here rather than with the worker: the closed model's event
		// loops record into shards of their own.
		w.rec = r.rec.shard()
	}
	sent := time.Now()
	w.rec.begin(sent)
	if closed {
		due = sent
	}
	status, h2, err := w.sess.send(r.ctx, t, url, sent)
	end := time.Now()
	kind := kindNone
	if err != nil {
		kind = classify(r.ctx, err)
		if kind != kindTimeout && kind != kindCanceled && r.cut.Load() {
			kind = kindUnfinished
		}
	}
	w.rec.record(due, sent, end, status, h2, kind)
	return kind, end
}

// refusedPause is how long a closed-model worker waits after a connection
// was refused.
const refusedPause = 10 * time.Millisecond

// closed runs the closed model: Connections workers, each sending its next
// request as soon as the last one has completed.
func (r *runner) closed(workers *sync.WaitGroup, ready []*worker) {
	if r.closedLoops(workers, ready) {
		return
	}
	var next atomic.Uint64
	limit := r.g.opts.MaxRequests
	var end time.Time
	if d := r.g.opts.Duration; d > 0 {
		end = r.start.Add(d)
	}
	for _, w := range ready {
		workers.Go(func() {
			now := time.Now()
			for !r.stopped() && (end.IsZero() || now.Before(end)) {
				seq := next.Add(1) - 1
				if limit > 0 && seq >= limit {
					return
				}
				var kind errorKind
				kind, now = w.send(seq, time.Time{}, true)
				switch kind {
				case kindCanceled:
					return
				case kindRefused, kindDNS:
					// Nothing to connect to: wait a little rather than
					// spin on a dead target.
					select {
					case <-r.stop:
					case <-time.After(refusedPause):
					}
				}
			}
		})
	}
}

// ticket is one request of the open model's schedule.
type ticket struct {
	seq uint64
	due time.Time
}

// spawnAfter is how long a due request waits for a busy worker to come
// back before the open model starts another: a worker that has just
// finished may not have run yet, and starting one for every such request
// would open connections the load does not need. It also paces the growth
// of the pool when the service stalls (one new connection per spawnAfter at
// most), because a service that stalls, flooded with new connections,
// recovers slower.
const spawnAfter = 200 * time.Microsecond

// idleWorkers is the open model's idle workers, last in first out: the
// workers that were busy most recently take the next requests, so that the
// connections the load does not need stay idle rather than all taking
// turns.
type idleWorkers struct {
	mu sync.Mutex
	ws []*worker
	// wake has a value when a worker came back since the pacer last
	// looked.
	wake chan struct{}
}

func (p *idleWorkers) push(w *worker) {
	p.mu.Lock()
	p.ws = append(p.ws, w)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *idleWorkers) pop() *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.ws)
	if n == 0 {
		return nil
	}
	w := p.ws[n-1]
	p.ws = p.ws[:n-1]
	return w
}

// pace runs the open model. It hands each request, at its intended time,
// to the idle worker that was busy last, starting a new one (up to
// MaxInFlight) when none has come back within spawnAfter; when all are busy
// it waits for one, and the request's latency counts the wait. A late
// wake-up hands out every overdue request at once, so delays never
// accumulate. Requests still waiting BehindLag after the window's end are
// dropped.
func (r *runner) pace(workers *sync.WaitGroup, ready []*worker) {
	opts := &r.g.opts
	n := opts.MaxRequests
	byWindow := false // whether the window, not MaxRequests, ends the schedule
	if opts.Duration > 0 {
		due := r.g.sched.Count(opts.Duration)
		if n == 0 || due <= n {
			n, byWindow = due, true
		}
	}
	idle := &idleWorkers{wake: make(chan struct{}, 1), ws: make([]*worker, 0, opts.MaxInFlight)}
	var started []*worker
	start := func(w *worker) {
		w.tickets = make(chan ticket, 1)
		started = append(started, w)
		workers.Go(func() {
			for tk := range w.tickets {
				w.send(tk.seq, tk.due, false)
				idle.push(w)
			}
		})
	}
	for _, w := range ready {
		start(w)
		idle.ws = append(idle.ws, w)
	}
	spawn := time.NewTimer(time.Hour)
	spawn.Stop()
	defer spawn.Stop()
	sleep := r.g.sleeper()
	var i uint64
loop:
	for ; i < n; i++ {
		due := r.start.Add(r.g.sched.At(i))
		if r.pastWindow(due) || !sleep.SleepUntil(due, r.paceStop) || r.pastWindow(due) {
			break
		}
		w := idle.pop()
		if w == nil {
			var spawnC <-chan time.Time
			if len(started) < opts.MaxInFlight {
				spawn.Reset(spawnAfter)
				spawnC = spawn.C
			} else {
				r.atBound++
			}
			for w == nil {
				select {
				case <-idle.wake:
					w = idle.pop()
				case <-spawnC:
					w = r.newWorker()
					start(w)
				case <-r.paceStop:
					break loop
				}
			}
			spawn.Stop()
		}
		w.tickets <- ticket{seq: i, due: due}
	}
	for _, w := range started {
		close(w.tickets)
	}
	r.started = len(started)
	r.sendEnd = time.Now()
	if i < n {
		// Stopped early: what was due by then and not sent is dropped.
		due := r.g.sched.Count(r.sendEnd.Sub(r.start))
		if r.windowEnded.Load() {
			due = r.g.sched.Count(r.windowEnd.Sub(r.start))
		}
		if due > i {
			r.dropped = min(due, n) - i
		}
	} else if at := r.start.Add(r.g.sched.At(n)); at.After(r.sendEnd) {
		// The schedule ran out on time: it spans until the next request
		// would have been due.
		r.sendEnd = at
	}
	if byWindow && i == n {
		// Keep the window its full length.
		<-r.stop
	}
}

// reportProgress calls Options.Progress until the run finishes.
func (r *runner) reportProgress(finished <-chan struct{}) {
	opts := &r.g.opts
	tick := time.NewTicker(opts.ProgressInterval)
	defer tick.Stop()
	for {
		select {
		case <-finished:
			return
		case <-tick.C:
			p := r.rec.progress(time.Since(r.start))
			p.Duration, p.MaxRequests = opts.Duration, opts.MaxRequests
			opts.Progress(p)
		}
	}
}

// result summarises a finished run.
func (g *Generator) result(r *runner, end time.Time) Result {
	opts := &g.opts
	res := Result{
		Model:       opts.Model(),
		Method:      g.targets[0].method,
		URL:         opts.Targets[0].URL,
		Targets:     len(g.targets),
		AskedRate:   opts.Rate,
		Ramp:        opts.Ramp,
		Connections: opts.Connections,
		MaxInFlight: opts.MaxInFlight,
		NoKeepAlive: opts.NoKeepAlive,
		Dropped:     r.dropped,
		Elapsed:     end.Sub(r.start),
		Interrupted: r.interrupted.Load(),
	}
	r.rec.fill(&res)
	if res.Model == ModelOpen {
		res.Connections = r.started
		res.AtBound = r.atBound
	}
	res.BytesIn, res.BytesOut = r.cl.bytes()
	res.Opened = r.cl.opened() - r.openedBefore
	switch {
	case res.Interrupted:
		// The workers can see ctx end before watch does: the run sent
		// until whichever came first.
		res.Duration = min(r.stopAt.Sub(r.start), res.Elapsed)
	case r.windowEnded.Load():
		res.Duration = r.windowEnd.Sub(r.start)
	case opts.Duration > 0 && res.Elapsed >= opts.Duration:
		res.Duration = opts.Duration
	case opts.Rate > 0:
		res.Duration = r.sendEnd.Sub(r.start)
	default:
		res.Duration = res.Elapsed
	}
	if res.Duration > 0 {
		res.Rate = float64(res.Requests) / res.Duration.Seconds()
	}
	if res.Model == ModelOpen {
		res.Behind = res.Dropped > 0 || res.Lag.P99 >= BehindLag
		if res.Behind && res.AtBound > 0 {
			res.HeldBack = HeldByMaxInFlight
		} else if res.Behind {
			res.HeldBack = HeldByGenerator
		}
	}
	return res
}

// sleeper is the pacer's clock: tests make it late.
type sleeper interface {
	// SleepUntil waits until t or until stop is closed, and reports whether
	// t was reached first. One goroutine calls it.
	SleepUntil(t time.Time, stop <-chan struct{}) bool
}

// timerSleeper sleeps on one timer, reset for every wait, so that pacing
// allocates nothing.
type timerSleeper struct {
	timer *time.Timer
}

func (s *timerSleeper) SleepUntil(t time.Time, stop <-chan struct{}) bool {
	d := time.Until(t)
	if d <= 0 {
		select {
		case <-stop:
			return false
		default:
			return true
		}
	}
	if s.timer == nil {
		s.timer = time.NewTimer(d)
	} else {
		s.timer.Reset(d)
	}
	select {
	case <-stop:
		s.timer.Stop()
		return false
	case <-s.timer.C:
		return true
	}
}
