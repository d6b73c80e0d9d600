package rss

import (
	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/sysmem"
)

// Input is what Build explains: one process's classified mappings and
// what else is known of it.
type Input struct {
	// PID is the process read.
	PID int
	// Mappings is the classification of /proc/PID/smaps.
	Mappings Classification
	// Status is /proc/PID/status; nil when unread.
	Status *sysmem.Status
	// Cgroup is the process's memory cgroup; nil when unread.
	Cgroup *sysmem.Cgroup
	// MemStats are the runtime's figures from heap?debug=1; nil when the
	// process's pprof was not asked.
	MemStats *gcstats.MemStats
	// MemStatsURL is the pprof the MemStats came from, such as
	// http://127.0.0.1:6060/debug/pprof/; MemStatsDiscovered says it was
	// found on one of the process's listening ports rather than given.
	MemStatsURL        string
	MemStatsDiscovered bool
	// RuntimeUnknown says, when MemStats is nil, why the runtime's figures
	// are unknown and how to give them; "" when they were not looked for.
	RuntimeUnknown string
	// Warnings are problems met while gathering the input, shown as they
	// are.
	Warnings []string
}

// Report is the explained resident memory of one process. Sizes are in
// bytes.
type Report struct {
	PID int `json:"pid"`
	// Exe is the executable's path.
	Exe string `json:"exe,omitempty"`
	// RSSBytes, PSSBytes and SwapBytes sum every mapping of smaps.
	RSSBytes  uint64 `json:"rss_bytes"`
	PSSBytes  uint64 `json:"pss_bytes"`
	SwapBytes uint64 `json:"swap_bytes"`
	// HWMBytes is the peak RSS, from status; 0 when unread.
	HWMBytes uint64 `json:"hwm_bytes,omitempty"`
	// Kinds are the per-kind sums, in a fixed order, then the total.
	Kinds []Usage `json:"kinds"`
	// GoHeap is the Go heap arenas' read-write mappings.
	GoHeap GoHeap `json:"go_heap"`
	// Cgroup is the process's memory cgroup; nil when unread.
	Cgroup *Cgroup `json:"cgroup,omitempty"`
	// Runtime holds the runtime's own figures; nil when unknown.
	Runtime *Runtime `json:"runtime,omitempty"`
	// RuntimeUnknown says, without Runtime, why the runtime's figures are
	// unknown and how to give them.
	RuntimeUnknown string `json:"runtime_unknown,omitempty"`
	// Gap explains, item by item, how the kernel's view squares with the
	// runtime's (Reconcile's items); without Runtime it only describes the
	// kernel's.
	Gap []Explanation `json:"gap"`
	// Warnings are what could not be read or checked.
	Warnings []string `json:"warnings,omitempty"`
}

// GoHeap sums the Go heap arenas' read-write mappings.
type GoHeap struct {
	Mappings          int    `json:"mappings"`
	SizeBytes         uint64 `json:"size_bytes"`
	RSSBytes          uint64 `json:"rss_bytes"`
	PrivateDirtyBytes uint64 `json:"private_dirty_bytes"`
	SwapBytes         uint64 `json:"swap_bytes"`
	// ReservedBytes is the arenas' address space, mapped or not.
	ReservedBytes uint64 `json:"reserved_bytes"`
	Arenas        int    `json:"arenas"`
	// RSSShare is RSSBytes / SizeBytes: how much of the mapped heap is
	// resident.
	RSSShare float64 `json:"rss_share"`
	// Consistent says whether the mappings agree with HeapSys, when it is
	// known; Confidence (0 to 1) how sure the identification is.
	Consistent bool    `json:"consistent"`
	Confidence float64 `json:"confidence"`
	Note       string  `json:"note,omitempty"`
}

// Cgroup is the memory accounting of the process's cgroup.
type Cgroup struct {
	Version    int    `json:"version"`
	Path       string `json:"path"`
	LimitBytes uint64 `json:"limit_bytes,omitempty"`
	Unlimited  bool   `json:"unlimited"`
	UsageBytes uint64 `json:"usage_bytes"`
	// AnonBytes and FileBytes split usage (sysmem.Cgroup.Split:
	// memory.stat's anon and file on v2; rss and cache, hierarchical
	// totals preferred, on v1).
	AnonBytes uint64 `json:"anon_bytes"`
	FileBytes uint64 `json:"file_bytes"`
	// HeadroomBytes is LimitBytes - UsageBytes when limited;
	// HeadroomAnonBytes is LimitBytes - AnonBytes, counting page cache as
	// reclaimable.
	HeadroomBytes     uint64   `json:"headroom_bytes,omitempty"`
	HeadroomAnonBytes uint64   `json:"headroom_anon_bytes,omitempty"`
	Notes             []string `json:"notes,omitempty"`
}

// Runtime holds the runtime's MemStats figures that bear on RSS.
type Runtime struct {
	HeapSysBytes      uint64 `json:"heap_sys_bytes"`
	HeapInuseBytes    uint64 `json:"heap_inuse_bytes"`
	HeapIdleBytes     uint64 `json:"heap_idle_bytes"`
	HeapReleasedBytes uint64 `json:"heap_released_bytes"`
	StackInuseBytes   uint64 `json:"stack_inuse_bytes"`
	SysBytes          uint64 `json:"sys_bytes"`
	// CommittedBytes, ArenaHeldBytes and OffHeapBytes are the
	// reconciliation's figures (Reconciliation.CommittedBytes,
	// ArenaCommittedBytes and OffArenaBytes): Sys − HeapReleased, what
	// the runtime has mapped and not given back; HeapSys − HeapReleased +
	// StackInuse, the part of it in the heap arenas, at most what can be
	// resident there; Sys − HeapSys − StackInuse, what the runtime maps
	// outside its arenas (span and GC metadata, profiling buckets, OS
	// thread stacks).
	CommittedBytes uint64 `json:"committed_bytes"`
	ArenaHeldBytes uint64 `json:"arena_held_bytes"`
	OffHeapBytes   uint64 `json:"off_heap_bytes"`
	// SourceURL is the pprof the figures came from; Discovered says it was
	// found on one of the process's listening ports rather than given.
	SourceURL  string `json:"source_url,omitempty"`
	Discovered bool   `json:"discovered,omitempty"`
}

// Build explains in. It is pure: in holds everything it uses.
func Build(in Input) Report {
	cl := in.Mappings
	r := Report{
		PID:       in.PID,
		Exe:       cl.Exe,
		RSSBytes:  cl.Total.RSSBytes,
		PSSBytes:  cl.Total.PSSBytes,
		SwapBytes: cl.Total.SwapBytes,
		Kinds:     append(append([]Usage(nil), cl.Kinds...), cl.Total),
		Warnings:  append([]string(nil), in.Warnings...),
	}
	if in.Status != nil {
		r.HWMBytes = in.Status.VmHWM
	}
	var heapSys uint64
	if in.MemStats != nil {
		heapSys = in.MemStats.HeapSys
	}
	h := cl.Heap(heapSys)
	r.GoHeap = GoHeap{
		Mappings: h.Count, SizeBytes: h.Size, RSSBytes: h.Rss,
		PrivateDirtyBytes: h.PrivateDirty, SwapBytes: h.Swap,
		ReservedBytes: h.Reserved, Arenas: h.Arenas,
		Consistent: h.Consistent, Confidence: h.Confidence, Note: h.Note,
	}
	if h.Size > 0 {
		r.GoHeap.RSSShare = float64(h.Rss) / float64(h.Size)
	}
	if in.Cgroup != nil {
		r.Cgroup = cgroupOf(in.Cgroup)
	}
	var acct *Accounting
	if in.MemStats != nil {
		a := AccountingOf(in.MemStats)
		acct = &a
	}
	rec := Reconcile(cl.Kernel(), acct)
	if in.MemStats != nil {
		r.Runtime = runtimeOf(in.MemStats, &rec)
		r.Runtime.SourceURL, r.Runtime.Discovered = in.MemStatsURL, in.MemStatsDiscovered
	} else {
		r.RuntimeUnknown = in.RuntimeUnknown
	}
	r.Gap = rec.Items
	return r
}

func cgroupOf(cg *sysmem.Cgroup) *Cgroup {
	c := &Cgroup{
		Version: cg.Version, Path: cg.Path, Unlimited: cg.Unlimited,
		LimitBytes: cg.Limit, UsageBytes: cg.Usage,
		Notes: append([]string(nil), cg.Notes...),
	}
	c.AnonBytes, c.FileBytes = cg.Split()
	if !c.Unlimited {
		c.HeadroomBytes = sub(c.LimitBytes, c.UsageBytes)
		c.HeadroomAnonBytes = sub(c.LimitBytes, c.AnonBytes)
	}
	return c
}

func runtimeOf(m *gcstats.MemStats, rec *Reconciliation) *Runtime {
	return &Runtime{
		HeapSysBytes: m.HeapSys, HeapInuseBytes: m.HeapInuse, HeapIdleBytes: m.HeapIdle,
		HeapReleasedBytes: m.HeapReleased, StackInuseBytes: m.StackInuse, SysBytes: m.Sys,
		CommittedBytes: rec.CommittedBytes, ArenaHeldBytes: rec.ArenaCommittedBytes, OffHeapBytes: rec.OffArenaBytes,
	}
}
