package rss

import (
	"fmt"

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
	// runtime's; without Runtime it only describes the kernel's.
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
	// ArenaHeldBytes is HeapSys - HeapReleased + StackInuse: what the
	// runtime holds in its heap arenas and has not given back, at most
	// what can be resident there.
	ArenaHeldBytes uint64 `json:"arena_held_bytes"`
	// OffHeapBytes is Sys - HeapSys - StackInuse: what the runtime maps
	// outside its arenas (span and GC metadata, profiling buckets, OS
	// thread stacks).
	OffHeapBytes uint64 `json:"off_heap_bytes"`
	// SourceURL is the pprof the figures came from; Discovered says it was
	// found on one of the process's listening ports rather than given.
	SourceURL  string `json:"source_url,omitempty"`
	Discovered bool   `json:"discovered,omitempty"`
}

// Explanation is one item of the reconciliation, with the bytes it is
// about.
type Explanation struct {
	// ID names the item: "heap-untouched", "heap-released-resident",
	// "heap-matches", "heap-resident", "unknown-anon", "runtime-off-heap",
	// "files".
	ID    string `json:"id"`
	Bytes uint64 `json:"bytes"`
	Text  string `json:"text"`
}

// closeEnough is how far the heap arenas' Rss may be from what the runtime
// holds there and still count as equal: the heap moves between the two
// reads, and a scavenger step releases a few pages.
func closeEnough(a, b uint64) bool {
	d := a - b
	if b > a {
		d = b - a
	}
	return d <= 1<<20 || d <= max(a, b)/50
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
	if in.MemStats != nil {
		r.Runtime = runtimeOf(in.MemStats)
		r.Runtime.SourceURL, r.Runtime.Discovered = in.MemStatsURL, in.MemStatsDiscovered
	} else {
		r.RuntimeUnknown = in.RuntimeUnknown
	}
	r.Gap = explain(&r, &cl)
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

func runtimeOf(m *gcstats.MemStats) *Runtime {
	return &Runtime{
		HeapSysBytes: m.HeapSys, HeapInuseBytes: m.HeapInuse, HeapIdleBytes: m.HeapIdle,
		HeapReleasedBytes: m.HeapReleased, StackInuseBytes: m.StackInuse, SysBytes: m.Sys,
		ArenaHeldBytes: sub(m.HeapSys, m.HeapReleased) + m.StackInuse,
		OffHeapBytes:   sub(m.Sys, m.HeapSys+m.StackInuse),
	}
}

// sub is a - b, or 0 when b > a.
func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// explain reconciles the kernel's view (r's mappings) with the runtime's
// (r.Runtime, when known).
func explain(r *Report, cl *Classification) []Explanation {
	var out []Explanation
	h := r.GoHeap
	rt := r.Runtime
	anon := cl.Kind(KindAnon).RSSBytes + cl.Kind(KindStack).RSSBytes
	files := cl.Kind(KindBinary).RSSBytes + cl.Kind(KindLibrary).RSSBytes + cl.Kind(KindFile).RSSBytes
	mib := func(b uint64) string { return fmtBytes(b) }

	switch {
	case h.Mappings == 0:
		out = append(out, Explanation{ID: "heap-resident", Text: "no Go heap arenas found among the mappings: not a Go process, or not 64-bit Linux"})
	case rt == nil:
		out = append(out, Explanation{ID: "heap-resident", Bytes: h.RSSBytes, Text: fmt.Sprintf(
			"the Go heap arenas have %s resident of %s mapped (%.0f%%); give --target URL (the process's pprof) to compare with what the runtime holds",
			mib(h.RSSBytes), mib(h.SizeBytes), 100*h.RSSShare)})
	case closeEnough(h.RSSBytes, rt.ArenaHeldBytes):
		out = append(out, Explanation{ID: "heap-matches", Bytes: h.RSSBytes, Text: fmt.Sprintf(
			"the Go heap arenas have %s resident and the runtime holds %s there (HeapSys − HeapReleased + StackInuse): within %s of each other, so nearly every page the runtime keeps has been touched",
			mib(h.RSSBytes), mib(rt.ArenaHeldBytes), mib(max(h.RSSBytes, rt.ArenaHeldBytes)-min(h.RSSBytes, rt.ArenaHeldBytes)))})
	case h.RSSBytes < rt.ArenaHeldBytes:
		d := rt.ArenaHeldBytes - h.RSSBytes
		text := fmt.Sprintf(
			"committed but untouched: the runtime holds %s in its heap arenas (HeapSys − HeapReleased + StackInuse) but only %s is resident; %s was mapped and never written since the OS handed it over (fresh spans, a big allocation not yet filled), so the kernel does not count it",
			mib(rt.ArenaHeldBytes), mib(h.RSSBytes), mib(d))
		if h.SwapBytes > 0 {
			text += fmt.Sprintf(", or is swapped out (%s of the arenas is in swap)", mib(h.SwapBytes))
		}
		out = append(out, Explanation{ID: "heap-untouched", Bytes: d, Text: text})
	default:
		d := h.RSSBytes - rt.ArenaHeldBytes
		out = append(out, Explanation{ID: "heap-released-resident", Bytes: d, Text: fmt.Sprintf(
			"released but resident: %s is resident in the heap arenas beyond the %s the runtime holds there; pages it released (HeapReleased = %s) stay resident under GODEBUG=madvdontneed=0 (MADV_FREE, until memory is short) or inside transparent huge pages, or the heap changed between reading MemStats and smaps",
			mib(d), mib(rt.ArenaHeldBytes), mib(rt.HeapReleasedBytes))})
	}

	if rt != nil {
		if anon > rt.OffHeapBytes && !closeEnough(anon, rt.OffHeapBytes) {
			d := anon - rt.OffHeapBytes
			out = append(out, Explanation{ID: "unknown-anon", Bytes: d, Text: fmt.Sprintf(
				"memory the runtime does not know: %s of anonymous memory outside the heap arenas is resident, %s more than all the runtime maps outside them (Sys − HeapSys − StackInuse = %s); cgo and C libraries (malloc), direct mmap (syscall.Mmap) and C threads' stacks are not in MemStats",
				mib(anon), mib(d), mib(rt.OffHeapBytes))})
		} else {
			out = append(out, Explanation{ID: "runtime-off-heap", Bytes: anon, Text: fmt.Sprintf(
				"%s of anonymous memory outside the heap arenas is resident, within the %s the runtime maps outside them (span and GC metadata, profiling buckets, OS thread stacks): nothing the runtime does not know of",
				mib(anon), mib(rt.OffHeapBytes))})
		}
	} else if anon > 0 {
		out = append(out, Explanation{ID: "runtime-off-heap", Bytes: anon, Text: fmt.Sprintf(
			"%s of anonymous memory outside the heap arenas is resident: the runtime's off-heap metadata, thread stacks, and anything cgo or direct mmap allocated",
			mib(anon))})
	}
	if files > 0 {
		text := fmt.Sprintf("%s is resident in the executable, shared libraries and mapped files: page cache, counted in RSS and never in MemStats.Sys", mib(files))
		if pss := cl.Kind(KindBinary).PSSBytes + cl.Kind(KindLibrary).PSSBytes + cl.Kind(KindFile).PSSBytes; pss < files {
			text += fmt.Sprintf("; shared with other processes, its proportional share is %s", mib(pss))
		}
		out = append(out, Explanation{ID: "files", Bytes: files, Text: text})
	}
	return out
}

// fmtBytes formats a size in binary units for the explanations.
func fmtBytes(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
