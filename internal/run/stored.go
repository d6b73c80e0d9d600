package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
)

// checkSchema says whether this heapscope reads a result.json of that
// schema version, and which version is needed when it does not.
func checkSchema(v int) error {
	switch {
	case v == 0:
		return fmt.Errorf("%s has no schema_version, so heapscope did not write it", result.FileName)
	case v > result.SchemaVersion:
		return fmt.Errorf("%s has schema version %d, newer than the %d this heapscope reads: upgrade heapscope", result.FileName, v, result.SchemaVersion)
	case v < result.SchemaVersion:
		return fmt.Errorf("%s has schema version %d, older than the %d this heapscope reads: use the heapscope that wrote it, or profile again", result.FileName, v, result.SchemaVersion)
	}
	return nil
}

// Stored is a run read back from its directory: a run, or one window of a
// run recorded with several (windows/NNN/).
type Stored struct {
	Dir string
	Run *result.Run
	// Allocs is the run's allocs-delta profile, parsed; nil when the run
	// has none.
	Allocs *profile.Profile
}

// ReadStored reads a run directory with its allocs-delta profile. A run
// recorded as several windows gives one Stored per window that has a
// result; the windows without one are named in the warnings. dir may
// also name the run's result.json.
func ReadStored(dir string) ([]Stored, []string, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("read run %s: no such directory", dir)
	case err != nil:
		return nil, nil, fmt.Errorf("read run: %w", err)
	case !fi.IsDir() && filepath.Base(dir) == result.FileName:
		dir = filepath.Dir(dir)
	case !fi.IsDir():
		return nil, nil, fmt.Errorf("read run %s: not a run directory (a file; give the directory holding %s)", dir, result.FileName)
	}
	res, err := Read(dir)
	if err != nil {
		return nil, nil, err
	}
	if res.Repeat == nil {
		s, warn, err := readStored(dir, res)
		if err != nil {
			return nil, nil, err
		}
		return []Stored{s}, warn, nil
	}
	var out []Stored
	var warnings []string
	for _, w := range res.Repeat.Windows {
		wdir := filepath.Join(dir, filepath.FromSlash(w.Path))
		if w.Status == result.StatusFailed {
			warnings = append(warnings, fmt.Sprintf("%s: window failed, left out: %s", wdir, w.Error))
			continue
		}
		wres, err := Read(wdir)
		if err != nil {
			return nil, nil, err
		}
		s, warn, err := readStored(wdir, wres)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, s)
		warnings = append(warnings, warn...)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("read run %s: none of its %d windows has a result", dir, len(res.Repeat.Windows))
	}
	return out, warnings, nil
}

func readStored(dir string, res *result.Run) (Stored, []string, error) {
	s := Stored{Dir: dir, Run: res}
	for _, p := range res.Profiles {
		if p.Kind != "allocs-delta" {
			continue
		}
		path := filepath.Join(dir, filepath.FromSlash(p.Path))
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return s, []string{fmt.Sprintf("%s: listed in %s but missing; its sites are not compared", path, result.FileName)}, nil
		}
		if err != nil {
			return Stored{}, nil, fmt.Errorf("read run %s: %w", dir, err)
		}
		if s.Allocs, err = pprofx.Parse(data, pprofx.DefaultMaxDecompressed); err != nil {
			return Stored{}, nil, fmt.Errorf("read run %s: %s: %w", dir, p.Path, err)
		}
		break
	}
	return s, nil, nil
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
		stored, w, err := ReadStored(dir)
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
