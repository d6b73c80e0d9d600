package diagnose

import (
	"fmt"
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
)

// rssBreakdown is check 6: resident memory as the kernel counts it beside
// the memory the runtime has committed, reconciled.
func (d *diagnosis) rssBreakdown() {
	r := d.in.Run
	if r == nil {
		return
	}
	rss := r.RSS
	if rss.Source != "proc" && rss.Source != "metrics" {
		d.note("RSS check: RSS is unknown (%s)", strings.TrimSpace(rss.Note))
		return
	}
	th := d.th.RSS
	ms := r.MemStats
	ev := map[string]float64{
		"kernel_rss_bytes": float64(rss.RSSBytes),
	}
	// The runtime's view: committed memory by class (MemStats).
	heapAlloc := float64(ms.AllocBytes)
	freeInSpans := float64(ms.HeapInuseBytes) - heapAlloc
	idle := float64(ms.HeapIdleBytes) - float64(ms.HeapReleasedBytes)
	ev["runtime_heap_alloc_bytes"] = heapAlloc
	ev["runtime_heap_free_in_spans_bytes"] = max(freeInSpans, 0)
	ev["runtime_heap_idle_not_released_bytes"] = max(idle, 0)
	ev["runtime_heap_released_bytes"] = float64(ms.HeapReleasedBytes)
	ev["runtime_stack_inuse_bytes"] = float64(ms.StackInuseBytes)
	ev["runtime_sys_bytes"] = float64(ms.SysBytes)
	committed := float64(ms.SysBytes) - float64(ms.HeapReleasedBytes)
	ev["runtime_committed_bytes"] = committed
	offHeap := 0.0
	if m := d.in.MemStats; m != nil {
		offHeap = float64(m.MSpanSys + m.MCacheSys + m.GCSys + m.BuckHashSys + m.OtherSys)
		ev["runtime_mspan_sys_bytes"] = float64(m.MSpanSys)
		ev["runtime_mcache_sys_bytes"] = float64(m.MCacheSys)
		ev["runtime_gc_sys_bytes"] = float64(m.GCSys)
		ev["runtime_buckhash_sys_bytes"] = float64(m.BuckHashSys)
		ev["runtime_other_sys_bytes"] = float64(m.OtherSys)
		ev["runtime_stack_sys_bytes"] = float64(m.StackSys)
	}

	sev := Info
	var explain []string
	rssB := float64(rss.RSSBytes)
	gap := func(v float64, k float64) bool {
		return v >= k*th.GapShare*rssB && v >= k*th.MinGapBytes
	}
	// The kernel's view, by kind of mapping (smaps).
	kinds := map[string]result.MappingKind{}
	for _, k := range rss.Mappings {
		kinds[k.Kind] = k
		ev["kernel_"+strings.ReplaceAll(k.Kind, "-", "_")+"_rss_bytes"] = float64(k.RSSBytes)
	}
	var parts []string
	for _, k := range rss.Mappings {
		if k.RSSBytes > 0 { // reserved address space is never resident
			parts = append(parts, fmt.Sprintf("%s %s", k.Kind, humanize.Bytes(float64(k.RSSBytes))))
		}
	}
	if hm := rss.GoHeapMappings; hm != nil && hm.Count > 0 {
		heapRSS := float64(hm.RSSBytes)
		heapCommitted := float64(hm.CommittedBytes)
		ev["kernel_go_heap_mapped_bytes"] = float64(hm.SizeBytes)
		switch {
		case heapCommitted > 0 && heapRSS < 0.8*heapCommitted:
			explain = append(explain, fmt.Sprintf("the heap arenas are %s resident of the %s the runtime holds (HeapSys − HeapReleased): pages committed but never touched, or swapped out, count in MemStats and not in RSS", humanize.Bytes(heapRSS), humanize.Bytes(heapCommitted)))
		case heapCommitted > 0 && heapRSS > 1.1*heapCommitted:
			explain = append(explain, fmt.Sprintf("the heap arenas are %s resident, more than the %s the runtime holds: released pages still resident (transparent huge pages keep whole 2 MiB pages) or goroutine stacks, which live in the arenas too", humanize.Bytes(heapRSS), humanize.Bytes(heapCommitted)))
		default:
			explain = append(explain, fmt.Sprintf("the heap arenas' %s resident match the %s the runtime holds", humanize.Bytes(heapRSS), humanize.Bytes(heapCommitted)))
		}
	}
	if k, ok := kinds[result.MappingAnon]; ok {
		unknown := float64(k.RSSBytes) - offHeap
		ev["reconciled_unknown_anon_bytes"] = max(unknown, 0)
		if d.in.MemStats != nil && gap(unknown, 1) {
			s := Low
			if gap(unknown, 2) {
				s = Medium
			}
			sev = max(sev, s)
			explain = append(explain, fmt.Sprintf("%s of anonymous memory outside the heap arenas is more than the runtime's off-heap structures (%s): memory the runtime does not know — cgo or C libraries, mmap'd buffers, or a second allocator", humanize.Bytes(unknown), humanize.Bytes(offHeap)))
		}
	}
	if gap(idle, 1) {
		sev = max(sev, Low)
		explain = append(explain, fmt.Sprintf("%s of heap is idle and not yet returned to the OS (HeapIdle − HeapReleased): the scavenger returns it over minutes; GOMEMLIMIT makes it return sooner, debug.FreeOSMemory at once", humanize.Bytes(idle)))
	}
	if float64(ms.HeapInuseBytes) > 0 && gap(freeInSpans, 1) && freeInSpans >= 0.25*float64(ms.HeapInuseBytes) {
		sev = max(sev, Low)
		explain = append(explain, fmt.Sprintf("%s free inside in-use spans (HeapInuse − HeapAlloc): fragmentation, from many objects of a size class freed unevenly", humanize.Bytes(freeInSpans)))
	}
	title := fmt.Sprintf("RSS %s (%s): %s; the runtime has committed %s, of which %s live heap",
		humanize.Bytes(rssB), rss.Source, strings.Join(parts, ", "), humanize.Bytes(committed), humanize.Bytes(heapAlloc))
	if len(parts) == 0 {
		title = fmt.Sprintf("RSS %s (%s); the runtime has committed %s, of which %s live heap", humanize.Bytes(rssB), rss.Source, humanize.Bytes(committed), humanize.Bytes(heapAlloc))
	}
	if cg := rss.Cgroup; cg != nil && !cg.Unlimited && cg.LimitBytes > 0 {
		lim := float64(cg.LimitBytes)
		used := float64(cg.UsageBytes)
		ev["cgroup_limit_bytes"] = lim
		ev["cgroup_usage_bytes"] = used
		if cg.AnonBytes > 0 || cg.FileBytes > 0 {
			ev["cgroup_anon_bytes"] = float64(cg.AnonBytes)
			ev["cgroup_file_bytes"] = float64(cg.FileBytes)
			// Page cache is reclaimed before the OOM killer acts.
			used = float64(cg.AnonBytes)
		}
		headroom := max(lim-used, 0) / lim
		ev["cgroup_headroom_share"] = headroom
		switch {
		case headroom <= th.HeadroomHigh:
			sev = High
		case headroom <= th.HeadroomMedium:
			sev = max(sev, Medium)
		}
		explain = append(explain, fmt.Sprintf("the cgroup's anonymous memory is %s of its %s limit (%s headroom; page cache is reclaimable and left out)", humanize.Bytes(used), humanize.Bytes(lim), humanize.Percent(headroom)))
	}
	if rss.Source == "metrics" {
		explain = append(explain, "RSS comes from the target's /metrics: a per-mapping view needs the process on this machine")
	}
	d.add(newFinding("rss.breakdown", sev, site{}, title, ev, strings.Join(explain, "; "), 0.8))
}
