package bench

import (
	"bytes"
	"cmp"
	"fmt"
	"io/fs"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/pprofx"
)

// Attribution says where the allocations of a regressed benchmark changed:
// the sites whose bytes or objects per op moved most between one
// memory-profiled run on each side.
type Attribution struct {
	Benchmark string        `json:"benchmark"`
	Package   string        `json:"package"`
	Config    []ConfigValue `json:"-"`
	// Regressed lists the changes that called for the attribution, such
	// as "B/op +100.00%".
	Regressed []string `json:"regressed"`
	// Iters is the iteration count of the profiled runs.
	Iters int         `json:"iters"`
	Sites []SiteDelta `json:"sites"`
	// Err says why there is no attribution, when the profiled runs
	// failed.
	Err string `json:"error,omitempty"`
}

// SiteDelta is one allocation site's figures per op on both sides.
type SiteDelta struct {
	Function string `json:"function"`
	// File is relative to the source tree for the code under test,
	// absolute otherwise (the standard library, the module cache).
	File string `json:"file"`
	// Line is the line on the new side, or on the old side for a site
	// that is gone; OldLine is the old side's when it differs (the change
	// moved the line).
	Line       int64   `json:"line"`
	OldLine    int64   `json:"old_line,omitempty"`
	OldBytes   float64 `json:"old_bytes_per_op"`
	NewBytes   float64 `json:"new_bytes_per_op"`
	OldObjects float64 `json:"old_objects_per_op"`
	NewObjects float64 `json:"new_objects_per_op"`
}

// Location is file:line in a short form: the path in the source tree, or
// the last two elements of a path outside it.
func (s SiteDelta) Location() string {
	f := s.File
	if path.IsAbs(f) {
		dir, base := path.Split(f)
		f = path.Join(path.Base(dir), base)
	}
	if s.OldLine != 0 && s.OldLine != s.Line {
		return fmt.Sprintf("%s:%d (was %d)", f, s.Line, s.OldLine)
	}
	return fmt.Sprintf("%s:%d", f, s.Line)
}

// Profiled is one side of an attribution: the allocation profile of one
// run of a benchmark, as go test -memprofile writes it (alloc_space and
// alloc_objects since the start of the test binary). The profile holds the
// benchmark's setup and the testing package's first call with b.N = 1 as
// well, so the figures per op are over by up to one op's worth divided by
// Iters: 1 % at 100 iterations.
type Profiled struct {
	Profile *profile.Profile
	// Iters is the iteration count of the run, which the figures are
	// divided by.
	Iters int
	// Root is the source tree the side was built from; it is cut from
	// file names so that both sides' sites meet.
	Root string
	// Source reads the files under Root. With it, sites are matched by
	// the text of their line, so that a change that moves lines does not
	// split a site in two; without it, by line number.
	Source fs.FS
}

// AttributeOptions select the sites Attribute returns.
type AttributeOptions struct {
	// N caps the number of sites; 0 means 5.
	N int
	// ByObjects ranks sites by the change of objects per op instead of
	// bytes per op.
	ByObjects bool
	// Focus, when set, keeps only the samples with a frame whose function
	// name matches: BenchmarkFocus, to leave out the test binary's flag
	// parsing and other allocations outside the benchmark.
	Focus *regexp.Regexp
}

// BenchmarkFocus matches the frames every allocation of a running
// benchmark has on its stack, whatever helper functions the benchmark
// calls: testing.(*B).runN, which calls the benchmark function, and the
// goroutines of testing.(*B).RunParallel.
func BenchmarkFocus() *regexp.Regexp {
	return regexp.MustCompile(`^testing\.\(\*B\)\.(runN|RunParallel)($|\.)`)
}

// focus returns p with only the samples that have a frame matching re.
func focus(p *profile.Profile, re *regexp.Regexp) *profile.Profile {
	if re == nil {
		return p
	}
	keep := map[uint64]bool{}
	for _, l := range p.Location {
		for _, ln := range l.Line {
			if ln.Function != nil && re.MatchString(ln.Function.Name) {
				keep[l.ID] = true
				break
			}
		}
	}
	q := p.Copy()
	samples := q.Sample
	q.Sample = nil
	for _, s := range samples {
		if slices.ContainsFunc(s.Location, func(l *profile.Location) bool { return keep[l.ID] }) {
			q.Sample = append(q.Sample, s)
		}
	}
	return q
}

// The noise floor of Attribute: changes smaller than these per op, or than
// 5 % of the largest change, are left out, so that one-off allocations
// under the benchmark that differ between two processes, divided by a
// small iteration count, do not show.
const (
	minBytesPerOp   = 0.5
	minObjectsPerOp = 0.005
)

// Attribute compares the allocation sites of two profiled runs, per op,
// and returns those whose figures changed most, largest change first.
func Attribute(old, new Profiled, o AttributeOptions) ([]SiteDelta, error) {
	if o.N == 0 {
		o.N = 5
	}
	if old.Iters <= 0 || new.Iters <= 0 {
		return nil, fmt.Errorf("attribute: iteration counts %d and %d, want > 0", old.Iters, new.Iters)
	}
	type entry struct {
		site         SiteDelta
		oldSet       bool
		newSet       bool
		oldLineFound int64
	}
	entries := map[string]*entry{}
	var keys []string
	for side, p := range []Profiled{old, new} {
		lines := newLineReader(p.Source)
		prof := focus(p.Profile, o.Focus)
		for _, sample := range []string{pprofx.AllocSpace, pprofx.AllocObjects} {
			tab, err := pprofx.Top(prof, pprofx.TopOptions{Sample: sample})
			if err != nil {
				return nil, fmt.Errorf("attribute: %w", err)
			}
			for _, s := range tab.Sites {
				if s.Flat == 0 {
					continue
				}
				file := relativeTo(s.File, p.Root)
				key := s.Function + "\x00" + file + "\x00"
				if text, ok := lines.line(file, s.Line); ok {
					key += "text\x00" + text
				} else {
					key += fmt.Sprintf("line\x00%d", s.Line)
				}
				e := entries[key]
				if e == nil {
					e = &entry{site: SiteDelta{Function: s.Function, File: file}}
					entries[key] = e
					keys = append(keys, key)
				}
				v := float64(s.Flat) / float64(p.Iters)
				switch {
				case side == 0 && sample == pprofx.AllocSpace:
					e.site.OldBytes += v
				case side == 0:
					e.site.OldObjects += v
				case sample == pprofx.AllocSpace:
					e.site.NewBytes += v
				default:
					e.site.NewObjects += v
				}
				if side == 0 {
					e.oldSet, e.site.OldLine = true, s.Line
				} else {
					e.newSet, e.site.Line = true, s.Line
				}
			}
		}
	}
	sites := make([]SiteDelta, 0, len(keys))
	largest := 0.0
	change := func(s SiteDelta) float64 {
		if o.ByObjects {
			return math.Abs(s.NewObjects - s.OldObjects)
		}
		return math.Abs(s.NewBytes - s.OldBytes)
	}
	for _, k := range keys {
		e := entries[k]
		if !e.newSet {
			e.site.Line = e.site.OldLine
		}
		if !e.oldSet || e.site.OldLine == e.site.Line {
			e.site.OldLine = 0
		}
		s := e.site
		if math.Abs(s.NewBytes-s.OldBytes) < minBytesPerOp && math.Abs(s.NewObjects-s.OldObjects) < minObjectsPerOp {
			continue
		}
		largest = max(largest, change(s))
		sites = append(sites, s)
	}
	sites = slices.DeleteFunc(sites, func(s SiteDelta) bool { return change(s) < largest/20 })
	slices.SortFunc(sites, func(a, b SiteDelta) int {
		if c := cmp.Compare(change(b), change(a)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.File, b.File); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Line, b.Line); c != 0 {
			return c
		}
		return cmp.Compare(a.Function, b.Function)
	})
	if len(sites) > o.N {
		sites = sites[:o.N]
	}
	return sites, nil
}

// relativeTo cuts root from a file name, when the file is under it.
func relativeTo(file, root string) string {
	if root == "" {
		return file
	}
	root = strings.TrimSuffix(root, "/") + "/"
	if rest, ok := strings.CutPrefix(file, root); ok {
		return rest
	}
	return file
}

// lineReader returns the text of source lines, reading each file once.
type lineReader struct {
	fsys  fs.FS
	files map[string][][]byte
}

func newLineReader(fsys fs.FS) *lineReader {
	return &lineReader{fsys: fsys, files: map[string][][]byte{}}
}

// line returns line n of a file relative to the tree, trimmed, or false
// when the file is outside the tree, unreadable or shorter.
func (r *lineReader) line(file string, n int64) (string, bool) {
	if r.fsys == nil || path.IsAbs(file) || !fs.ValidPath(file) || n <= 0 {
		return "", false
	}
	lines, ok := r.files[file]
	if !ok {
		data, err := fs.ReadFile(r.fsys, file)
		if err == nil {
			lines = bytes.Split(data, []byte("\n"))
		}
		r.files[file] = lines
	}
	if int(n) > len(lines) {
		return "", false
	}
	text := strings.TrimSpace(string(lines[n-1]))
	return text, text != ""
}
