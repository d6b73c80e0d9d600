package allocbench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxSaved caps a saved report read back: a full matrix of five runs is
// about 300 KiB.
const maxSaved = 64 << 20

// Saved is what ReadSaved recovers of a report saved as JSON: the runs
// and what they were run with, enough to analyse them again.
type Saved struct {
	Toolchains []Toolchain
	Patterns   []Pattern
	LiveBytes  int
	Runs       []Sample
}

// ReadSaved reads a report saved as JSON (allocbench --format json, a
// Report as encoding/json writes it) and returns its runs, with the patterns they cover in the
// matrix's order, so that Analyse can summarise them again, with other
// thresholds or into another format.
func ReadSaved(r io.Reader) (*Saved, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSaved+1))
	if err != nil {
		return nil, fmt.Errorf("read saved report: %w", err)
	}
	if len(data) > maxSaved {
		return nil, fmt.Errorf("read saved report: larger than %d MiB", maxSaved>>20)
	}
	var doc struct {
		Toolchains []Toolchain `json:"toolchains"`
		LiveBytes  int         `json:"live_bytes"`
		Runs       []Sample    `json:"runs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("read saved report: not an allocbench JSON report: %w", err)
	}
	if len(doc.Toolchains) == 0 || len(doc.Runs) == 0 {
		return nil, errors.New("read saved report: no toolchains or no runs in it: is it the output of allocbench --format json?")
	}
	if doc.LiveBytes <= 0 {
		return nil, fmt.Errorf("read saved report: live_bytes %d: want a positive size", doc.LiveBytes)
	}
	used := map[string]bool{}
	for _, s := range doc.Runs {
		used[s.Pattern] = true
	}
	s := &Saved{Toolchains: doc.Toolchains, LiveBytes: doc.LiveBytes, Runs: doc.Runs}
	for _, p := range Matrix() {
		if used[p.Name()] {
			s.Patterns = append(s.Patterns, p)
			delete(used, p.Name())
		}
	}
	for name := range used {
		return nil, fmt.Errorf("read saved report: run of pattern %q, which is not in the matrix", name)
	}
	return s, nil
}
