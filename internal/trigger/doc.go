// Package trigger decides when a watched service deserves a capture: the
// trigger expressions ("memory>=80%"), the state that gives each rule
// hysteresis and a cooldown, and the samples they are judged on — read
// from a local process's /proc and cgroup, or a remote one's /metrics —
// with the kernel's notifications that say when to sample.
//
// The steps, for one target and one rule:
//
//  1. Parse reads the expression; a Rule adds its hysteresis and cooldown.
//  2. Local.Sample (a process of this machine) or RemoteSample (a /metrics
//     body) gives a Sample; AddMemStats and Merge complete it with the
//     runtime's MemStats and the other source.
//  3. State.Observe judges the sample and says whether the rule fires;
//     DetectRestart compares consecutive samples for a restart and an OOM
//     kill.
//  4. WatchMemory and WatchOOM wake the caller as soon as the kernel sees
//     the cgroup cross a threshold or run out of memory, so that step 2
//     runs within a second rather than at the next poll.
//
// Scheduling and capturing are the caller's: nothing here starts a timer
// but WatchMemory's v2 poll. Expressions, rules, states, RemoteSample and
// DetectRestart are pure.
//
// # Metrics
//
// Each metric, its unit, and where its value comes from:
//
//	memory>=80%               the memory in use, as a percentage of the limit,
//	memory>=1.5GiB            or in bytes. For a local process: the working set of
//	                          its memory cgroup, usage less inactive file cache, against the
//	                          cgroup's limit (or an ancestor's), cgroup v1 or v2. That is
//	                          what the kubelet evicts on and what presses towards the OOM
//	                          killer: inactive file pages are reclaimed first when the
//	                          cgroup reaches its limit, so usage alone, page cache
//	                          included, sits near the limit with no pressure at all. For a
//	                          remote target: process_resident_memory_bytes from /metrics
//	                          against the limit configured for it.
//	rss>=1GiB                 the resident set size in bytes: /proc/PID/status VmRSS, or
//	                          process_resident_memory_bytes.
//	gomemlimit>=90%           the memory the Go runtime counts against its soft limit,
//	                          MemStats' Sys − HeapReleased (or go_memstats_sys_bytes −
//	                          go_memstats_heap_released_bytes), as a percentage of
//	                          GOMEMLIMIT (from /proc/PID/environ, or
//	                          go_gc_gomemlimit_bytes). Unknown when no limit is set.
//	rss_high>=64MiB           a new high-water mark: fires each time the RSS passes the
//	                          mark by the step, then makes that RSS the mark. The mark
//	                          starts at the process's first sample and is kept in the
//	                          State, so the captures climb with the RSS and the last is
//	                          the nearest to an OOM kill. >= and > only; no hysteresis.
//	heap_time_to_limit<=6h    the projected time until the heap after GC reaches the limit
//	                          (the smallest of GOMEMLIMIT and the memory limit): a line
//	                          fitted by least squares to the latest HeapPoints (12)
//	                          measurements of Sample.HeapAfterGC, from at least
//	                          MinHeapPoints (3), projected from the latest. Endless when
//	                          the heap does not grow. Non-heap memory makes the real time
//	                          shorter. <= and < only.
//	goroutines>=10000         the number of goroutines: go_goroutines, or a goroutine
//	                          profile's count.
//	goroutine_growth>=1000    how far the goroutine count is above its lowest over the
//	                          samples of the last GrowthWindow (10 minutes); unknown at the
//	                          process's first sample.
//	gc_cpu>=25%               the share of the CPU time available to the process
//	                          (GOMAXPROCS × wall time) that the GC used, between the oldest
//	                          sample of the last GrowthWindow (or the latest before it)
//	                          and now, from MemStats' GCCPUFraction, LastGC and the start
//	                          time; unknown at the process's first sample with them.
//
// Values are written as percentages ("80%"), sizes with their unit (B,
// KiB, MiB, GiB, TiB, or KB, MB, GB, TB in powers of 1000), durations (Go's
// "90m", "1h30m", or "30d", "2w") and counts. Blanks may surround each
// part: "memory >= 80 %" is "memory>=80%".
//
// # Firing
//
// A rule fires when its condition holds and it is armed and out of its
// cooldown; it then waits, disarmed, until the value moves back past the
// threshold by the hysteresis (5 percentage points, or 5 % of the
// threshold, by default), and never fires twice within the cooldown (10
// minutes by default). A value that is unknown in a sample (no limit, no
// /metrics, a figure not yet measured) neither fires nor re-arms: Sample
// tells unknown from zero by its Known set.
package trigger
