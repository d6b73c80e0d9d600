package pprofx

import (
	"strings"

	"github.com/google/pprof/profile"
)

// profilerPackages are the packages that produce profiles inside the
// target. What they allocate while answering a profiler (the CPU profile's
// buffers, the gzip writer of every profile served) is the cost of being
// observed, not of the service.
var profilerPackages = []string{"runtime/pprof.", "net/http/pprof."}

// IsProfilerFunction reports whether the function belongs to the code that
// serves profiles.
func IsProfilerFunction(name string) bool {
	for _, p := range profilerPackages {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// WithoutProfiler returns p without the samples whose stack runs through
// runtime/pprof or net/http/pprof, and the values it removed per sample
// type. p is not modified; the result shares p's samples, locations and
// functions, so treat both as read-only.
func WithoutProfiler(p *profile.Profile) (*profile.Profile, []int64) {
	// A location is the profiler's when any of its (inlined) lines is.
	profiler := make(map[uint64]bool, len(p.Location))
	for _, l := range p.Location {
		for _, ln := range l.Line {
			if ln.Function != nil && IsProfilerFunction(ln.Function.Name) {
				profiler[l.ID] = true
				break
			}
		}
	}
	dropped := make([]int64, len(p.SampleType))
	kept := make([]*profile.Sample, 0, len(p.Sample))
	for _, s := range p.Sample {
		if fromProfiler(s, profiler) {
			for i, v := range s.Value {
				dropped[i] += v
			}
			continue
		}
		kept = append(kept, s)
	}
	out := &profile.Profile{
		SampleType: p.SampleType, DefaultSampleType: p.DefaultSampleType,
		Sample: kept, Mapping: p.Mapping, Location: p.Location, Function: p.Function,
		Comments: p.Comments, DocURL: p.DocURL, DropFrames: p.DropFrames, KeepFrames: p.KeepFrames,
		TimeNanos: p.TimeNanos, DurationNanos: p.DurationNanos, PeriodType: p.PeriodType, Period: p.Period,
	}
	return out, dropped
}

func fromProfiler(s *profile.Sample, profiler map[uint64]bool) bool {
	for _, l := range s.Location {
		if profiler[l.ID] {
			return true
		}
	}
	return false
}
