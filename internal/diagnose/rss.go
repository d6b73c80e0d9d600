package diagnose

import (
	"fmt"
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rss"
)

// rssBreakdown is check 6: resident memory as the kernel counts it beside
// the memory the runtime has committed, reconciled by rss.Reconcile, the
// reconciliation heapscope rss shows too. The figures and the explanation
// are the reconciliation's; the severity is this check's, from the
// thresholds.
func (d *diagnosis) rssBreakdown() {
	r := d.in.Run
	if r == nil {
		return
	}
	kr := r.RSS
	if kr.Source != "proc" && kr.Source != "metrics" {
		d.note("RSS check: RSS is unknown (%s)", strings.TrimSpace(kr.Note))
		return
	}
	th := d.th.RSS
	acct, known := d.accounting()
	kernel := kernelOf(&kr)
	var rec rss.Reconciliation
	if known {
		rec = rss.Reconcile(kernel, &acct)
	} else {
		rec = rss.Reconcile(kernel, nil)
	}

	// The runtime's view: committed memory by class (MemStats).
	ev := map[string]float64{
		"kernel_rss_bytes":                     float64(kr.RSSBytes),
		"runtime_heap_alloc_bytes":             float64(acct.HeapAlloc),
		"runtime_heap_free_in_spans_bytes":     float64(rec.FragmentedBytes),
		"runtime_heap_idle_not_released_bytes": float64(rec.IdleBytes),
		"runtime_heap_released_bytes":          float64(acct.HeapReleased),
		"runtime_stack_inuse_bytes":            float64(acct.StackInuse),
		"runtime_sys_bytes":                    float64(acct.Sys),
		"runtime_committed_bytes":              float64(rec.CommittedBytes),
		"runtime_arena_committed_bytes":        float64(rec.ArenaCommittedBytes),
		"runtime_off_arena_bytes":              float64(rec.OffArenaBytes),
	}
	if m := d.in.MemStats; m != nil {
		ev["runtime_mspan_sys_bytes"] = float64(m.MSpanSys)
		ev["runtime_mcache_sys_bytes"] = float64(m.MCacheSys)
		ev["runtime_gc_sys_bytes"] = float64(m.GCSys)
		ev["runtime_buckhash_sys_bytes"] = float64(m.BuckHashSys)
		ev["runtime_other_sys_bytes"] = float64(m.OtherSys)
		ev["runtime_stack_sys_bytes"] = float64(m.StackSys)
	}
	// The kernel's view, by kind of mapping (smaps).
	var parts []string
	for _, k := range kr.Mappings {
		ev["kernel_"+strings.ReplaceAll(k.Kind, "-", "_")+"_rss_bytes"] = float64(k.RSSBytes)
		if k.RSSBytes > 0 { // reserved address space is never resident
			parts = append(parts, fmt.Sprintf("%s %s", k.Kind, humanize.Bytes(float64(k.RSSBytes))))
		}
	}
	if kernel.HeapMappings > 0 {
		ev["kernel_go_heap_mapped_bytes"] = float64(kernel.HeapSizeBytes)
	}
	// The reconciliation: its items by id, as heapscope rss names them.
	explain := make([]string, 0, len(rec.Items)+2)
	for _, it := range rec.Items {
		ev["reconciled_"+strings.ReplaceAll(it.ID, "-", "_")+"_bytes"] = float64(it.Bytes)
		explain = append(explain, it.Text)
	}
	if known && kernel.ByMapping {
		ev["reconciled_heap_gap_bytes"] = float64(rec.HeapGapBytes)
	}

	sev := Info
	rssB := float64(kr.RSSBytes)
	gap := func(v float64, k float64) bool {
		return v >= k*th.GapShare*rssB && v >= k*th.MinGapBytes
	}
	if unknown := float64(rec.UnknownAnonBytes); known && gap(unknown, 1) {
		s := Low
		if gap(unknown, 2) {
			s = Medium
		}
		sev = max(sev, s)
	}
	if gap(float64(rec.IdleBytes), 1) {
		sev = max(sev, Low)
	}
	if frag := float64(rec.FragmentedBytes); acct.HeapInuse > 0 && gap(frag, 1) && frag >= 0.25*float64(acct.HeapInuse) {
		sev = max(sev, Low)
	}
	committed, heapAlloc := float64(rec.CommittedBytes), float64(acct.HeapAlloc)
	title := fmt.Sprintf("RSS %s (%s): %s; the runtime has committed %s, of which %s live heap",
		humanize.Bytes(rssB), kr.Source, strings.Join(parts, ", "), humanize.Bytes(committed), humanize.Bytes(heapAlloc))
	if len(parts) == 0 {
		title = fmt.Sprintf("RSS %s (%s); the runtime has committed %s, of which %s live heap", humanize.Bytes(rssB), kr.Source, humanize.Bytes(committed), humanize.Bytes(heapAlloc))
	}
	if cg := kr.Cgroup; cg != nil && !cg.Unlimited && cg.LimitBytes > 0 {
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
		sev = max(sev, levelWithin(headroom, th.HeadroomHigh, th.HeadroomMedium))
		explain = append(explain, fmt.Sprintf("the cgroup's anonymous memory is %s of its %s limit (%s headroom; page cache is reclaimable and left out)", humanize.Bytes(used), humanize.Bytes(lim), humanize.Percent(headroom)))
	}
	if kr.Source == "metrics" {
		explain = append(explain, "RSS comes from the target's /metrics: a per-mapping view needs the process on this machine")
	}
	d.add(newFinding("rss.breakdown", sev, site{}, title, ev, strings.Join(explain, "; "), 0.8))
}

// accounting returns the runtime's figures the run read at its end: the
// whole MemStats when the input has them, else the run's summary of them;
// false when the run has neither.
func (d *diagnosis) accounting() (rss.Accounting, bool) {
	if m := d.in.MemStats; m != nil {
		return rss.AccountingOf(m), true
	}
	ms := d.in.Run.MemStats
	a := rss.Accounting{
		HeapSys: ms.HeapSysBytes, HeapIdle: ms.HeapIdleBytes, HeapInuse: ms.HeapInuseBytes,
		HeapReleased: ms.HeapReleasedBytes, HeapAlloc: ms.AllocBytes,
		StackInuse: ms.StackInuseBytes, Sys: ms.SysBytes,
	}
	return a, a.Sys > 0 || a.HeapSys > 0
}

// kernelOf returns the kernel's view a run recorded: its RSS and, for a
// process on this machine, its smaps by kind of mapping (rss.mappings; a
// run recorded before them is reconciled on its RSS alone).
func kernelOf(r *result.RSS) rss.Kernel {
	k := rss.Kernel{RSSBytes: r.RSSBytes, ByMapping: len(r.Mappings) > 0}
	for _, m := range r.Mappings {
		switch m.Kind {
		case result.MappingGoHeap:
			k.HeapMappings, k.HeapSizeBytes, k.HeapRSSBytes, k.HeapSwapBytes = m.Count, m.SizeBytes, m.RSSBytes, m.SwapBytes
		case result.MappingAnon, result.MappingStack:
			k.AnonRSSBytes += m.RSSBytes
		case result.MappingBinary, result.MappingLibraries, result.MappingFiles:
			k.FileRSSBytes += m.RSSBytes
			k.FilePSSBytes += m.PSSBytes
		}
	}
	return k
}
