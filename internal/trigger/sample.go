package trigger

import (
	"time"

	"github.com/heapscope/heapscope/internal/gcstats"
)

// Known is a set of the Sample fields that hold a value. A field outside
// the set is unknown, which is not the same as zero: a trigger on it
// neither fires nor re-arms.
type Known uint32

// The fields of a Sample that can be known.
const (
	// KnownPID: Sample.PID.
	KnownPID Known = 1 << iota
	// KnownStart: Sample.Start.
	KnownStart
	// KnownRSS: Sample.RSS.
	KnownRSS
	// KnownMemory: Sample.Memory.
	KnownMemory
	// KnownMemoryLimit: Sample.MemoryLimit.
	KnownMemoryLimit
	// KnownCgroupUsage: Sample.CgroupUsage.
	KnownCgroupUsage
	// KnownOOMKills: Sample.OOMKills.
	KnownOOMKills
	// KnownGoMemLimit: Sample.GoMemLimit.
	KnownGoMemLimit
	// KnownGoMemory: Sample.GoMemory.
	KnownGoMemory
	// KnownHeapAfterGC: Sample.HeapAfterGC.
	KnownHeapAfterGC
	// KnownGoroutines: Sample.Goroutines.
	KnownGoroutines
	// KnownGCCPU: Sample.GCCPUFraction and Sample.LastGC.
	KnownGCCPU
)

// Sample is what is known of a target at one moment: the inputs of every
// metric. Local.Sample reads a local process, RemoteSample a /metrics body,
// AddMemStats adds the runtime's MemStats; Merge puts them together.
// Fields not in Known are unknown whatever their value.
type Sample struct {
	// Time is when the sample was taken.
	Time time.Time
	// Known says which of the fields below hold a value.
	Known Known

	// PID is the process id of a local target.
	PID int
	// Start is when the process started (/proc/PID/stat and the boot
	// time for a local target, process_start_time_seconds for a remote
	// one): a new start means a restart.
	Start time.Time

	// RSS is the process's resident set size in bytes
	// (/proc/PID/status VmRSS, or process_resident_memory_bytes).
	RSS uint64
	// Memory is the memory in use against MemoryLimit, in bytes: the
	// working set of the process's cgroup for a local target (usage less
	// inactive file cache, see sysmem.Cgroup.WorkingSet), RSS for a
	// remote one.
	Memory uint64
	// MemoryLimit is the limit Memory counts against, in bytes: the
	// cgroup's limit for a local target, the configured one for a remote
	// one. Unknown when there is none.
	MemoryLimit uint64
	// CgroupUsage is the cgroup's usage as the kernel charges it, page
	// cache included (memory.current or memory.usage_in_bytes).
	CgroupUsage uint64
	// Cgroup is the cgroupfs directory the cgroup figures come from; ""
	// when none was read.
	Cgroup string
	// OOMKills is the cgroup's count of processes killed by the OOM
	// killer (sysmem.ReadOOMKills).
	OOMKills uint64

	// GoMemLimit is the Go runtime's memory limit in bytes (GOMEMLIMIT
	// from /proc/PID/environ, or go_gc_gomemlimit_bytes); unknown when
	// none is set.
	GoMemLimit uint64
	// GoMemory is the memory the Go runtime counts against GOMEMLIMIT, in
	// bytes: MemStats' Sys less HeapReleased.
	GoMemory uint64
	// HeapAfterGC is the live heap right after a collection, in bytes:
	// MemStats' HeapAlloc read after a forced GC (heap?gc=1). Set it only
	// in the sample of a fresh measurement, so that each counts once in
	// the heap's slope (see HeapTimeToLimit).
	HeapAfterGC uint64
	// Goroutines is the number of goroutines (go_goroutines, or a
	// goroutine profile's total).
	Goroutines uint64
	// GCCPUFraction is MemStats' GCCPUFraction: the share of the CPU time
	// available since the process started that its GC used, as of the end
	// of the last collection, LastGC.
	GCCPUFraction float64
	// LastGC is when the last collection ended (MemStats' LastGC).
	LastGC time.Time

	// Warnings are what could not be read, leaving a field unknown.
	Warnings []error
}

// Has reports whether all the fields of k are known.
func (s *Sample) Has(k Known) bool {
	return s.Known&k == k
}

// Merge copies into s the fields that o knows and s does not; s keeps its
// Time, and o's warnings are added to s's. A local sample merged with
// RemoteSample of the target's /metrics gains its goroutine count.
func (s *Sample) Merge(o Sample) {
	take := o.Known &^ s.Known
	if take&KnownPID != 0 {
		s.PID = o.PID
	}
	if take&KnownStart != 0 {
		s.Start = o.Start
	}
	if take&KnownRSS != 0 {
		s.RSS = o.RSS
	}
	if take&KnownMemory != 0 {
		s.Memory = o.Memory
	}
	if take&KnownMemoryLimit != 0 {
		s.MemoryLimit = o.MemoryLimit
	}
	if take&KnownCgroupUsage != 0 {
		s.CgroupUsage = o.CgroupUsage
	}
	if take&(KnownCgroupUsage|KnownOOMKills) != 0 && s.Cgroup == "" {
		s.Cgroup = o.Cgroup
	}
	if take&KnownOOMKills != 0 {
		s.OOMKills = o.OOMKills
	}
	if take&KnownGoMemLimit != 0 {
		s.GoMemLimit = o.GoMemLimit
	}
	if take&KnownGoMemory != 0 {
		s.GoMemory = o.GoMemory
	}
	if take&KnownHeapAfterGC != 0 {
		s.HeapAfterGC = o.HeapAfterGC
	}
	if take&KnownGoroutines != 0 {
		s.Goroutines = o.Goroutines
	}
	if take&KnownGCCPU != 0 {
		s.GCCPUFraction, s.LastGC = o.GCCPUFraction, o.LastGC
	}
	s.Known |= take
	s.Warnings = append(s.Warnings, o.Warnings...)
}

// AddMemStats sets the fields that the runtime's MemStats (from
// /debug/pprof/heap?debug=1) give: GoMemory (Sys − HeapReleased), and
// GCCPUFraction with LastGC once a collection has run. afterGC says the
// MemStats were read right after a forced collection (heap?gc=1, as a
// scheduled run takes them): HeapAlloc is then the heap after GC.
func (s *Sample) AddMemStats(m gcstats.MemStats, afterGC bool) {
	if m.Sys >= m.HeapReleased {
		s.GoMemory = m.Sys - m.HeapReleased
		s.Known |= KnownGoMemory
	}
	if m.NumGC > 0 && m.LastGC > 0 && m.LastGC < 1<<63 {
		s.GCCPUFraction = m.GCCPUFraction
		s.LastGC = time.Unix(0, int64(m.LastGC))
		s.Known |= KnownGCCPU
	}
	if afterGC {
		s.HeapAfterGC = m.HeapAlloc
		s.Known |= KnownHeapAfterGC
	}
}
