package diagnose

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
)

// series of one site or stack across snapshots.
type series struct {
	at    site
	stack string // the stack's frames, for stack series (see key)
	// sample is a heap stack series' first sample, whose frames key
	// spells out when asked.
	sample *profile.Sample
	ys     []float64
}

// key returns a stack series' frames, one per line (stackKey): of a heap
// stack, spelt out on first use, as most are never asked for.
func (s *series) key() string {
	if s.stack == "" && s.sample != nil {
		s.stack = stackKey(frames(s.sample))
	}
	return s.stack
}

// heapSites is inuse_space per site and per stack across a series of heap
// snapshots.
type heapSites struct {
	// xs are the snapshots' times in minutes from the first.
	xs    []float64
	sites map[site]*series
	// stacks are the stacks of the first and the last snapshot, ys their
	// in-use bytes in each: which stacks grow at a site.
	stacks []*series
	// samples counts, per site and snapshot, the samples behind its
	// in-use bytes.
	samples map[site][]float64
	// large is, per site and snapshot, the in-use bytes in objects of
	// containerObjectBytes or more: a container's storage (holder.go).
	large map[site][]float64
	// period is the profiles' sampling period (MemProfileRate).
	period int64
	// siteOf caches the allocating site of the stacks addLarge saw, by
	// their hash.
	siteOf map[uint64]stackSite
}

// heapSites reads the heap snapshots into series, or says in a note why
// they are no series to check.
func (d *diagnosis) heapSites() (heapSites, bool) {
	heap := d.in.Heap
	th := d.th.Leak
	switch {
	case len(heap) == 0:
		return heapSites{}, false
	case !d.oneProcess || d.in.heap == nil:
		return heapSites{}, false // checkOneProcess or loadHeapOnce said why
	case len(heap) < th.MinSnapshots:
		d.note("leak check: %d heap snapshot(s), it needs at least %d of one process (give --snapshots %d or more)", len(heap), th.MinSnapshots, th.MinSnapshots)
		return heapSites{}, false
	}
	hs := heapSites{xs: make([]float64, len(heap)), sites: map[site]*series{}, samples: map[site][]float64{}, large: map[site][]float64{}, siteOf: map[uint64]stackSite{}}
	for i, h := range heap {
		hs.xs[i] = h.Time.Sub(heap[0].Time).Minutes()
	}
	if hs.xs[len(hs.xs)-1] <= 0 {
		d.note("leak check: the heap snapshots carry no times, so no rate can be measured")
		return heapSites{}, false
	}
	read := d.in.heap
	for i, snap := range read.snaps {
		if !snap.inuse {
			d.note("leak check: %s is not a heap profile (no inuse_space)", heap[i].Name)
			return heapSites{}, false
		}
		hs.period = max(hs.period, snap.period)
		for _, pt := range snap.points {
			at := read.frames.list[pt.frame].site()
			s := hs.sites[at]
			if s == nil {
				s = &series{at: at, ys: make([]float64, len(heap))}
				hs.sites[at] = s
			}
			s.ys[i] += pt.bytes
			if pt.samples >= 0 {
				if hs.samples[at] == nil {
					hs.samples[at] = make([]float64, len(heap))
				}
				hs.samples[at][i] += pt.samples
			}
		}
		if p := heap[i].Profile; p != nil {
			hs.addLarge(p, i, len(heap), d.stacks)
		}
	}
	hs.stacks = firstLastStacks(heap[0].Profile, heap[len(heap)-1].Profile, d.stacks)
	d.growingStacks = hs.stacks
	return hs, true
}

// firstLastStacks returns the stacks of two heap profiles with their
// in-use bytes in each (ys[0], ys[1]), the profiler's left out; none when
// either is missing.
func firstLastStacks(first, last *profile.Profile, sh *stackHasher) []*series {
	if first == nil || last == nil {
		return nil
	}
	// nil for a stack left out: the profiler's, or one without frames.
	byStack := map[uint64]*series{}
	var out []*series
	for i, p := range []*profile.Profile{first, last} {
		vi := index(p, pprofx.InuseSpace)
		if vi < 0 {
			return nil
		}
		for _, smp := range p.Sample {
			v := smp.Value[vi]
			if v == 0 {
				continue
			}
			h := sh.stack(smp)
			st, seen := byStack[h]
			if !seen {
				if fs := frames(smp); len(fs) > 0 && !fromProfiler(fs) {
					st = &series{at: allocatingSite(fs), sample: smp, ys: make([]float64, 2)}
					out = append(out, st)
				}
				byStack[h] = st
			}
			if st != nil {
				st.ys[i] += float64(v)
			}
		}
	}
	return out
}

// allocatingSite is the innermost frame outside the runtime's machinery,
// or the innermost frame when all are in it.
func allocatingSite(fs []frame) site {
	for _, f := range fs {
		if !isRuntime(f.function) {
			return f.site()
		}
	}
	return fs[0].site()
}

// addLarge adds the in-use bytes of snapshot i in objects of
// containerObjectBytes or more to the sites' large series. It reads the
// parsed profile: a sample's objects have one size (the runtime keeps a
// record per stack and size), which stacks merged by ReadStacks lose.
func (hs *heapSites) addLarge(p *profile.Profile, i, n int, sh *stackHasher) {
	vi, oi := index(p, pprofx.InuseSpace), index(p, pprofx.InuseObjects)
	if vi < 0 || oi < 0 {
		return
	}
	for _, s := range p.Sample {
		v, objects := s.Value[vi], s.Value[oi]
		if objects <= 0 || v/objects < containerObjectBytes {
			continue
		}
		h := sh.stack(s)
		at, seen := hs.siteOf[h]
		if !seen {
			if fs := frames(s); len(fs) > 0 && !fromProfiler(fs) {
				at = stackSite{site: allocatingSite(fs), ok: true}
			}
			hs.siteOf[h] = at
		}
		if !at.ok {
			continue
		}
		if hs.large[at.site] == nil {
			hs.large[at.site] = make([]float64, n)
		}
		hs.large[at.site][i] += float64(v)
	}
}

// stackSite is the allocating site of a stack, when it counts (ok).
type stackSite struct {
	site site
	ok   bool
}

// heapSeries is check 1: whether the heap grows steadily across the
// snapshots, decided on the exact live heap when known (live.go), else on
// the samples; and where, by site and stack.
func (d *diagnosis) heapSeries() {
	th := d.th.Leak
	hs, ok := d.heapSites()
	if !ok {
		return
	}
	if d.liveHeap(hs) {
		return
	}
	heap, xs, sites, stacks, period := d.in.Heap, hs.xs, hs.sites, hs.stacks, hs.period
	minGrowth := max(th.MinGrowthBytes, 2*float64(period))

	type leak struct {
		s   *series
		t   trend
		top *series // the stack that grows most at the site, first to last
		// topGrowth is its growth in bytes.
		topGrowth float64
		app       bool // some growing stack at the site runs through the service's code
	}
	var leaks []leak
	verdicts := map[verdict]int{}
	var warmest *series // the site that grew most, then held
	var warmestTrend trend
	for _, s := range sites {
		t := fitTrend(xs, s.ys)
		v := th.classify(t, minGrowth)
		verdicts[v]++
		switch {
		case v == steady:
			leaks = append(leaks, leak{s: s, t: t})
		case v == warmUp && (warmest == nil || t.growth > warmestTrend.growth):
			warmest, warmestTrend = s, t
		}
	}
	if warmest != nil {
		d.boundedGrowth(warmest.at, "inuse_space at "+warmest.at.where(), warmest.ys, warmestTrend)
	}
	for i := range leaks {
		// Which stack grows most at the site, first to last snapshot.
		for _, st := range stacks {
			if st.at != leaks[i].s.at {
				continue
			}
			g := st.ys[1] - st.ys[0]
			if leaks[i].top == nil || g > leaks[i].topGrowth || g == leaks[i].topGrowth && st.key() < leaks[i].top.key() {
				leaks[i].top, leaks[i].topGrowth = st, g
			}
			if g > 0 && d.stackHasApp(st.key()) {
				leaks[i].app = true
			}
		}
	}
	slices.SortFunc(leaks, func(a, b leak) int {
		if c := cmp.Compare(b.t.slope, a.t.slope); c != 0 {
			return c
		}
		return cmp.Compare(a.s.at.where(), b.s.at.where())
	})
	if len(leaks) == 0 {
		d.note("leak check: no site's inuse_space grows steadily across %d snapshots over %.1fs (growth below %s or not steady: %d warm-up, %d sawtooth, %d noise)",
			len(heap), xs[len(xs)-1]*60, humanize.Bytes(minGrowth), verdicts[warmUp], verdicts[sawtooth], verdicts[noise])
		return
	}
	headroom, limitName := d.headroom()
	for i, l := range leaks {
		if i == th.MaxSites {
			d.note("leak check: %d more growing site(s) left out", len(leaks)-i)
			break
		}
		ev := map[string]float64{
			"slope_bytes_per_minute": l.t.slope,
			"r2":                     l.t.r2,
			"growth_bytes":           l.t.growth,
			"first_bytes":            l.s.ys[0],
			"last_bytes":             l.s.ys[len(l.s.ys)-1],
			"snapshots":              float64(len(heap)),
			"window_seconds":         xs[len(xs)-1] * 60,
			"rising_steps_share":     l.t.rising,
		}
		if l.top != nil && l.t.growth > 0 {
			ev["stack_growth_bytes"] = l.topGrowth
			ev["stack_share_of_growth"] = min(max(l.topGrowth/(l.s.ys[len(l.s.ys)-1]-l.s.ys[0]), 0), 1)
		}
		sev := th.SlopeBytesPerMinute.of(l.t.slope)
		extra := ""
		if headroom > 0 {
			hours := headroom / l.t.slope / 60
			ev["hours_to_limit"] = hours
			ev["limit_headroom_bytes"] = headroom
			extra = fmt.Sprintf("; at this pace it uses the %s of headroom to the %s in %s", humanize.Bytes(headroom), limitName, humanize.Hours(hours))
			switch {
			case hours <= th.HighWithinHours:
				sev = High
			case hours <= th.MediumWithinHours:
				sev = max(sev, Medium)
			}
		}
		title := fmt.Sprintf("inuse_space grows %s/min at %s (R² %.2f over %d snapshots)%s", humanize.Bytes(l.t.slope), l.s.at.where(), l.t.r2, len(heap), extra)
		if !l.app {
			// No frame of the service's own code: connection buffers
			// and the like, which grow with the load's connections
			// while a short window warms up.
			sev = min(sev, Low)
			title += "; no frame of the service's code grows there: often per-connection state that follows the load"
		}
		fix := "memory allocated here stays reachable and keeps growing: find what holds it (a map, a slice or a cache that is only ever added to) and bound it — evict (LRU, TTL), cap its size, or delete entries when done"
		if l.top != nil && strings.Contains(l.top.key(), "\n") {
			fix += "; the growing stack is " + stackSummary(l.top.key())
		}
		f := newFinding("leak.inuse-growth", sev, l.s.at, title, ev, fix, l.t.confidence())
		d.asMapLeak(&f, l.s.at)
		d.add(f)
	}
}

// boundedGrowth reports a series that rose, then levelled (warm-up): a
// pool, a cache or the connections of the load filling to their working
// set. It is at most low: what bounds it holds it, and a leak keeps
// rising at its end. what names the series.
func (d *diagnosis) boundedGrowth(at site, what string, ys []float64, t trend) {
	plateau := ys[len(ys)-1]
	ev := map[string]float64{
		"first_bytes":              ys[0],
		"plateau_bytes":            plateau,
		"growth_bytes":             plateau - ys[0],
		"late_slope_bytes_per_min": t.lateSlope,
		"snapshots":                float64(len(ys)),
	}
	title := fmt.Sprintf("bounded growth: %s rose by %s, then levelled at %s (%s); growth that stops is not a leak",
		what, humanize.Bytes(plateau-ys[0]), humanize.Bytes(plateau), liveSeries(ys))
	fix := "nothing to fix if the plateau is the working set it should be: a sync.Pool, a cache with a bound, the buffers of the load's connections (one per concurrent client); if it is larger than it should be, bound what fills it (a cache's size, the pool's object size, the server's idle connections); capture again later to see that it holds"
	d.add(newFinding("growth.bounded", Low, at, title, ev, fix, 0.5))
}

// point adds v to the i-th point of the series at key, creating it with
// n points.
func point[K comparable](m map[K]*series, key K, at site, stack string, i, n int, v int64) {
	s := m[key]
	if s == nil {
		s = &series{at: at, stack: stack, ys: make([]float64, n)}
		m[key] = s
	}
	s.ys[i] += float64(v)
}

// stackHasApp reports whether a stack key holds a frame of the service's
// own code.
func (d *diagnosis) stackHasApp(key string) bool {
	for _, line := range strings.Split(key, "\n") {
		fn, _, _ := strings.Cut(line, " ")
		if d.app.is(fn) {
			return true
		}
	}
	return false
}

// stackKey identifies a stack by its frames, one per line, innermost
// first.
func stackKey(fs []frame) string {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(f.function)
		b.WriteByte(' ')
		b.WriteString(humanize.ShortFile(f.file))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(f.line, 10))
	}
	return b.String()
}

// stackSummary shows the innermost frames of a stack key on one line.
func stackSummary(key string) string {
	lines := strings.Split(key, "\n")
	if len(lines) > 4 {
		lines = append(lines[:4], "…")
	}
	for i, l := range lines {
		if fn, loc, ok := strings.Cut(l, " "); ok {
			lines[i] = humanize.ShortFunction(fn) + " " + loc
		}
	}
	return strings.Join(lines, " ← ")
}

// fromProfiler reports whether a stack is the pprof handlers' own work
// (answering heapscope), which is not the service's.
func fromProfiler(fs []frame) bool {
	for _, f := range fs {
		if pprofx.IsProfilerFunction(f.function) {
			return true
		}
	}
	return false
}

// headroom returns how much memory the process may still take before a
// known limit, and the limit's name: the cgroup's limit when it has one,
// else GOMEMLIMIT (a soft limit: the GC runs harder, then more often,
// near it). 0 when no limit is known.
func (d *diagnosis) headroom() (float64, string) {
	r := d.in.Run
	if r == nil {
		return 0, ""
	}
	if cg := r.RSS.Cgroup; cg != nil && !cg.Unlimited && cg.LimitBytes > 0 {
		used := cg.UsageBytes
		if used == 0 {
			used = r.RSS.RSSBytes
		}
		if used < cg.LimitBytes {
			return float64(cg.LimitBytes - used), "cgroup's " + humanize.Bytes(float64(cg.LimitBytes)) + " limit"
		}
	}
	if lim, ok := parseMemLimit(r.Target.Env["GOMEMLIMIT"]); ok {
		used := float64(r.MemStats.SysBytes - r.MemStats.HeapReleasedBytes)
		if float64(lim) > used {
			return float64(lim) - used, "GOMEMLIMIT of " + humanize.Bytes(float64(lim))
		}
	}
	return 0, ""
}

var memLimitRE = regexp.MustCompile(`^([0-9]+)(B|KiB|MiB|GiB|TiB)?$`)

// parseMemLimit reads GOMEMLIMIT's syntax: bytes with an optional IEC
// unit; "off" and garbage are no limit.
func parseMemLimit(s string) (uint64, bool) {
	m := memLimitRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	shift := map[string]uint{"": 0, "B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}[m[2]]
	if n > math.MaxUint64>>shift {
		return 0, false
	}
	return n << shift, n > 0
}

// goroutineSeries is check 2: goroutines per stack that grow steadily
// across goroutine profiles.
func (d *diagnosis) goroutineSeries() {
	gs := d.in.Goroutines
	th := d.th.Goroutines
	switch {
	case len(gs) == 0:
		return
	case len(gs) < th.MinSnapshots:
		d.note("goroutine leak check: %d goroutine profile(s), it needs at least %d of one process", len(gs), th.MinSnapshots)
		return
	}
	xs := make([]float64, len(gs))
	for i := 1; i < len(gs); i++ {
		if !gs[i].Time.After(gs[i-1].Time) {
			d.note("goroutine leak check: goroutine profiles %s and %s are not in time order (or carry no time): not a series of one process", gs[i-1].Name, gs[i].Name)
			return
		}
		xs[i] = gs[i].Time.Sub(gs[0].Time).Minutes()
	}
	stacks := map[string]*series{}
	totals := make([]float64, len(gs))
	for i, g := range gs {
		vi := index(g.Profile, "goroutine")
		if vi < 0 {
			d.note("goroutine leak check: %s is not a goroutine profile", g.Name)
			return
		}
		for _, s := range g.Profile.Sample {
			fs := frames(s)
			if len(fs) == 0 {
				continue
			}
			totals[i] += float64(s.Value[vi])
			key := stackKey(fs)
			point(stacks, key, d.goroutineSite(fs), key, i, len(gs), s.Value[vi])
		}
	}
	type leak struct {
		s *series
		t trend
	}
	var leaks []leak
	for _, s := range stacks {
		t := fitTrend(xs, s.ys)
		if th.classify(t, th.MinGrowth) == steady {
			leaks = append(leaks, leak{s, t})
		}
	}
	if len(leaks) == 0 {
		d.note("goroutine leak check: no stack's goroutines grow steadily across %d profiles (%s → %s goroutines)", len(gs), humanize.Count(totals[0]), humanize.Count(totals[len(totals)-1]))
		return
	}
	slices.SortFunc(leaks, func(a, b leak) int {
		if c := cmp.Compare(b.t.slope, a.t.slope); c != 0 {
			return c
		}
		return cmp.Compare(a.s.stack, b.s.stack)
	})
	tt := fitTrend(xs, totals)
	for i, l := range leaks {
		if i == th.MaxStacks {
			d.note("goroutine leak check: %d more growing stack(s) left out", len(leaks)-i)
			break
		}
		blocked := blockedIn(l.s.stack)
		grew := l.s.ys[len(l.s.ys)-1] - l.s.ys[0]
		// The load's connections, and a few more: the collector's own
		// (profiles fetched while the load runs) and other clients'.
		if conns := d.loadConnections(); serverConnection(l.s.stack) && conns > 0 && grew <= conns+otherClientConnections {
			d.note("goroutine leak check: goroutines of the server's HTTP connections at %s grew %s → %s while the load opened %s connections: one per open client connection (the load's, and up to 16 of the collector's and other clients'), not a leak",
				l.s.at.where(), humanize.Count(l.s.ys[0]), humanize.Count(l.s.ys[len(l.s.ys)-1]), humanize.Count(conns))
			continue
		}
		ev := map[string]float64{
			"goroutines_per_minute": l.t.slope,
			"r2":                    l.t.r2,
			"first_goroutines":      l.s.ys[0],
			"last_goroutines":       l.s.ys[len(l.s.ys)-1],
			"total_first":           totals[0],
			"total_last":            totals[len(totals)-1],
			"total_per_minute":      tt.slope,
			"profiles":              float64(len(gs)),
		}
		title := fmt.Sprintf("goroutines %s at %s grow %.1f/min (%s → %s, R² %.2f)", blocked, l.s.at.where(), l.t.slope, humanize.Count(l.s.ys[0]), humanize.Count(l.s.ys[len(l.s.ys)-1]), l.t.r2)
		if d.requests > 0 {
			// One left behind per this many requests: what a user can
			// match with a code path.
			per := (l.s.ys[len(l.s.ys)-1] - l.s.ys[0]) / d.requests
			ev["goroutines_per_request"] = per
			title += fmt.Sprintf("; %s per request over %s requests", humanize.Count(per), humanize.Count(d.requests))
		}
		fix := "each of these goroutines waits forever: give the wait a way out — a context with a deadline or cancellation checked in a select, a channel that is closed when the work ends, a buffered channel so the sender does not block when nobody receives; the stack is " + stackSummary(l.s.stack)
		if serverConnection(l.s.stack) {
			fix = "these are the server's HTTP connections waiting for their next request, one per open client connection: they grow with the clients' connections, and idle ones stay until closed — set http.Server's IdleTimeout (and ReadHeaderTimeout), and check that clients reuse their connections rather than open new ones; the stack is " + stackSummary(l.s.stack)
		}
		d.add(newFinding("leak.goroutine-growth", th.PerMinute.of(l.t.slope), l.s.at, title, ev, fix, l.t.confidence()))
	}
}

// otherClientConnections is how many connections to the service, beyond
// the load's, a run lets pass as clients' rather than a leak: the
// collector's own (a few profile fetches at once, kept alive between
// snapshots) and those of other clients of a service under test.
const otherClientConnections = 16

// serverConnection reports whether a goroutine stack is one of net/http's
// per-connection goroutines waiting for the connection's next bytes: the
// connection's serve loop reading a request or, idle between two, peeking
// for the next (no handler on the stack), or its background read while a
// handler runs. There is one per open client connection.
func serverConnection(stack string) bool {
	if !strings.Contains(stack, "internal/poll.runtime_pollWait") {
		return false
	}
	if strings.Contains(stack, "net/http.(*conn).readRequest") || strings.Contains(stack, "net/http.(*connReader).backgroundRead") {
		return true
	}
	return strings.Contains(stack, "net/http.(*conn).serve") && !strings.Contains(stack, "ServeHTTP")
}

// loadConnections is how many client connections the run's load had open
// at most: those it opened, or its workers when it reused them; 0 without
// a load.
func (d *diagnosis) loadConnections() float64 {
	if d.in.Run == nil || d.in.Run.Load == nil {
		return 0
	}
	l := d.in.Run.Load
	return float64(max(l.Opened, uint64(l.Connections)))
}

// goroutineSite is where a goroutine waits in the service's own code: the
// innermost frame outside the runtime and the standard library, else the
// innermost outside the runtime.
func (d *diagnosis) goroutineSite(fs []frame) site {
	if f, ok := d.app.firstApp(fs); ok {
		return f.site()
	}
	for _, f := range fs {
		if !isRuntime(f.function) {
			return f.site()
		}
	}
	return fs[0].site()
}

// blockedIn says what a goroutine stack waits on, from its innermost
// frames.
func blockedIn(stack string) string {
	waits := []struct{ fn, what string }{
		{"runtime.chanrecv", "blocked receiving from a channel"},
		{"runtime.chansend", "blocked sending on a channel"},
		{"runtime.selectgo", "blocked in a select"},
		{"runtime.block", "blocked forever (select {})"},
		{"sync.(*Mutex).Lock", "waiting for a mutex"},
		{"sync.(*RWMutex)", "waiting for a read-write mutex"},
		{"sync.(*WaitGroup).Wait", "waiting on a WaitGroup"},
		{"sync.(*Cond).Wait", "waiting on a sync.Cond"},
		{"internal/poll.runtime_pollWait", "waiting on network or file I/O"},
		{"time.Sleep", "sleeping"},
		{"runtime.semacquire", "waiting on a semaphore"},
	}
	for _, line := range strings.Split(stack, "\n") {
		fn, _, _ := strings.Cut(line, " ")
		for _, w := range waits {
			if strings.HasPrefix(fn, w.fn) {
				return w.what
			}
		}
		if !isRuntime(fn) {
			break
		}
	}
	return "running or runnable"
}

// mapHolder says whether a growing site's line inserts into a map: from
// the source line, or a runtime.mapassign frame under it in the CPU
// profile. When it does, the leak finding at the site leads with the map
// (one finding per cause): what it saw, the evidence to add, and how
// sure it is, as a share of the growth's own confidence.
func (d *diagnosis) mapHolder(at site) (how string, ev map[string]float64, sure float64, ok bool) {
	src, haveSrc := d.sourceLine(at)
	insert := haveSrc && mapInsertRE.MatchString(src)
	cpu := d.cpuUnder(at, "runtime.mapassign")
	if !insert && cpu == 0 {
		return "", nil, 0, false
	}
	ev = map[string]float64{}
	how, sure = "a runtime.mapassign frame under the line in the CPU profile", 0.6
	if insert {
		code, _, _ := strings.Cut(src, "//")
		how, sure = "the line inserts into it: "+strings.TrimSpace(code), 1
	}
	if cpu > 0 {
		ev["mapassign_cpu_seconds"] = cpu
	}
	return how, ev, sure, true
}

// unboundedMapFix is the fix of a leak held by a map.
const unboundedMapFix = "bound the map: evict least-recently-used entries (container/list + map for O(1) LRU), expire entries by age, cap the number of keys, or delete keys when their work ends; a map never shrinks its buckets, so rebuild it after a large purge"

// asMapLeak names the map in a leak finding at a site whose line inserts
// into one: the title leads with it, the fix is the map's. One finding
// for the one cause, with the leak's id.
func (d *diagnosis) asMapLeak(f *result.Finding, at site) {
	if !d.app.is(at.function) {
		// A library's private map is not the user's to bound: the
		// finding's advice is aimed at their side (outsideFix).
		return
	}
	how, ev, sure, ok := d.mapHolder(at)
	if !ok {
		return
	}
	f.Title = fmt.Sprintf("a map that only grows (%s): %s", how, f.Title)
	maps.Copy(f.Evidence, ev)
	f.Fix = unboundedMapFix
	f.Confidence = math.Round(f.Confidence*sure*100) / 100
}

// mapInsertRE matches an assignment to an indexed expression: m[k] = v,
// m[k] = append(m[k], …), m[k]++ (a slice element assignment too, which
// the growth of the site tells apart).
var mapInsertRE = regexp.MustCompile(`[\w\.\)]\[[^\]]+\]\s*(=[^=]|\+\+|\+=)`)

// cpuUnder returns the CPU seconds of samples where fn (a function name
// prefix) is called directly, through runtime frames only, from the line
// at.
func (d *diagnosis) cpuUnder(at site, fn string) float64 {
	p := d.in.CPU
	vi := index(p, "cpu")
	if vi < 0 {
		return 0
	}
	var ns int64
	for _, s := range p.Sample {
		if callerOf(frames(s), fn) == at {
			ns += s.Value[vi]
		}
	}
	return float64(ns) / 1e9
}

// callerOf returns the first frame outside the runtime above a frame
// whose function starts with fn, or the zero site when fn is not in the
// stack's runtime prefix.
func callerOf(fs []frame, fn string) site {
	found := false
	for _, f := range fs {
		switch {
		case strings.HasPrefix(f.function, fn):
			found = true
		case isRuntime(f.function):
		case found:
			return f.site()
		default:
			return site{}
		}
	}
	return site{}
}
