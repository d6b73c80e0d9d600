package compare

import (
	"errors"
	"fmt"

	"github.com/heapscope/heapscope/internal/rundir"
)

// ReadSide reads the run directories of one side of a comparison: every
// run, or every window of a repeated run, is one sample. The side is
// labelled by its first directory (and its last, when there are several).
// The warnings name what the runs lack, as ReadStored's do.
func ReadSide(dirs []string) (Side, []string, error) {
	if len(dirs) == 0 {
		return Side{}, nil, errors.New("read side: no run directory")
	}
	side := Side{Label: dirs[0]}
	if len(dirs) > 1 {
		side.Label = fmt.Sprintf("%s … %s", dirs[0], dirs[len(dirs)-1])
	}
	var warnings []string
	for _, dir := range dirs {
		stored, w, err := rundir.ReadStored(dir)
		warnings = append(warnings, w...)
		if err != nil {
			return Side{}, warnings, err
		}
		for _, s := range stored {
			side.Samples = append(side.Samples, Sample{Label: s.Dir, Run: s.Run, Allocs: s.Allocs})
		}
	}
	return side, warnings, nil
}
