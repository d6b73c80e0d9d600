package view

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/webguard"
)

// finding is a finding as the index shows it.
type finding struct {
	Severity, Title, Where, Fix string
	Symptoms                    []symptom
}

// symptom is a sign of a finding's cause, folded into it.
type symptom struct{ Severity, Title, Where string }

// findingsOf returns the run's findings, the most severe first (the
// run's order among equals).
func findingsOf(r *result.Run) []finding {
	fs := slices.Clone(r.Findings)
	slices.SortStableFunc(fs, func(a, b result.Finding) int { return problem.Rank(b.Severity) - problem.Rank(a.Severity) })
	out := make([]finding, 0, len(fs))
	for _, f := range fs {
		v := finding{Severity: f.Severity, Title: f.Title, Where: where(f.Function, f.File, f.Line), Fix: f.Fix}
		for _, s := range f.Symptoms {
			v.Symptoms = append(v.Symptoms, symptom{s.Severity, s.Title, where(s.Function, s.File, s.Line)})
		}
		out = append(out, v)
	}
	return out
}

// where names a site: its function and line, either when known.
func where(function, file string, line int64) string {
	at := ""
	if file != "" {
		at = humanize.Location(file, line)
	}
	switch {
	case function == "":
		return at
	case at == "":
		return humanize.ShortFunction(function)
	}
	return humanize.ShortFunction(function) + " (" + at + ")"
}

// isBundle reports whether dir holds a trigger's bundle: watch writes
// compare.md into each, and into nothing else.
func isBundle(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "compare.md"))
	return err == nil && st.Mode().IsRegular()
}

// maxSmall bounds the text read of a run's small files (missing.txt,
// compare.md) for the index.
const maxSmall = 1 << 20

// readSmall returns the text of a file of the run directory, "" when it
// has none; a long one is cut.
func readSmall(dir, name string) string {
	b, err := webguard.ReadFile(dir, name)
	if err != nil {
		return ""
	}
	if len(b) > maxSmall {
		b = append(b[:maxSmall], "\n…"...)
	}
	return string(b)
}

// lines returns the non-empty lines of text.
func lines(text string) []string {
	var out []string
	for l := range strings.Lines(text) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// file is a file of the run directory as the index lists it.
type file struct{ Path, Size string }

// maxFiles bounds the files the index lists.
const maxFiles = 2000

// filesOf lists the regular files of the run directory, by path
// (symlinks left out: the server does not follow them out).
func filesOf(dir string) []file {
	var out []file
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || len(out) >= maxFiles {
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return nil
		}
		out = append(out, file{Path: filepath.ToSlash(rel), Size: humanize.Bytes(float64(info.Size()))})
		return nil
	})
	return out
}
