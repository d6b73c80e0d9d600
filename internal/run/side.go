package run

import (
	"errors"
	"fmt"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/rundir"
)

// CompareDirs compares the runs of the before and after directories, each
// side read by ReadSide, as compare.Compare does; with flame, the
// comparison carries the differential flame graph of the allocations
// (compare.Flame), for its HTML page. warn is told what the runs lack, as
// each side is read.
func CompareDirs(before, after []string, o compare.Options, flame bool, warn func(string)) (report.Comparison, error) {
	var sides [2]compare.Side
	for i, dirs := range [2][]string{before, after} {
		side, warnings, err := ReadSide(dirs)
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

// ReadSide reads the run directories of one side of a comparison: every
// run, or every window of a repeated run, is one sample. The side is
// labelled by its first directory (and its last, when there are several).
// The warnings name what the runs lack, as ReadStored's do.
func ReadSide(dirs []string) (compare.Side, []string, error) {
	if len(dirs) == 0 {
		return compare.Side{}, nil, errors.New("read side: no run directory")
	}
	side := compare.Side{Label: dirs[0]}
	if len(dirs) > 1 {
		side.Label = fmt.Sprintf("%s … %s", dirs[0], dirs[len(dirs)-1])
	}
	var warnings []string
	for _, dir := range dirs {
		stored, w, err := rundir.ReadStored(dir)
		warnings = append(warnings, w...)
		if err != nil {
			return compare.Side{}, warnings, err
		}
		for _, s := range stored {
			side.Samples = append(side.Samples, compare.Sample{Label: s.Dir, Run: s.Run, Allocs: s.Allocs})
		}
	}
	return side, warnings, nil
}
