package bench

import (
	"slices"

	"golang.org/x/perf/benchmath"
)

// CompareSamples compares two sets of measurements of one figure as
// benchstat compares the runs of one benchmark: medians with their
// confidence intervals (benchmath.AssumeNothing) and a Mann-Whitney U test
// at level alpha. It lets measurements that are not go test -bench output,
// such as the figures of repeated profiling runs, get the same statistics.
// Zero alpha and confidence take DefaultAlpha and DefaultConfidence.
func CompareSamples(old, new []float64, alpha, confidence float64) (oldSum, newSum Summary, delta Delta) {
	if alpha == 0 {
		alpha = DefaultAlpha
	}
	if confidence == 0 {
		confidence = DefaultConfidence
	}
	thresholds := benchmath.Thresholds{CompareAlpha: alpha}
	summarise := func(values []float64) (Summary, *benchmath.Sample) {
		s := benchmath.NewSample(slices.Clone(values), &thresholds)
		sum := benchmath.AssumeNothing.Summary(s, confidence)
		return Summary{
			Center: sum.Center, Lo: sum.Lo, Hi: sum.Hi,
			Range:    sum.PctRangeString(),
			N:        len(s.Values),
			Values:   s.Values,
			Warnings: append(slices.Clone(s.Warnings), sum.Warnings...),
		}, s
	}
	oldSum, s1 := summarise(old)
	newSum, s2 := summarise(new)
	d := newDelta(oldSum.Center, newSum.Center, benchmath.AssumeNothing.Compare(s1, s2))
	return oldSum, newSum, *d
}
