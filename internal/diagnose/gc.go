package diagnose

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
)

// gcPressure is check 5: how often the GC runs, what it costs and how long
// it pauses, which allocation sites cause it, and what GOGC or GOMEMLIMIT
// would change.
func (d *diagnosis) gcPressure() {
	r := d.in.Run
	if r == nil {
		if len(d.in.Heap) > 0 {
			d.note("GC check: needs the MemStats of a run (heapscope profile); bare profiles do not carry them")
		}
		return
	}
	ms := r.MemStats
	th := d.th.GC
	if ms.GCCycles == 0 && ms.GCPausesCovered == 0 && ms.AllocatedBytes == 0 {
		d.note("GC check: no GC figures over the window (MemStats at its end were not collected)")
		return
	}
	cpuSev := th.CPUShare.of(ms.GCCPUFraction)
	scope := "over the window"
	if ms.GCCPUFractionScope != "window" {
		// A lifetime share says little about the window: keep it from
		// raising the finding above low.
		cpuSev = min(cpuSev, Low)
		scope = "over the process's lifetime (its uptime was unknown)"
	}
	cycleSev := th.CyclesPerSecond.of(ms.GCCyclesPerSecond)
	if th.CPUShare.of(ms.GCCPUFraction) == Info {
		// Frequent cycles on a small heap cost little: without a CPU
		// share worth a look, frequency alone stays low.
		cycleSev = min(cycleSev, Low)
	}
	sev := max(cycleSev, cpuSev)
	if sev >= Low {
		ev := map[string]float64{
			"gc_cycles_per_second":       ms.GCCyclesPerSecond,
			"gc_cpu_share":               ms.GCCPUFraction,
			"allocated_bytes_per_second": ms.AllocatedBytesPerSecond,
			"mallocs_per_second":         ms.MallocsPerSecond,
			"heap_alloc_bytes":           float64(ms.AllocBytes),
			"next_gc_bytes":              float64(ms.NextGCBytes),
		}
		if d.procs > 0 {
			ev["gc_cores"] = ms.GCCPUFraction * d.procs
		}
		interval := math.Inf(1)
		if ms.GCCyclesPerSecond > 0 {
			interval = 1 / ms.GCCyclesPerSecond
		}
		title := fmt.Sprintf("GC runs %.1f times a second (every %s) and takes %s of the CPU %s, at %s/s allocated",
			ms.GCCyclesPerSecond, humanize.Seconds(interval), humanize.Percent(ms.GCCPUFraction), scope, humanize.Bytes(ms.AllocatedBytesPerSecond))
		fix := d.gcAdvice(ev)
		conf := 0.9
		if ms.GCCPUFractionScope != "window" {
			conf = 0.5
		}
		d.add(newFinding("gc.pressure", sev, site{}, title, ev, fix, conf))
	}

	pSev := th.PauseP99Seconds.of(ms.GCPauseP99Seconds)
	if ms.GCPausesCovered < th.MinPauses {
		pSev = min(pSev, Low)
	}
	if pSev >= Low {
		ev := map[string]float64{
			"gc_pause_p50_seconds": ms.GCPauseP50Seconds,
			"gc_pause_p99_seconds": ms.GCPauseP99Seconds,
			"gc_pause_max_seconds": ms.GCPauseMaxSeconds,
			"gc_pauses_covered":    float64(ms.GCPausesCovered),
		}
		title := fmt.Sprintf("GC stop-the-world pauses reach %s at p99 (max %s) over %d pauses", humanize.Seconds(ms.GCPauseP99Seconds), humanize.Seconds(ms.GCPauseMaxSeconds), ms.GCPausesCovered)
		fix := "long stop-the-world pauses usually come from a starved machine (more runnable threads than cores: check GOMAXPROCS against the CPU quota), huge goroutine counts or very large single objects being scanned; a pause is rarely the heap's size"
		conf := min(1, float64(ms.GCPausesCovered)/float64(th.MinPauses))
		d.add(newFinding("gc.pause", pSev, site{}, title, ev, fix, conf))
	}
}

// gcAdvice says what would reduce the GC's cost, with numbers: the sites
// whose allocations cost the most GC, and GOGC and GOMEMLIMIT settings
// with their expected effect.
func (d *diagnosis) gcAdvice(ev map[string]float64) string {
	var parts []string
	if d.allocs != nil {
		var names []string
		for i, a := range d.appSites() {
			if i == 3 {
				break
			}
			c := d.costOf(a.bytes, a.objects)
			names = append(names, fmt.Sprintf("%s (%s of the bytes, GC ≈ %s of one core)", a.at.where(), humanize.Percent(c.byteShare), humanize.Percent(c.gcCores)))
		}
		if len(names) > 0 {
			parts = append(parts, "allocate less at "+strings.Join(names, ", ")+": GC work falls in proportion")
		}
	}
	r := d.in.Run
	ms := r.MemStats
	gogc := 100.0
	if v, ok := r.Target.Env["GOGC"]; ok {
		if strings.EqualFold(v, "off") {
			return strings.Join(append(parts, "GOGC=off is set: the GC runs only at GOMEMLIMIT, so cycles this frequent mean the heap is at the limit: raise GOMEMLIMIT or allocate less"), "; ")
		}
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			gogc = float64(n)
		}
	}
	live := float64(ms.AllocBytes)
	if live > 0 && ms.AllocatedBytesPerSecond > 0 {
		// The heap goal is live × (1 + GOGC/100): a cycle every
		// live × GOGC/100 bytes allocated.
		var opts []string
		for _, k := range []float64{2, 4} {
			g := gogc * k
			rate := ms.AllocatedBytesPerSecond / (live * g / 100)
			opts = append(opts, fmt.Sprintf("GOGC=%.0f ≈ %.1f cycles/s with the heap peaking near %s", g, rate, humanize.Bytes(live*(1+g/100))))
			ev[fmt.Sprintf("predicted_cycles_per_second_gogc_%.0f", g)] = rate
		}
		parts = append(parts, fmt.Sprintf("with a live heap of %s and GOGC=%.0f: %s", humanize.Bytes(live), gogc, strings.Join(opts, "; ")))
	}
	if cg := r.RSS.Cgroup; cg != nil && !cg.Unlimited && cg.LimitBytes > 0 {
		lim := float64(cg.LimitBytes) * 0.9
		parts = append(parts, fmt.Sprintf("with the cgroup's %s limit, GOMEMLIMIT=%dMiB (90%% of it) and a higher GOGC let the heap grow into the memory the container has before collecting", humanize.Bytes(float64(cg.LimitBytes)), int64(lim)/(1<<20)))
	} else if _, ok := r.Target.Env["GOMEMLIMIT"]; !ok {
		parts = append(parts, "a GOMEMLIMIT at about 90% of the memory the service may use, with a higher GOGC, keeps the GC rare until memory is short")
	}
	return strings.Join(parts, "; ")
}
