package pyroscope

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/heapscope/heapscope/internal/rundir"
)

// Read reads the capture stored in the run directory dir: its result
// (rundir.Read) and the profiles Select picks from it. A profile result.json
// lists but the directory lacks is left out with a warning. A run of
// several windows (profile --repeat) is refused: watch never stores one.
func Read(dir string, m Meta) (Capture, []string, error) {
	res, err := rundir.Read(dir)
	if err != nil {
		return Capture{}, nil, fmt.Errorf("read capture for pyroscope: %w", err)
	}
	if res.Repeat != nil {
		return Capture{}, nil, fmt.Errorf("read capture for pyroscope: %s holds %d windows: export the windows' directories one by one", dir, len(res.Repeat.Windows))
	}
	c := Capture{Meta: m}
	var warnings []string
	for _, p := range Select(res.Profiles) {
		path := filepath.Join(dir, filepath.FromSlash(p.Path))
		data, err := readCapped(path, maxProfile)
		if errors.Is(err, fs.ErrNotExist) {
			warnings = append(warnings, fmt.Sprintf("%s: listed in result.json but missing; not pushed", p.Path))
			continue
		}
		if err != nil {
			return Capture{}, nil, fmt.Errorf("read capture for pyroscope: %w", err)
		}
		c.Profiles = append(c.Profiles, Profile{Kind: p.Kind, Path: p.Path, Time: p.Time, Data: data})
	}
	return c, warnings, nil
}

// readCapped reads a file of at most limit bytes.
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("read %s: over %d bytes", path, limit)
	}
	return data, nil
}
