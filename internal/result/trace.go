package result

// Trace is the GC timeline of an execution trace (internal/exectrace) as
// JSON documents carry it (heapscope trace --format json, a run's
// result.json): snake_case keys, seconds, bytes. Times are offsets from
// the trace's first event.
type Trace struct {
	Summary TraceSummary `json:"summary"`
	Cycles  []TraceCycle `json:"cycles"`
	Pauses  []TracePause `json:"pauses"`
	// Heap and Goal are [seconds, bytes] pairs, downsampled.
	Heap [][2]float64 `json:"heap"`
	Goal [][2]float64 `json:"goal"`
}

// TraceCycle is one GC cycle of a Trace: from the start of its
// sweep-termination pause to the end of its mark-termination pause;
// Partial when the trace cut it.
type TraceCycle struct {
	StartSeconds            float64 `json:"start_seconds"`
	EndSeconds              float64 `json:"end_seconds"`
	MarkSeconds             float64 `json:"mark_seconds"`
	SweepTerminationSeconds float64 `json:"sweep_termination_seconds"`
	MarkTerminationSeconds  float64 `json:"mark_termination_seconds"`
	HeapBeforeBytes         uint64  `json:"heap_before_bytes"`
	HeapAfterBytes          uint64  `json:"heap_after_bytes"`
	GoalBytes               uint64  `json:"goal_bytes"`
	Partial                 bool    `json:"partial,omitempty"`
}

// TracePause is one stop-the-world pause of a Trace; GC when it is one
// of a GC cycle's two pauses.
type TracePause struct {
	StartSeconds    float64 `json:"start_seconds"`
	DurationSeconds float64 `json:"duration_seconds"`
	Reason          string  `json:"reason"`
	GC              bool    `json:"gc"`
	Partial         bool    `json:"partial,omitempty"`
}

// TraceSummary is the GC timeline in numbers. Durations are in seconds,
// sizes in bytes, shares from 0 to 1.
type TraceSummary struct {
	// DurationSeconds is the trace's length.
	DurationSeconds float64 `json:"duration_seconds"`
	// Cycles counts the GC cycles in the trace, Complete those wholly in
	// it; CyclesPerSecond is Cycles over the duration.
	Cycles          int     `json:"cycles"`
	CompleteCycles  int     `json:"complete_cycles"`
	CyclesPerSecond float64 `json:"cycles_per_second"`
	// GCShare is the share of wall time during which a GC cycle was under
	// way (from its sweep-termination pause to the end of its
	// mark-termination pause); STWShare the share spent stopped (every
	// pause), GCSTWShare the share in the GC's own pauses.
	GCShare    float64 `json:"gc_share"`
	STWShare   float64 `json:"stw_share"`
	GCSTWShare float64 `json:"gc_stw_share"`
	// Pauses counts the stop-the-world pauses, GCPauses the GC's own.
	Pauses   int `json:"pauses"`
	GCPauses int `json:"gc_pauses"`
	// PauseP50Seconds, PauseP99Seconds and PauseMaxSeconds are over
	// every pause.
	PauseP50Seconds float64 `json:"pause_p50_seconds"`
	PauseP99Seconds float64 `json:"pause_p99_seconds"`
	PauseMaxSeconds float64 `json:"pause_max_seconds"`
	// MarkMeanSeconds and MarkMaxSeconds are the lengths of the complete
	// cycles' concurrent mark phases.
	MarkMeanSeconds float64 `json:"mark_mean_seconds"`
	MarkMaxSeconds  float64 `json:"mark_max_seconds"`
	// MarkAssistSeconds is the time goroutines spent in mark assists.
	MarkAssistSeconds float64 `json:"mark_assist_seconds"`
	// HeapMinBytes and HeapMaxBytes are the extremes of HeapAlloc,
	// GoalLastBytes the last heap goal; 0 when the trace had none.
	HeapMinBytes  uint64 `json:"heap_min_bytes"`
	HeapMaxBytes  uint64 `json:"heap_max_bytes"`
	GoalLastBytes uint64 `json:"goal_last_bytes"`
}
