// Package result defines the summary of a profiling run as it is stored in
// result.json: the contract between the run that writes it and everything
// that reads it later (reports, diagnose, compare). Its JSON Schema is
// docs/result-schema.json.
//
// Conventions: snake_case keys, bytes as integers, durations in seconds with
// a _seconds suffix, timestamps in RFC 3339 UTC, rates per second.
package result

import (
	"time"
)

// SchemaVersion is the version of the result.json layout. It changes when a
// field changes meaning or disappears; new fields keep it.
const SchemaVersion = 1

// FileName is the name of the summary inside a run directory. A directory
// without it, or without CompressedFileName, is not a run.
const FileName = "result.json"

// CompressedFileName is the summary of a run kept in a store: result.json
// gzipped, as a watcher keeps thousands of runs.
const CompressedFileName = FileName + ".gz"

// Status says how much of a run was collected.
type Status string

// The statuses of a run.
const (
	// StatusComplete: every requested collection succeeded.
	StatusComplete Status = "complete"
	// StatusPartial: some collection failed; Failures says which.
	StatusPartial Status = "partial"
	// StatusFailed: nothing useful was collected.
	StatusFailed Status = "failed"
)

// Run is the content of result.json.
type Run struct {
	SchemaVersion int    `json:"schema_version"`
	Status        Status `json:"status"`
	// Failures lists what could not be collected in a partial run.
	Failures []Failure `json:"failures,omitempty"`
	// Unmeasured lists the figures a partial run could not measure, and
	// why: such a figure is absent (or, in MemStats, as of the window's
	// start), never a zero standing in for a measurement.
	Unmeasured []Unmeasured `json:"unmeasured,omitempty"`
	// Warnings are problems that did not stop the run.
	Warnings []string `json:"warnings,omitempty"`

	Heapscope Tool   `json:"heapscope"`
	Target    Target `json:"target"`
	Window    Window `json:"window"`

	MemStats   MemStats     `json:"memstats"`
	RSS        RSS          `json:"rss"`
	Load       *Load        `json:"load,omitempty"`
	PerRequest *PerRequest  `json:"per_request,omitempty"`
	HeapGrowth *HeapGrowth  `json:"heap_growth,omitempty"`
	Top        []TopTable   `json:"top"`
	Findings   []Finding    `json:"findings"`
	Profiles   []Profile    `json:"profiles"`
	Files      RunDirectory `json:"files"`
	// Repeat is set on the top-level result.json of a run recorded as
	// several windows (profile --repeat N).
	Repeat *Repeat `json:"repeat,omitempty"`

	// DiagnosisNotes say what the diagnosis could not check and why (too
	// few snapshots, a missing profile), so that no finding is mistaken
	// for a clean bill of health.
	DiagnosisNotes []string `json:"diagnosis_notes,omitempty"`
	// HiddenHotSpots counts the allocation hot spots too small to matter
	// (few samples, or below every low threshold), left out of Findings
	// unless asked for (--all).
	HiddenHotSpots int `json:"hidden_hot_spots,omitempty"`

	// Trace is the GC timeline of the execution trace, when the run
	// captured one (profile --trace).
	Trace *Trace `json:"trace,omitempty"`
}

// Failure names one collection step that failed and why.
type Failure struct {
	Step  string `json:"step"`
	Error string `json:"error"`
}

// Unmeasured names a figure a run could not measure and says why.
type Unmeasured struct {
	// Figure is one of the Figure… constants.
	Figure string `json:"figure"`
	Reason string `json:"reason"`
}

// The figures Unmeasured names.
const (
	// FigurePerRequest: per_request, which needs the window's allocation
	// delta (its last heap snapshot).
	FigurePerRequest = "per_request"
	// FigureWindowMemStats: the window's allocation and GC figures, which
	// need MemStats at its end; memstats is then as of its start.
	FigureWindowMemStats = "window_memstats"
	// FigureHeapGrowth: heap_growth, which needs the window's snapshots.
	FigureHeapGrowth = "heap_growth"
	// FigureRSS: rss of a local process that could not be read at the
	// window's end.
	FigureRSS = "rss"
)

// UnmeasuredReason says why figure was not measured, and whether it was
// not.
func (r *Run) UnmeasuredReason(figure string) (string, bool) {
	for _, u := range r.Unmeasured {
		if u.Figure == figure {
			return u.Reason, true
		}
	}
	return "", false
}

// Tool identifies the heapscope that wrote the run.
type Tool struct {
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
}

// Target describes the profiled service.
type Target struct {
	URL      string `json:"url"`
	PprofURL string `json:"pprof_url"`
	// PID is set when the process runs on this machine and was found.
	PID int `json:"pid,omitempty"`
	// Local is true when /proc of the process could be read.
	Local bool `json:"local"`
	// GoVersion, MainModule and Dependencies come from the build info of
	// /proc/PID/exe when the process is local.
	GoVersion    string   `json:"go_version,omitempty"`
	MainModule   string   `json:"main_module,omitempty"`
	Dependencies []Module `json:"dependencies,omitempty"`
	// Env holds GOGC, GOMEMLIMIT, GODEBUG and GOMAXPROCS as set in the
	// process environment (only those that are set).
	Env map[string]string `json:"env,omitempty"`
	// UptimeSeconds is how long the process had run at the window's end.
	UptimeSeconds float64 `json:"uptime_seconds,omitempty"`
}

// Module is one module of the target's build.
type Module struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

// Window is the collection window every alloc_* and GC figure refers to.
type Window struct {
	Start           time.Time `json:"start"`
	End             time.Time `json:"end"`
	DurationSeconds float64   `json:"duration_seconds"`
	// ForcedGCs counts the collections heapscope itself forced (heap?gc=1
	// at every snapshot) so that inuse figures are current.
	ForcedGCs int `json:"forced_gcs"`
	// ProfilerAllocatedBytes is what the target's pprof handlers allocated
	// answering heapscope during the window (sampled). Heap figures from
	// profiles (top sites, per request, growth) leave it out; MemStats
	// figures cannot.
	ProfilerAllocatedBytes int64 `json:"profiler_allocated_bytes"`
	// WarmupSeconds is how long the load ran before the window opened
	// (profile --warmup); 0 when the window opened as the load began.
	WarmupSeconds float64 `json:"warmup_seconds,omitempty"`
	// ExtendedSeconds is how long the window stayed open past the one
	// asked, and Extended why: the live heap grew and the samples could
	// not yet place the growth (profile --until-confident).
	ExtendedSeconds float64 `json:"extended_seconds,omitempty"`
	Extended        string  `json:"extended,omitempty"`
}

// MemStats holds the runtime's own accounting: values at the window's end
// and GC figures over the window, from /debug/pprof/heap?debug=1.
type MemStats struct {
	AllocBytes        uint64 `json:"alloc_bytes"`
	TotalAllocBytes   uint64 `json:"total_alloc_bytes"`
	SysBytes          uint64 `json:"sys_bytes"`
	HeapSysBytes      uint64 `json:"heap_sys_bytes"`
	HeapInuseBytes    uint64 `json:"heap_inuse_bytes"`
	HeapIdleBytes     uint64 `json:"heap_idle_bytes"`
	HeapReleasedBytes uint64 `json:"heap_released_bytes"`
	HeapObjects       uint64 `json:"heap_objects"`
	StackInuseBytes   uint64 `json:"stack_inuse_bytes"`
	NextGCBytes       uint64 `json:"next_gc_bytes"`
	NumGC             uint32 `json:"num_gc"`
	MaxRSSBytes       uint64 `json:"max_rss_bytes,omitempty"`

	// Over the window:
	AllocatedBytes          uint64  `json:"allocated_bytes"`
	AllocatedBytesPerSecond float64 `json:"allocated_bytes_per_second"`
	Mallocs                 uint64  `json:"mallocs"`
	MallocsPerSecond        float64 `json:"mallocs_per_second"`
	GCCycles                uint32  `json:"gc_cycles"`
	GCForcedCycles          uint32  `json:"gc_forced_cycles"`
	// GCCyclesPerSecond counts the cycles the runtime started by itself,
	// leaving out the forced ones.
	GCCyclesPerSecond float64 `json:"gc_cycles_per_second"`
	GCPauseP50Seconds float64 `json:"gc_pause_p50_seconds"`
	GCPauseP99Seconds float64 `json:"gc_pause_p99_seconds"`
	GCPauseMaxSeconds float64 `json:"gc_pause_max_seconds"`
	// GCPausesCovered is how many of the window's cycles the pause figures
	// cover: the runtime keeps the last 256 pauses only.
	GCPausesCovered  int  `json:"gc_pauses_covered"`
	GCRingOverflowed bool `json:"gc_ring_overflowed"`
	// GCCPUFraction is the share of CPU spent in GC; GCCPUFractionScope
	// says whether it covers the window or the process' lifetime (when the
	// process' uptime is unknown).
	GCCPUFraction      float64 `json:"gc_cpu_fraction"`
	GCCPUFractionScope string  `json:"gc_cpu_fraction_scope"`
	// GCPauses lists the window's pauses one by one, oldest first: the
	// cycles GCPausesCovered counts.
	GCPauses []GCPause `json:"gc_pauses,omitempty"`
}

// GCPause is one GC cycle's stop-the-world pause, from the MemStats pause
// rings (PauseNs, PauseEnd).
type GCPause struct {
	// Cycle numbers the cycle since the process started, from 1.
	Cycle uint32 `json:"cycle"`
	// End is when the pause ended, by the target's clock.
	End time.Time `json:"end"`
	// OffsetSeconds is End measured from the GC heapscope forced at the
	// window's start (by the target's clock too, so a remote target's
	// clock skew does not move it).
	OffsetSeconds float64 `json:"offset_seconds"`
	PauseSeconds  float64 `json:"pause_seconds"`
}

// RSS is resident memory as the kernel sees it.
type RSS struct {
	// Source is "proc" (/proc/PID of a local process), "metrics" (the
	// target's process_resident_memory_bytes) or "unknown".
	Source   string `json:"source"`
	RSSBytes uint64 `json:"rss_bytes,omitempty"`
	// HWMBytes is the peak RSS (VmHWM).
	HWMBytes uint64 `json:"hwm_bytes,omitempty"`
	// GoHeapMappings describes the anonymous mappings that hold the Go heap
	// arenas, from /proc/PID/smaps.
	GoHeapMappings *HeapMappings `json:"go_heap_mappings,omitempty"`
	// Cgroup is the memory limit of the process' cgroup, when it has one.
	Cgroup *Cgroup `json:"cgroup,omitempty"`
	Note   string  `json:"note,omitempty"`

	// Mappings sums /proc/PID/smaps by kind of mapping (Go heap arenas,
	// the main thread's stack, other anonymous memory, the binary, shared
	// libraries, other files), for a local process.
	Mappings []MappingKind `json:"mappings,omitempty"`
}

// The kinds of MappingKind, as result.json names them. internal/rss
// classifies the mappings; the run maps its kinds to these names.
const (
	MappingGoHeap    = "go-heap"          // the Go heap arenas' read-write parts
	MappingStack     = "main-stack"       // the main thread's [stack]
	MappingAnon      = "anon-other"       // other anonymous memory: cgo, mmap, runtime metadata
	MappingReserved  = "reserved"         // address space without access (arena reservations)
	MappingBinary    = "binary"           // the executable
	MappingLibraries = "shared-libraries" // shared libraries and [vdso]
	MappingFiles     = "file-other"       // other mapped files
)

// MappingKind is the memory of one kind of mapping, from smaps.
type MappingKind struct {
	Kind      string `json:"kind"`
	Count     int    `json:"count"`
	SizeBytes uint64 `json:"size_bytes"`
	RSSBytes  uint64 `json:"rss_bytes"`
	// PSSBytes is the proportional share of RSSBytes: pages shared with
	// other processes (the executable's, libraries') count in part.
	PSSBytes uint64 `json:"pss_bytes,omitempty"`
	// SwapBytes is the part swapped out.
	SwapBytes uint64 `json:"swap_bytes,omitempty"`
}

// HeapMappings sums the Go heap arenas' mappings.
type HeapMappings struct {
	Count     int    `json:"count"`
	SizeBytes uint64 `json:"size_bytes"`
	RSSBytes  uint64 `json:"rss_bytes"`
	// CommittedBytes is HeapSys − HeapReleased + StackInuse: what the
	// runtime holds in its heap arenas, goroutine stacks included
	// (rss.Accounting.ArenaCommitted), to be compared with RSSBytes.
	CommittedBytes uint64 `json:"committed_bytes"`
	Consistent     bool   `json:"consistent"`
}

// Cgroup is the memory accounting of the target's cgroup.
type Cgroup struct {
	Version    int    `json:"version"`
	Path       string `json:"path"`
	LimitBytes uint64 `json:"limit_bytes,omitempty"`
	UsageBytes uint64 `json:"usage_bytes,omitempty"`
	Unlimited  bool   `json:"unlimited"`

	// AnonBytes and FileBytes split the usage into anonymous memory and
	// page cache (memory.stat anon/file in v2, rss/cache in v1).
	AnonBytes uint64 `json:"anon_bytes,omitempty"`
	FileBytes uint64 `json:"file_bytes,omitempty"`
}

// Load summarises the load driven during the window (in result.json) or by
// heapscope load (load.json and its JSON output).
type Load struct {
	// Model is "open" (requests at a rate) or "closed" (connections sending
	// back to back); Protocol the HTTP versions of the responses.
	Model    string `json:"model,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	// Method and URL are the first request's; Targets counts the requests
	// sent round-robin when there are several.
	Method  string `json:"method"`
	URL     string `json:"url"`
	Targets int    `json:"targets,omitempty"`
	// RequestedRate and RampSeconds are the open model's, and MaxInFlight
	// its bound on outstanding requests. Connections is the closed model's
	// option, or the connections the open model opened (one per worker over
	// HTTP/1.1). PeakInFlight is the most requests outstanding at once.
	RequestedRate float64 `json:"requested_rate"`
	RampSeconds   float64 `json:"ramp_seconds,omitempty"`
	Connections   int     `json:"connections,omitempty"`
	MaxInFlight   int     `json:"max_in_flight,omitempty"`
	PeakInFlight  int     `json:"peak_in_flight,omitempty"`
	NoKeepAlive   bool    `json:"no_keepalive,omitempty"`
	// Opened counts the connections opened during the window: more than
	// Connections when the server closed them.
	Opened uint64 `json:"connections_opened,omitempty"`
	// DurationSeconds is how long requests were sent; ElapsedSeconds runs to
	// the end of the last response.
	DurationSeconds float64 `json:"duration_seconds,omitempty"`
	ElapsedSeconds  float64 `json:"elapsed_seconds,omitempty"`
	Interrupted     bool    `json:"interrupted,omitempty"`
	// Requests were sent; Completed got a whole response (any status);
	// Errors are transport failures plus statuses of 400 or more; Dropped
	// were due but never sent because the generator fell behind.
	Requests  uint64 `json:"requests"`
	Completed uint64 `json:"completed"`
	Errors    uint64 `json:"errors"`
	Dropped   uint64 `json:"dropped"`
	// AchievedRate is requests sent per second of DurationSeconds.
	AchievedRate float64 `json:"achieved_rate"`
	// SuccessRatio is the share of requests sent that completed with a
	// status below 400.
	SuccessRatio float64 `json:"success_ratio"`
	// BytesIn and BytesOut count what went over the connections (headers,
	// bodies, TLS records), and per second of DurationSeconds.
	BytesIn           uint64            `json:"bytes_in,omitempty"`
	BytesOut          uint64            `json:"bytes_out,omitempty"`
	BytesInPerSecond  float64           `json:"bytes_in_per_second,omitempty"`
	BytesOutPerSecond float64           `json:"bytes_out_per_second,omitempty"`
	StatusCodes       map[string]uint64 `json:"status_codes,omitempty"`
	ErrorKinds        map[string]uint64 `json:"error_kinds,omitempty"`
	// LatencySeconds is measured from each request's intended send time in
	// the open model (no coordinated omission), from its send time in the
	// closed model, to its response's end, or to when it timed out or was
	// given up at the end of the window.
	LatencySeconds Latency `json:"latency_seconds"`
	// Lag is how late the open model's requests left after their intended
	// time.
	Lag *LoadLag `json:"lag,omitempty"`
	// Series holds per-second figures when they were asked for (load.json
	// and heapscope load only).
	Series []LoadSecond `json:"series,omitempty"`
}

// The load's vocabulary as result.json records it: internal/load writes
// these values, the reports read them without linking the generator.
const (
	// LoadModelOpen sends requests at intended times set by a rate;
	// LoadModelClosed keeps a fixed number of connections busy.
	LoadModelOpen   = "open"
	LoadModelClosed = "closed"
	// LoadHeldByMaxInFlight and LoadHeldByGenerator say what held the
	// open model back from its schedule (LoadLag.HeldBack): the service,
	// not answering fast enough to free an in-flight slot, or the
	// generator itself.
	LoadHeldByMaxInFlight = "max_in_flight"
	LoadHeldByGenerator   = "generator"
	// LoadBehindLag is the lag beyond which the open model's generator
	// counts as fallen behind its schedule.
	LoadBehindLag = 10 * time.Millisecond
)

// LoadLag is the open model generator's delay behind its schedule.
type LoadLag struct {
	MeanSeconds float64 `json:"mean_seconds"`
	P99Seconds  float64 `json:"p99_seconds"`
	MaxSeconds  float64 `json:"max_seconds"`
	// FellBehind: requests were dropped, or 1 % of them or more left 10 ms
	// or more after their intended time. HeldBack says what held the
	// schedule back: "max_in_flight" (the bound on outstanding requests
	// was reached: the service answered too slowly) or "generator".
	FellBehind bool   `json:"fell_behind"`
	HeldBack   string `json:"held_back,omitempty"`
}

// LoadSecond is one second of a load run, counted from its start.
type LoadSecond struct {
	Second int `json:"second"`
	// Sent counts the requests sent in the second, Done those that ended in
	// it and Errors the failures among them.
	Sent   uint64 `json:"sent"`
	Done   uint64 `json:"done"`
	Errors uint64 `json:"errors"`
	// Latency of the responses completed in the second.
	LatencyP50Seconds float64 `json:"latency_p50_seconds"`
	LatencyP90Seconds float64 `json:"latency_p90_seconds"`
	LatencyP99Seconds float64 `json:"latency_p99_seconds"`
	LatencyMaxSeconds float64 `json:"latency_max_seconds"`
	MaxLagSeconds     float64 `json:"max_lag_seconds"`
}

// Latency holds latency percentiles in seconds.
type Latency struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

// PerRequest divides the window's allocations by the requests completed in
// it.
type PerRequest struct {
	Requests uint64 `json:"requests"`
	// BytesPerRequest and ObjectsPerRequest come from the window's delta heap
	// profile (sampled, but attributable to sites).
	BytesPerRequest   float64 `json:"bytes"`
	ObjectsPerRequest float64 `json:"objects"`
	// MemStats figures count every allocation of the process, exactly,
	// including what serving the profiles cost; absent when MemStats at
	// the window's end were not collected.
	MemStatsBytesPerRequest   *float64 `json:"memstats_bytes,omitempty"`
	MemStatsObjectsPerRequest *float64 `json:"memstats_objects,omitempty"`
}

// HeapGrowth is in-use heap across the window's snapshots.
type HeapGrowth struct {
	Snapshots []HeapSnapshot `json:"snapshots"`
	// SlopeBytesPerMinute is the least-squares slope of inuse_space over
	// time; R2 its coefficient of determination.
	SlopeBytesPerMinute float64 `json:"slope_bytes_per_minute"`
	R2                  float64 `json:"r2"`
	// GrowthBytes is the last snapshot's inuse_space minus the first's.
	GrowthBytes int64 `json:"growth_bytes"`
	// Live fits the snapshots' LiveBytes, when every snapshot has it:
	// the exact figures that decide whether the heap grows.
	Live *LiveGrowth `json:"live,omitempty"`
}

// LiveGrowth is the least-squares line through the live heap (HeapAlloc
// after each forced GC) across a run's snapshots.
type LiveGrowth struct {
	SlopeBytesPerMinute float64 `json:"slope_bytes_per_minute"`
	R2                  float64 `json:"r2"`
	// GrowthBytes is the last snapshot's live heap minus the first's.
	GrowthBytes int64 `json:"growth_bytes"`
}

// HeapSnapshot is one heap profile's in-use totals, as of the GC heapscope
// forced when it fetched it.
type HeapSnapshot struct {
	Time          time.Time `json:"time"`
	OffsetSeconds float64   `json:"offset_seconds"`
	// InuseBytes and InuseObjects sum the profile: sampled estimates.
	InuseBytes   int64  `json:"inuse_bytes"`
	InuseObjects int64  `json:"inuse_objects"`
	Profile      string `json:"profile"`
	// LiveBytes and LiveObjects are MemStats' HeapAlloc and HeapObjects
	// read right after the snapshot's forced GCs: the live heap, exactly.
	// Absent when that read failed.
	LiveBytes   uint64 `json:"live_bytes,omitempty"`
	LiveObjects uint64 `json:"live_objects,omitempty"`
	// Profiling is true when a timed profile of heapscope's (CPU, block,
	// mutex) ran in the target at the snapshot: the target then holds the
	// profile's buffers (about 1 MiB for a CPU profile), a step in the
	// live heap the leak check takes out where the state changes.
	Profiling bool `json:"profiling,omitempty"`
	// Goroutines counts the goroutines of the profile taken with the
	// snapshot (exact), when it was fetched.
	Goroutines int64 `json:"goroutines,omitempty"`
}

// TopTable is the heaviest sites of one sample type.
type TopTable struct {
	SampleType string `json:"sample_type"`
	Unit       string `json:"unit"`
	// Semantics says what the numbers are: a delta over the window, or a
	// snapshot as of the last GC before a named time.
	Semantics string `json:"semantics"`
	Profile   string `json:"profile"`
	Total     int64  `json:"total"`
	Sites     []Site `json:"sites"`
}

// Site is one source line's share of a sample type.
type Site struct {
	Function  string   `json:"function"`
	File      string   `json:"file"`
	Line      int64    `json:"line"`
	Flat      int64    `json:"flat"`
	FlatShare float64  `json:"flat_share"`
	Cum       int64    `json:"cum"`
	CumShare  float64  `json:"cum_share"`
	Inlined   []string `json:"inlined,omitempty"`
}

// Finding is one diagnosis: a named problem at a site, with the numbers
// behind it and a fix.
type Finding struct {
	ID         string             `json:"id"`
	Severity   string             `json:"severity"`
	Title      string             `json:"title"`
	Function   string             `json:"function,omitempty"`
	File       string             `json:"file,omitempty"`
	Line       int64              `json:"line,omitempty"`
	Evidence   map[string]float64 `json:"evidence"`
	Fix        string             `json:"fix"`
	Confidence float64            `json:"confidence"`
	// Escape holds the compiler's escape-analysis explanations for the
	// line, when the service's source was at hand.
	Escape []string `json:"escape,omitempty"`
	// Cause is the finding's cause key: its kind (the id's first word),
	// the catalogue entry that explains it when one does, and the
	// service's line it names, as in "leak/http-response-body-not-closed
	// at main.fetch (main.go:42)". Findings of successive captures that
	// share it are one problem.
	Cause string `json:"cause,omitempty"`
	// Symptoms are the other findings of the same cause, folded into
	// this one: the goroutines and the memory of one misuse, the sites
	// that grow under one call of the service. The finding's severity
	// is the worst of them.
	Symptoms []Symptom `json:"symptoms,omitempty"`
}

// Symptom is one sign of a finding's cause, as its own check found it.
type Symptom struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Title    string `json:"title"`
	Function string `json:"function,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int64  `json:"line,omitempty"`
}

// Profile is one raw profile kept in the run directory, as fetched (or, for
// the delta, as computed).
type Profile struct {
	Kind string `json:"kind"`
	Path string `json:"path"`
	// Semantics says what the profile covers.
	Semantics string    `json:"semantics"`
	Time      time.Time `json:"time"`
}

// RunDirectory names the other files of the run directory, relative to it.
type RunDirectory struct {
	// Report is report.md; empty in a run kept in a store, which
	// heapscope view renders from the result.
	Report string `json:"report"`
	// MemStats is memstats.json, or memstats.json.gz in a store.
	MemStats string `json:"memstats"`
	Load     string `json:"load,omitempty"`
	// HTMLReport is report.html: one page with the tables, charts and
	// flame graphs, which makes no external request.
	HTMLReport string `json:"html_report,omitempty"`
	// Flames lists the flame graphs drawn from the run's profiles.
	Flames []FlameGraph `json:"flames,omitempty"`
}

// FlameGraph is one flame graph file of a run directory.
type FlameGraph struct {
	Path string `json:"path"`
	// Format is "svg" or "html" (interactive, every sample type).
	Format string `json:"format"`
	// Profile is the profile drawn, SampleType the sample type shown
	// (first, for HTML). Both are empty for a page of several profiles.
	Profile    string `json:"profile,omitempty"`
	SampleType string `json:"sample_type,omitempty"`
	// Title says what the graph shows.
	Title string `json:"title"`
}

// TopFor returns the table of the sample type, or nil.
func (r *Run) TopFor(sampleType string) *TopTable {
	for i := range r.Top {
		if r.Top[i].SampleType == sampleType {
			return &r.Top[i]
		}
	}
	return nil
}
