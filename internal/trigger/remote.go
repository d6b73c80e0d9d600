package trigger

import (
	"math"
	"time"

	"github.com/heapscope/heapscope/internal/target"
)

// RemoteSample reads a sample from a target's /metrics body (Prometheus
// text, as client_golang's Go and process collectors write it):
//
//	process_resident_memory_bytes          RSS, and Memory against limit
//	process_start_time_seconds             Start
//	go_goroutines                          Goroutines
//	go_memstats_sys_bytes minus
//	go_memstats_heap_released_bytes        GoMemory
//	go_gc_gomemlimit_bytes                 GoMemLimit, unless it is the
//	                                       runtime's "no limit"
//
// limit is the memory limit configured for the target, 0 for none: the
// metrics do not say it. A metric the body lacks leaves its field
// unknown. The heap after GC and the GC's CPU share are not among these
// metrics: they come from MemStats (AddMemStats). Time is left for the
// caller to set; nothing here reads a clock.
func RemoteSample(metrics []byte, limit uint64) Sample {
	var s Sample
	if rss, ok := target.ResidentMemory(metrics); ok {
		s.RSS, s.Memory = rss, rss
		s.Known |= KnownRSS | KnownMemory
	}
	if limit > 0 {
		s.MemoryLimit = limit
		s.Known |= KnownMemoryLimit
	}
	if v, ok := gauge(metrics, "process_start_time_seconds"); ok && v > 0 && v < 1<<40 {
		sec, frac := math.Modf(v)
		s.Start = time.Unix(int64(sec), int64(math.Round(frac*1e3))*int64(time.Millisecond))
		s.Known |= KnownStart
	}
	if v, ok := gauge(metrics, "go_goroutines"); ok {
		s.Goroutines = uint64(v)
		s.Known |= KnownGoroutines
	}
	sys, ok1 := gauge(metrics, "go_memstats_sys_bytes")
	released, ok2 := gauge(metrics, "go_memstats_heap_released_bytes")
	if ok1 && ok2 && sys >= released {
		s.GoMemory = uint64(sys - released)
		s.Known |= KnownGoMemory
	}
	if v, ok := gauge(metrics, "go_gc_gomemlimit_bytes"); ok && v > 0 && v < math.MaxInt64 {
		s.GoMemLimit = uint64(v)
		s.Known |= KnownGoMemLimit
	}
	return s
}

// gauge returns a non-negative value of metric name below 2^64.
func gauge(metrics []byte, name string) (float64, bool) {
	v, ok := target.MetricValue(metrics, name)
	if !ok || v < 0 || v >= 1<<64 {
		return 0, false
	}
	return v, true
}
