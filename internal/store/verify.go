package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/heapscope/heapscope/internal/pprofx"
)

// BrokenFile is a file of a run directory that does not read back.
type BrokenFile struct {
	// Path is relative to the run directory, with slashes.
	Path string `json:"path"`
	// Reason says what is wrong with it.
	Reason string `json:"reason"`
}

// String returns the file and what is wrong with it.
func (b BrokenFile) String() string { return b.Path + ": " + b.Reason }

// VerifyRun reads back every file of a run directory as its readers
// would, and returns those that fail, sorted by path: a profile (*.pb.gz)
// must parse as a pprof profile (pprofx.ReadStacks, within its default
// limits), any other *.gz must decompress to its end, and a *.json must
// be valid JSON. Other files (an execution trace, text) have no form to
// check. The error is for a directory that cannot be walked at all.
func VerifyRun(dir string) ([]BrokenFile, error) {
	var broken []BrokenFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if err := verifyFile(p); err != nil {
			broken = append(broken, BrokenFile{Path: filepath.ToSlash(rel), Reason: err.Error()})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("verify run %s: %w", dir, err)
	}
	slices.SortFunc(broken, func(a, b BrokenFile) int { return strings.Compare(a.Path, b.Path) })
	return broken, nil
}

// verifyFile reads one file back: as a profile, as gzip or as JSON.
func verifyFile(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	switch {
	case strings.HasSuffix(p, ".pb.gz"):
		if _, err := pprofx.ReadStacks(f, pprofx.ReadOptions{Unmerged: true}); err != nil {
			return fmt.Errorf("not a readable profile: %w", err)
		}
	case strings.HasSuffix(p, ".gz"):
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("not gzip: %w", err)
		}
		defer zr.Close()
		if _, err := io.Copy(io.Discard, zr); err != nil {
			return fmt.Errorf("does not decompress: %w", err)
		}
	case strings.HasSuffix(p, ".json"):
		data, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		if !json.Valid(data) {
			return errors.New("not valid JSON")
		}
	}
	return nil
}
