package run

import (
	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/report"
)

// CompareDirs compares the runs of the before and after directories, each
// side read by compare.ReadSide, as compare.Compare does; with flame, the
// comparison carries the differential flame graph of the allocations
// (compare.Flame), for its HTML page. warn is told what the runs lack, as
// each side is read.
func CompareDirs(before, after []string, o compare.Options, flame bool, warn func(string)) (report.Comparison, error) {
	var sides [2]compare.Side
	for i, dirs := range [2][]string{before, after} {
		side, warnings, err := compare.ReadSide(dirs)
		for _, w := range warnings {
			warn(w)
		}
		if err != nil {
			return report.Comparison{}, err
		}
		sides[i] = side
	}
	c, err := compare.Compare(sides[0], sides[1], o)
	if err != nil {
		return report.Comparison{}, err
	}
	doc := report.Comparison{Comparison: c}
	if flame {
		doc.Flame, err = compare.Flame(sides[0], sides[1], c)
	}
	return doc, err
}
