package run

import (
	"fmt"
	"runtime"
	"sort"
	"time"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rss"
	"github.com/heapscope/heapscope/internal/target"
)

// Names of the files inside a run directory.
const (
	reportFile     = "report.md"
	memStatsFile   = "memstats.json"
	loadFile       = "load.json"
	profilesDir    = "profiles"
	allocDeltaFile = "profiles/allocs-delta.pb.gz"
	cpuFile        = "profiles/cpu.pb.gz"
	goroutineFile  = "profiles/goroutine.pb.gz"
)

func snapshotFile(i int) string { return fmt.Sprintf("profiles/heap-%03d.pb.gz", i) }

// goroutineSnapshotFile is the goroutine profile taken with heap snapshot i.
func goroutineSnapshotFile(i int) string { return fmt.Sprintf("profiles/goroutine-%03d.pb.gz", i) }

func extraFile(name string) string { return "profiles/" + name + ".pb.gz" }

// minSuccessRatio is the share of successful requests below which the
// per-request figures come with a warning.
const minSuccessRatio = 0.9

// timeFormat is how times appear in the semantics labels.
const timeFormat = "15:04:05.000Z"

// summarise turns what was collected into the result, deriving the
// window's allocation profile on the way.
func (c *collector) summarise() (*result.Run, *profile.Profile) {
	cfg := c.cfg
	res := &result.Run{
		SchemaVersion: result.SchemaVersion,
		Heapscope:     result.Tool{Version: cfg.Version, GoVersion: runtime.Version()},
		Target:        c.targetInfo(),
		Findings:      []result.Finding{},
	}
	first := c.snaps[0]
	last := c.snaps[len(c.snaps)-1]
	end := c.endTime
	if len(c.snaps) > 1 {
		end = last.at
	}
	res.Window = result.Window{
		Start:           first.at.UTC(),
		End:             end.UTC(),
		DurationSeconds: end.Sub(first.at).Seconds(),
		ForcedGCs:       len(c.snaps),
		WarmupSeconds:   c.cfg.Warmup.Seconds(),
	}
	if len(c.snaps) > 1 {
		res.Window.ProfilerAllocatedBytes = last.profilerAlloc - first.profilerAlloc
	}
	if c.extendedBy > 0 {
		res.Window.ExtendedSeconds = c.extendedBy.Seconds()
		res.Window.Extended = fmt.Sprintf("the live heap grew, and after %s no site held %d samples of that growth (the most: %s): the window stayed open %s more, under the same load",
			c.cfg.Duration, diagnose.MinPlacingSamples, samplesPhrase(c.extendedFrom.Samples), c.extendedBy)
	}
	slack := max(time.Duration(overrunShare*float64(c.cfg.Duration)), overrunMin)
	if took := end.Sub(first.at); !c.interrupted && took > c.cfg.Duration+c.extendedBy+slack {
		c.warn("the window ran %s, not the %s asked: the target was slow to answer the snapshots; rates are over the window as it ran",
			took.Round(time.Millisecond), c.cfg.Duration)
	}
	res.Profiles = append(res.Profiles, result.Profile{Kind: "heap", Path: snapshotFile(0), Time: first.at.UTC(),
		Semantics: "heap snapshot as of the GC forced at " + first.at.UTC().Format(timeFormat) + " (window start)"})
	for i, s := range c.snaps[1:] {
		res.Profiles = append(res.Profiles, result.Profile{Kind: "heap", Path: snapshotFile(i + 1), Time: s.at.UTC(),
			Semantics: fmt.Sprintf("heap snapshot as of the GC forced at %s (+%s)", s.at.UTC().Format(timeFormat), s.offset.Round(time.Millisecond))})
	}
	for i, s := range c.snaps {
		if g := s.goroutines; g != nil {
			res.Profiles = append(res.Profiles, result.Profile{Kind: "goroutine", Path: goroutineSnapshotFile(i), Time: g.at.UTC(),
				Semantics: fmt.Sprintf("goroutines at %s, with heap snapshot %03d (+%s)", g.at.UTC().Format(timeFormat), i, s.offset.Round(time.Millisecond))})
		}
	}

	var delta *profile.Profile
	window := fmt.Sprintf("delta over the window %s–%s (%s)", first.at.UTC().Format(timeFormat), end.UTC().Format(timeFormat), end.Sub(first.at).Round(time.Millisecond))
	if len(c.snaps) > 1 {
		d, err := pprofx.AllocDelta(first.profile, last.profile)
		if err != nil {
			c.fails.add("allocation delta", err)
		} else {
			delta = d
			res.Profiles = append(res.Profiles, result.Profile{Kind: "allocs-delta", Path: allocDeltaFile, Time: first.at.UTC(),
				Semantics: "allocations " + window + ": last heap snapshot minus the first"})
			for _, st := range []string{"alloc_space", "alloc_objects"} {
				res.Top = c.addTop(res.Top, delta, st, allocDeltaFile, "allocations "+window)
			}
		}
	}
	res.Top = c.addTop(res.Top, last.profile, "inuse_space", snapshotFile(len(c.snaps)-1),
		"in use as of the GC forced at "+last.at.UTC().Format(timeFormat)+" (a snapshot, not a delta)")
	if c.cpu != nil {
		// pprof takes whole seconds: of a 2.5s window, the first 2s.
		semantics := "CPU profile over the window"
		if secs := c.cfg.Duration.Truncate(time.Second); secs != c.cfg.Duration {
			semantics = fmt.Sprintf("CPU profile over the first %s of the %s window (pprof takes whole seconds)", secs, c.cfg.Duration)
		}
		res.Profiles = append(res.Profiles, result.Profile{Kind: "cpu", Path: cpuFile, Time: first.at.UTC(), Semantics: semantics})
		if p, err := c.parse(c.cpu); err == nil {
			app, _ := pprofx.WithoutProfiler(p)
			res.Top = c.addTop(res.Top, app, "cpu", cpuFile, "CPU time over the window, without the pprof handlers'")
		}
	}
	for _, name := range sortedKeys(c.extra) {
		res.Profiles = append(res.Profiles, result.Profile{Kind: name, Path: extraFile(name), Time: first.at.UTC(), Semantics: name + " profile over the window (delta)"})
	}
	c.addTrace(res, first.at)
	if c.goroutine != nil {
		res.Profiles = append(res.Profiles, result.Profile{Kind: "goroutine", Path: goroutineFile, Time: end.UTC(), Semantics: "goroutines at the window's end"})
	}

	res.MemStats = c.memStatsSummary()
	res.RSS = c.rssSummary()
	res.HeapGrowth = c.heapGrowth()
	if c.load != nil {
		res.Load = c.load.Summary()
		res.Load.Series = nil // per-second figures go to load.json only
		res.PerRequest = c.perRequest(delta)
	}
	res.Unmeasured = c.unmeasured(res, delta)
	res.Files = result.RunDirectory{Report: reportFile, MemStats: memStatsFile}
	if res.Load != nil {
		res.Files.Load = loadFile
	}
	if cfg.Lean {
		// Kept in a store: compact (see writeRun).
		res.Files.Report, res.Files.MemStats = "", memStatsFile+".gz"
		if res.Load != nil {
			res.Files.Load += ".gz"
		}
	}

	c.diagnose(res, delta)

	// Last: the steps above add warnings of their own.
	res.Warnings = c.warnings
	res.Failures = c.fails.list
	switch {
	case len(res.Failures) == 0:
		res.Status = result.StatusComplete
	default:
		res.Status = result.StatusPartial
	}
	return res, delta
}

func (c *collector) targetInfo() result.Target {
	t := result.Target{URL: c.cfg.Target.BaseURL}
	if client, err := target.New(c.cfg.Target); err == nil {
		t.URL = client.BaseURL().String()
		t.PprofURL = client.ProfileURL("", nil)
	}
	p := c.proc
	t.PID = p.pid
	t.Local = p.readProc
	t.Env = p.env
	if p.uptimeEnd > 0 {
		t.UptimeSeconds = p.uptimeEnd.Seconds()
	}
	if bi := p.buildInfo; bi != nil {
		t.GoVersion = bi.GoVersion
		t.MainModule = bi.Main.Path
		for _, m := range bi.Deps {
			mod := m
			if m.Replace != nil {
				mod = m.Replace
			}
			t.Dependencies = append(t.Dependencies, result.Module{Path: mod.Path, Version: mod.Version})
		}
	}
	return t
}

func (c *collector) addTop(tables []result.TopTable, p *profile.Profile, sampleType, file, semantics string) []result.TopTable {
	tab, err := pprofx.Top(p, pprofx.TopOptions{Sample: sampleType, N: topSites})
	if err != nil {
		c.warn("top %s: %v", sampleType, err)
		return tables
	}
	return append(tables, TopTable(tab, file, semantics))
}

// TopTable converts a pprofx table into its result.json form.
func TopTable(tab pprofx.Table, file, semantics string) result.TopTable {
	out := result.TopTable{
		SampleType: tab.SampleType,
		Unit:       tab.Unit,
		Semantics:  semantics,
		Profile:    file,
		Total:      tab.Total,
		Sites:      make([]result.Site, 0, len(tab.Sites)),
	}
	for _, s := range tab.Sites {
		out.Sites = append(out.Sites, result.Site{
			Function: s.Function, File: s.File, Line: s.Line,
			Flat: s.Flat, FlatShare: s.FlatShare, Cum: s.Cum, CumShare: s.CumShare,
			Inlined: s.Inlined,
		})
	}
	return out
}

func (c *collector) memStatsSummary() result.MemStats {
	end := c.memStart
	if c.haveMemEnd {
		end = c.memEnd
	}
	ms := result.MemStats{
		AllocBytes:        end.Alloc,
		TotalAllocBytes:   end.TotalAlloc,
		SysBytes:          end.Sys,
		HeapSysBytes:      end.HeapSys,
		HeapInuseBytes:    end.HeapInuse,
		HeapIdleBytes:     end.HeapIdle,
		HeapReleasedBytes: end.HeapReleased,
		HeapObjects:       end.HeapObjects,
		StackInuseBytes:   end.StackInuse,
		NextGCBytes:       end.NextGC,
		NumGC:             end.NumGC,
		MaxRSSBytes:       end.MaxRSS,
	}
	if !c.haveMemEnd {
		ms.GCCPUFraction, ms.GCCPUFractionScope = end.GCCPUFraction, "lifetime"
		return ms
	}
	w := gcstats.NewWindow(c.memStart, c.memEnd, c.memEndAt.Sub(c.memStartAt))
	ms.AllocatedBytes = w.AllocBytes
	ms.AllocatedBytesPerSecond = w.AllocBytesPerSecond
	ms.Mallocs = w.Mallocs
	ms.MallocsPerSecond = w.MallocsPerSecond
	ms.GCCycles = w.Cycles
	ms.GCForcedCycles = w.ForcedCycles
	ms.GCCyclesPerSecond = w.CyclesPerSecond
	ms.GCPauseP50Seconds = w.PauseP50Seconds
	ms.GCPauseP99Seconds = w.PauseP99Seconds
	ms.GCPauseMaxSeconds = w.PauseMaxSeconds
	ms.GCPausesCovered = w.PausesCovered
	ms.GCRingOverflowed = w.RingOverflowed
	ms.GCPauses = gcPauses(c.memStart, c.memEnd, c.memStartAt)
	if f, ok := gcstats.WindowGCCPU(c.memStart.GCCPUFraction, c.memEnd.GCCPUFraction, c.proc.uptimeStart, c.proc.uptimeEnd); ok {
		ms.GCCPUFraction, ms.GCCPUFractionScope = f, "window"
	} else {
		ms.GCCPUFraction, ms.GCCPUFractionScope = c.memEnd.GCCPUFraction, "lifetime"
	}
	return ms
}

func (c *collector) rssSummary() result.RSS {
	p := c.proc
	switch {
	case p.status != nil:
		rs := result.RSS{Source: "proc", RSSBytes: p.status.VmRSS, HWMBytes: p.status.VmHWM}
		if hm := p.heapMappings; hm != nil {
			committed := uint64(0)
			if c.haveMemEnd {
				a := rss.AccountingOf(&c.memEnd)
				committed = a.ArenaCommitted()
			}
			rs.GoHeapMappings = &result.HeapMappings{
				Count: hm.Count, SizeBytes: hm.Size, RSSBytes: hm.Rss,
				CommittedBytes: committed, Consistent: hm.Consistent,
			}
		}
		if cg := p.cgroup; cg != nil {
			rs.Cgroup = &result.Cgroup{Version: cg.Version, Path: cg.Path, LimitBytes: cg.Limit, UsageBytes: cg.Usage, Unlimited: cg.Unlimited}
			rs.Cgroup.AnonBytes, rs.Cgroup.FileBytes = cg.Split()
		}
		rs.Mappings = p.mappings
		return rs
	case p.haveMetricsRSS:
		return result.RSS{Source: "metrics", RSSBytes: p.metricsRSS,
			Note: "from the target's process_resident_memory_bytes; per-mapping figures need a local process"}
	default:
		if c.proc.readProc {
			return result.RSS{Source: "unknown", Note: fmt.Sprintf("process %d could not be read at the window's end (%s)", c.proc.pid, c.proc.endError)}
		}
		return result.RSS{Source: "unknown",
			Note: "the target is not on this machine and serves no process_resident_memory_bytes on /metrics"}
	}
}

// heapGrowth sums inuse across the snapshots and fits a line through them.
func (c *collector) heapGrowth() *result.HeapGrowth {
	g := &result.HeapGrowth{}
	xs := make([]float64, 0, len(c.snaps))
	ys := make([]float64, 0, len(c.snaps))
	t0 := c.snaps[0].at
	live := make([]float64, 0, len(c.snaps))
	for i, s := range c.snaps {
		space, objects := totals(s.profile, pprofx.InuseSpace, pprofx.InuseObjects)
		hs := result.HeapSnapshot{
			Time: s.at.UTC(), OffsetSeconds: s.offset.Seconds(),
			InuseBytes: space, InuseObjects: objects, Profile: snapshotFile(i),
		}
		if s.mem != nil {
			hs.LiveBytes, hs.LiveObjects, hs.Profiling = s.liveBytes(), s.mem.HeapObjects, s.profiling
			live = append(live, float64(hs.LiveBytes))
		}
		if g := s.goroutines; g != nil {
			hs.Goroutines = goroutineCount(g.profile)
		}
		g.Snapshots = append(g.Snapshots, hs)
		// When each snapshot was taken, not when it was due: a slow
		// target shifts them.
		xs = append(xs, s.at.Sub(t0).Minutes())
		ys = append(ys, float64(space))
	}
	if n := len(g.Snapshots); n > 1 {
		g.GrowthBytes = g.Snapshots[n-1].InuseBytes - g.Snapshots[0].InuseBytes
		g.SlopeBytesPerMinute, g.R2 = diagnose.FitLine(xs, ys)
		if len(live) == n {
			l := &result.LiveGrowth{GrowthBytes: int64(live[n-1]) - int64(live[0])}
			l.SlopeBytesPerMinute, l.R2 = diagnose.FitLine(xs, live)
			g.Live = l
		}
	}
	return g
}

func samplesPhrase(n float64) string {
	switch {
	case n < 0.5:
		return "no sample"
	case n < 1.5:
		return "about 1"
	}
	return fmt.Sprintf("%.2g", n)
}

// goroutineCount is the number of goroutines a goroutine profile holds.
func goroutineCount(p *profile.Profile) int64 {
	var n int64
	for _, s := range p.Sample {
		if len(s.Value) > 0 {
			n += s.Value[0]
		}
	}
	return n
}

// totals sums a heap profile's bytes and objects of the sample types
// spaceType and objectsType (inuse_space and inuse_objects, or the alloc_
// pair); zeros when it lacks either.
func totals(p *profile.Profile, spaceType, objectsType string) (space, objects int64) {
	si, err1 := pprofx.SampleIndex(p, spaceType)
	oi, err2 := pprofx.SampleIndex(p, objectsType)
	if err1 != nil || err2 != nil {
		return 0, 0
	}
	for _, s := range p.Sample {
		space += s.Value[si]
		objects += s.Value[oi]
	}
	return space, objects
}

// perRequest divides the window's allocations by the requests the target
// answered. The load starts just after the first snapshot and runs for the
// window, so it overlaps the window to within the first snapshot's fetch.
// Error responses count: the target did the work of answering them, but
// when many failed the figures describe failures more than requests.
func (c *collector) perRequest(delta *profile.Profile) *result.PerRequest {
	n := c.load.Completed
	if n == 0 {
		return nil
	}
	if delta == nil {
		return nil // unmeasured: see unmeasured
	}
	if ok := c.load.SuccessRatio(); ok < minSuccessRatio {
		c.warn("only %.0f%% of the requests succeeded (status below 400): the per-request figures include the failures' cost", 100*ok)
	}
	space, objects := totals(delta, pprofx.AllocSpace, pprofx.AllocObjects)
	pr := &result.PerRequest{Requests: n,
		BytesPerRequest:   float64(space) / float64(n),
		ObjectsPerRequest: float64(objects) / float64(n),
	}
	if c.haveMemEnd {
		bytes := float64(c.memEnd.TotalAlloc-c.memStart.TotalAlloc) / float64(n)
		objects := float64(c.memEnd.Mallocs-c.memStart.Mallocs) / float64(n)
		pr.MemStatsBytesPerRequest, pr.MemStatsObjectsPerRequest = &bytes, &objects
	}
	return pr
}

// unmeasured says which figures of res a partial run lacks and why, so
// that no report shows a zero for what was never measured.
func (c *collector) unmeasured(res *result.Run, delta *profile.Profile) []result.Unmeasured {
	var list []result.Unmeasured
	add := func(figure, format string, args ...any) {
		list = append(list, result.Unmeasured{Figure: figure, Reason: fmt.Sprintf(format, args...)})
	}
	planned := len(c.cfg.snapshotOffsets())
	if got := len(c.snaps); got < planned && !c.interrupted {
		if got == 1 {
			add(result.FigureHeapGrowth, "only the heap snapshot at the window's start was collected (%d planned)", planned)
		} else {
			add(result.FigureHeapGrowth, "%d of %d heap snapshots were collected; the figures cover %s, not the whole window",
				got, planned, humanize.Seconds(c.snaps[got-1].offset.Seconds()))
		}
	}
	if c.load != nil && delta == nil {
		// However many requests completed before the target was lost.
		add(result.FigurePerRequest, "the window's allocations need its closing heap snapshot, which was not collected")
	}
	if !c.haveMemEnd {
		add(result.FigureWindowMemStats, "MemStats at the window's end were not collected: allocations and GC over the window are unknown, and the MemStats figures are as of its start")
	}
	if c.proc.readProc && c.proc.status == nil {
		add(result.FigureRSS, "process %d could not be read at the window's end (%s)", c.proc.pid, c.proc.endError)
	}
	return list
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// gcPauses lists the window's GC pauses, each placed from the GC forced at
// the window's start: start.LastGC by the target's clock (startAt, by
// ours, when the target has not collected yet).
func gcPauses(start, end gcstats.MemStats, startAt time.Time) []result.GCPause {
	pauses := gcstats.Pauses(start, end)
	if len(pauses) == 0 {
		return nil
	}
	origin := startAt
	if start.LastGC > 0 {
		origin = time.Unix(0, int64(start.LastGC))
	}
	out := make([]result.GCPause, 0, len(pauses))
	for _, p := range pauses {
		out = append(out, result.GCPause{
			Cycle: p.Cycle, End: p.End,
			OffsetSeconds: max(p.End.Sub(origin).Seconds(), 0),
			PauseSeconds:  p.Duration.Seconds(),
		})
	}
	return out
}
