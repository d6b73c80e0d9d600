package result

// Figure is one headline figure of a run: what compare puts in its
// before/after table, gates by name and tests for significance, and what
// a repeated run summarises across its windows.
type Figure struct {
	// Name is the figure's stable JSON name, used by gates
	// (--fail-on 'bytes_per_request>+5%').
	Name string
	// Label is the figure as people read it.
	Label string
	// Unit is "bytes", "objects", "seconds", "1/s", "bytes/s",
	// "requests/s" or "fraction".
	Unit string
	// Better is -1 when lower values are better, +1 when higher are.
	Better int
	// Get returns the figure of a run, and false when the run lacks it
	// (no load, RSS unknown).
	Get func(*Run) (float64, bool)
	// Set stores a value of the figure in a run, creating the section it
	// belongs to when missing.
	Set func(*Run, float64)
}

// Figures lists the headline figures in the order tables show them.
var Figures = []Figure{
	{Name: "heap_inuse_bytes", Label: "heap in use", Unit: "bytes", Better: -1,
		Get: func(r *Run) (float64, bool) { return float64(r.MemStats.HeapInuseBytes), true },
		Set: func(r *Run, v float64) { r.MemStats.HeapInuseBytes = uint64(v) }},
	{Name: "allocated_bytes_per_second", Label: "allocated per second", Unit: "bytes/s", Better: -1,
		Get: func(r *Run) (float64, bool) { return r.MemStats.AllocatedBytesPerSecond, true },
		Set: func(r *Run, v float64) { r.MemStats.AllocatedBytesPerSecond = v }},
	{Name: "sys_bytes", Label: "Sys", Unit: "bytes", Better: -1,
		Get: func(r *Run) (float64, bool) { return float64(r.MemStats.SysBytes), true },
		Set: func(r *Run, v float64) { r.MemStats.SysBytes = uint64(v) }},
	{Name: "rss_bytes", Label: "RSS", Unit: "bytes", Better: -1,
		Get: func(r *Run) (float64, bool) {
			return float64(r.RSS.RSSBytes), r.RSS.RSSBytes > 0 && r.RSS.Source != "unknown"
		},
		Set: func(r *Run, v float64) { r.RSS.RSSBytes = uint64(v) }},
	{Name: "gc_cycles_per_second", Label: "GC cycles per second", Unit: "1/s", Better: -1,
		Get: func(r *Run) (float64, bool) { return r.MemStats.GCCyclesPerSecond, true },
		Set: func(r *Run, v float64) { r.MemStats.GCCyclesPerSecond = v }},
	{Name: "gc_pause_p99_seconds", Label: "GC pause p99", Unit: "seconds", Better: -1,
		Get: func(r *Run) (float64, bool) { return r.MemStats.GCPauseP99Seconds, r.MemStats.GCPausesCovered > 0 },
		Set: func(r *Run, v float64) { r.MemStats.GCPauseP99Seconds = v }},
	{Name: "gc_pause_max_seconds", Label: "GC pause max", Unit: "seconds", Better: -1,
		Get: func(r *Run) (float64, bool) { return r.MemStats.GCPauseMaxSeconds, r.MemStats.GCPausesCovered > 0 },
		Set: func(r *Run, v float64) { r.MemStats.GCPauseMaxSeconds = v }},
	{Name: "gc_cpu_fraction", Label: "GC CPU", Unit: "fraction", Better: -1,
		Get: func(r *Run) (float64, bool) { return r.MemStats.GCCPUFraction, true },
		Set: func(r *Run, v float64) { r.MemStats.GCCPUFraction = v }},
	{Name: "bytes_per_request", Label: "bytes per request", Unit: "bytes", Better: -1,
		Get: func(r *Run) (float64, bool) {
			if r.PerRequest == nil {
				return 0, false
			}
			return r.PerRequest.BytesPerRequest, true
		},
		Set: func(r *Run, v float64) { perRequest(r).BytesPerRequest = v }},
	{Name: "objects_per_request", Label: "objects per request", Unit: "objects", Better: -1,
		Get: func(r *Run) (float64, bool) {
			if r.PerRequest == nil {
				return 0, false
			}
			return r.PerRequest.ObjectsPerRequest, true
		},
		Set: func(r *Run, v float64) { perRequest(r).ObjectsPerRequest = v }},
	{Name: "throughput_per_second", Label: "throughput", Unit: "requests/s", Better: +1,
		Get: func(r *Run) (float64, bool) {
			if r.Load == nil || r.Load.DurationSeconds <= 0 {
				return 0, false
			}
			return float64(r.Load.Completed) / r.Load.DurationSeconds, true
		},
		Set: func(r *Run, v float64) {
			l := load(r)
			if l.DurationSeconds <= 0 {
				l.DurationSeconds = 1
			}
			l.Completed = uint64(v*l.DurationSeconds + 0.5)
		}},
	{Name: "latency_p50_seconds", Label: "latency p50", Unit: "seconds", Better: -1,
		Get: func(r *Run) (float64, bool) {
			if r.Load == nil || r.Load.Completed == 0 {
				return 0, false
			}
			return r.Load.LatencySeconds.P50, true
		},
		Set: func(r *Run, v float64) { load(r).LatencySeconds.P50 = v }},
	{Name: "latency_p99_seconds", Label: "latency p99", Unit: "seconds", Better: -1,
		Get: func(r *Run) (float64, bool) {
			if r.Load == nil || r.Load.Completed == 0 {
				return 0, false
			}
			return r.Load.LatencySeconds.P99, true
		},
		Set: func(r *Run, v float64) { load(r).LatencySeconds.P99 = v }},
}

// FigureByName returns the headline figure of that JSON name.
func FigureByName(name string) (Figure, bool) {
	for _, f := range Figures {
		if f.Name == name {
			return f, true
		}
	}
	return Figure{}, false
}

// FigureNames lists the JSON names of the headline figures.
func FigureNames() []string {
	names := make([]string, len(Figures))
	for i, f := range Figures {
		names[i] = f.Name
	}
	return names
}

func perRequest(r *Run) *PerRequest {
	if r.PerRequest == nil {
		r.PerRequest = &PerRequest{}
	}
	return r.PerRequest
}

func load(r *Run) *Load {
	if r.Load == nil {
		r.Load = &Load{}
	}
	return r.Load
}
