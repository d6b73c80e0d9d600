// Package rundir reads heapscope's run directories: a run's result.json
// (checked against the schema versions this heapscope reads), the windows
// of a run recorded as several, and the profile files a run lists. It is
// the one reader of a run directory, beside internal/run which writes them;
// it imports only the result types and the profile parser, so that a
// reader (view, compare, diagnose DIR) does not pull in the collector.
package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"

	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
)

// Read loads the result.json of a run directory, or the result.json.gz of
// a run kept in a store. A directory without either is not a run.
func Read(dir string) (*result.Run, error) {
	var res result.Run
	name := result.FileName
	err := ReadJSON(filepath.Join(dir, name), &res)
	if errors.Is(err, fs.ErrNotExist) {
		name = result.CompressedFileName
		err = ReadJSON(filepath.Join(dir, name), &res)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read run %s: no %s, so it is not a (finished) heapscope run", dir, result.FileName)
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return nil, fmt.Errorf("read run: %w", err) // it names the file
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %s: %w", dir, name, err)
	}
	if err := checkSchema(res.SchemaVersion); err != nil {
		return nil, fmt.Errorf("read run %s: %w", dir, err)
	}
	return &res, nil
}

// maxJSON bounds a JSON file of a run directory once decompressed: a
// result.json is tens of kilobytes.
const maxJSON = 64 << 20

// ReadJSON decodes the JSON file at path into v, decompressing it first
// when its name ends in .gz (a run kept in a store).
func ReadJSON(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("decompress: %w", err)
		}
		defer zr.Close()
		r = zr
	}
	data, err := io.ReadAll(io.LimitReader(r, maxJSON+1))
	switch {
	case err != nil:
		return err
	case len(data) > maxJSON:
		return fmt.Errorf("%s is over %d bytes decompressed", filepath.Base(path), maxJSON)
	}
	return json.Unmarshal(data, v)
}

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
	case !fi.IsDir() && (filepath.Base(dir) == result.FileName || filepath.Base(dir) == result.CompressedFileName):
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

// ReadStacks reads the profile at path by stack, as ReadStacksFile does,
// or from stdin for "-": the decoded profile is never held in memory.
func ReadStacks(path string, stdin io.Reader, opts pprofx.ReadOptions) (*pprofx.Stacks, error) {
	if path != "-" {
		return ReadStacksFile(path, opts)
	}
	s, err := pprofx.ReadStacks(stdin, opts)
	if err != nil {
		return nil, fmt.Errorf("read profile %s: %w", path, err)
	}
	return s, nil
}

// ReadStacksFile reads a profile file by stack (pprofx.ReadStacks), with
// errors that name the file; a directory is refused as such.
func ReadStacksFile(path string, opts pprofx.ReadOptions) (*pprofx.Stacks, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("read profile %s: is a directory: give a profile file (.pb.gz) in it", path)
	}
	s, err := pprofx.ReadStacks(f, opts)
	if err != nil {
		return nil, fmt.Errorf("read profile %s: %w", path, err)
	}
	return s, nil
}

// ParseProfileFile reads and parses a whole profile file, its
// decompressed size capped at pprofx.DefaultMaxDecompressed.
func ParseProfileFile(path string) (*profile.Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	p, err := pprofx.Parse(data, pprofx.DefaultMaxDecompressed)
	if err != nil {
		return nil, fmt.Errorf("read profile %s: %w", path, err)
	}
	return p, nil
}
