package run

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/escape"
	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/option"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
)

// diagnose runs the checks of package diagnose on what the run collected
// and records the findings and notes in res.
func (c *collector) diagnose(res *result.Run, delta *profile.Profile) {
	in := diagnose.Input{Run: res, Allocs: delta}
	for i, s := range c.snaps {
		in.Heap = append(in.Heap, diagnose.Profile{Name: snapshotFile(i), Time: s.at, Profile: s.profile})
	}
	if c.cpu != nil {
		if p, err := c.parse(c.cpu); err == nil {
			in.CPU = p
		}
	}
	for i, s := range c.snaps {
		if g := s.goroutines; g != nil {
			in.Goroutines = append(in.Goroutines, diagnose.Profile{Name: goroutineSnapshotFile(i), Time: g.at, Profile: g.profile})
		}
	}
	if len(in.Goroutines) == 0 && c.goroutine != nil {
		// No series: the end profile alone, so the note says why the
		// leak check did not run.
		if p, err := c.parse(c.goroutine); err == nil {
			in.Goroutines = append(in.Goroutines, diagnose.Profile{Name: goroutineFile, Time: c.endTime, Profile: p})
		}
	}
	for _, name := range sortedKeys(c.extra) {
		if p, err := c.parse(c.extra[name]); err == nil {
			in.Contention = append(in.Contention, diagnose.Profile{Name: extraFile(name), Time: c.startTime, Profile: p})
		}
	}
	in.Live = liveSeries(res, in.Heap)
	in.FirstUnderLoad = firstUnderLoad(res.Load != nil, res.Window.WarmupSeconds)
	if c.haveMemEnd {
		ms := c.memEnd
		in.MemStats = &ms
	}
	if c.proc.readProc {
		// The process runs here: the paths in its profiles are this
		// machine's, unless it was built with -trimpath.
		in.Source = &SourceFiles{}
	}
	in.All = c.cfg.AllFindings
	rep := diagnose.Run(in)
	res.Findings = diagnose.WithKnown(rep.Findings, c.cfg.Known)
	res.DiagnosisNotes = rep.Notes
	res.HiddenHotSpots = rep.HiddenHotSpots
}

// liveSeries returns the exact live heap the run read with each of heap,
// its heap snapshots by file name, or nil when one lacks it (a run
// recorded before heapscope read MemStats with every snapshot, or a read
// that failed).
func liveSeries(res *result.Run, heap []diagnose.Profile) []diagnose.Live {
	if res.HeapGrowth == nil {
		return nil
	}
	byFile := make(map[string]result.HeapSnapshot, len(res.HeapGrowth.Snapshots))
	for _, s := range res.HeapGrowth.Snapshots {
		byFile[s.Profile] = s
	}
	live := make([]diagnose.Live, 0, len(heap))
	for _, h := range heap {
		s, ok := byFile[h.Name]
		if !ok || s.LiveBytes == 0 {
			return nil
		}
		live = append(live, diagnose.Live{Bytes: s.LiveBytes, Objects: s.LiveObjects, Profiling: s.Profiling})
	}
	return live
}

// firstUnderLoad is the index of a run's first heap snapshot taken under
// its load: the second when the window opened as the load began, else
// the first.
func firstUnderLoad(loaded bool, warmupSeconds float64) int {
	if loaded && warmupSeconds == 0 {
		return 1
	}
	return 0
}

// Diagnosis says how to diagnose a run directory again.
type Diagnosis struct {
	// Thresholds replace the defaults when set; for DiagnosePaths, so do
	// those of the YAML file ThresholdsFile (diagnose.ParseThresholds).
	Thresholds     *diagnose.Thresholds
	ThresholdsFile string
	// SourceDir is the service's source (a Go module), when the paths in
	// the profiles are not readable as they are.
	SourceDir string
	// Escapes explains allocations from the compiler's escape analysis.
	Escapes diagnose.Escapes
	// All keeps the small hot spots (diagnose.Input.All).
	All bool
	// MemoryLimit is the limit DiagnoseStored projects heap growth to
	// when the stored runs name no cgroup limit of their own (a remote
	// target's configured limit), in bytes; 0 when unknown.
	MemoryLimit float64
}

// DiagnoseDir reads a run directory and diagnoses it again: its
// result.json, raw profiles and memstats.json. The profiles are read with
// the default size limit.
func DiagnoseDir(dir string, opts Diagnosis) (*result.Run, diagnose.Report, error) {
	res, err := rundir.Read(dir)
	if err != nil {
		return nil, diagnose.Report{}, err
	}
	in := diagnose.Input{Run: res, Thresholds: opts.Thresholds, Escapes: opts.Escapes, All: opts.All}
	read := func(rel string) (*profile.Profile, error) {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			return nil, fmt.Errorf("read run %s: %w", dir, err)
		}
		p, err := pprofx.Parse(data, pprofx.DefaultMaxDecompressed)
		if err != nil {
			return nil, fmt.Errorf("read run %s: %s: %w", dir, rel, err)
		}
		return p, nil
	}
	var endGoroutines []diagnose.Profile
	for _, pr := range res.Profiles {
		entry := diagnose.Profile{Name: pr.Path, Time: pr.Time}
		if pr.Kind == "heap" {
			// Read by stack with the rest of the series (LoadHeap).
			entry.Open = opener(filepath.Join(dir, pr.Path))
			in.Heap = append(in.Heap, entry)
			continue
		}
		p, err := read(pr.Path)
		if err != nil {
			return nil, diagnose.Report{}, err
		}
		entry.Profile = p
		switch pr.Kind {
		case "allocs-delta":
			in.Allocs = p
		case "cpu":
			in.CPU = p
		case "goroutine":
			if pr.Path == goroutineFile {
				// The end-of-window profile: the series, taken with
				// the heap snapshots, is what the leak check needs.
				endGoroutines = append(endGoroutines, entry)
			} else {
				in.Goroutines = append(in.Goroutines, entry)
			}
		case "block", "mutex":
			in.Contention = append(in.Contention, entry)
		}
	}
	if len(in.Goroutines) == 0 {
		// A run recorded before goroutine series.
		in.Goroutines = endGoroutines
	}
	in.Live = liveSeries(res, in.Heap)
	in.FirstUnderLoad = firstUnderLoad(res.Load != nil, res.Window.WarmupSeconds)
	if err := in.LoadHeap(); err != nil {
		return nil, diagnose.Report{}, fmt.Errorf("read run %s: %w", dir, err)
	}
	if res.Files.MemStats != "" {
		if ms, ok := endMemStats(filepath.Join(dir, res.Files.MemStats)); ok {
			in.MemStats = &ms
		}
	}
	switch {
	case opts.SourceDir != "":
		in.Source = &SourceFiles{Dir: opts.SourceDir}
	case res.Target.Local:
		in.Source = &SourceFiles{}
	}
	return res, diagnose.Run(in), nil
}

// endMemStats reads the "end" record of memstats.json.
func endMemStats(path string) (gcstats.MemStats, bool) {
	var records []memStatsRecord
	if rundir.ReadJSON(path, &records) != nil {
		return gcstats.MemStats{}, false
	}
	for _, r := range records {
		if r.Label == "end" {
			return r.MemStats, true
		}
	}
	return gcstats.MemStats{}, false
}

// SourceFiles reads source lines for diagnose. With no Dir, a file is read
// at the path the profile names (a process built on this machine); with a
// Dir, the path is looked for under it, dropping leading elements until
// it is found, so that the absolute paths of another machine and the
// module paths of a -trimpath build both resolve. Files are read once.
type SourceFiles struct {
	Dir string

	mu    sync.Mutex
	files map[string][]string
}

var _ diagnose.SourceReader = (*SourceFiles)(nil)

// maxSourceFile bounds a source file read for one line.
const maxSourceFile = 4 << 20

// Line returns line n (from 1) of the file, and whether it could be read.
func (s *SourceFiles) Line(file string, n int64) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines, ok := s.files[file]
	if !ok {
		lines = s.read(file)
		if s.files == nil {
			s.files = map[string][]string{}
		}
		s.files[file] = lines
	}
	if n < 1 || int(n) > len(lines) {
		return "", false
	}
	return lines[n-1], true
}

func (s *SourceFiles) read(file string) []string {
	if !strings.HasSuffix(file, ".go") {
		return nil
	}
	for _, path := range s.candidates(file) {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		var lines []string
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		size := 0
		for sc.Scan() && size < maxSourceFile {
			lines = append(lines, sc.Text())
			size += len(sc.Text()) + 1
		}
		f.Close()
		return lines
	}
	return nil
}

// candidates lists where the file may be.
func (s *SourceFiles) candidates(file string) []string {
	if s.Dir == "" {
		if filepath.IsAbs(file) {
			return []string{file}
		}
		return nil
	}
	parts := strings.Split(filepath.ToSlash(file), "/")
	var out []string
	for i := range parts {
		rest := filepath.Join(parts[i:]...)
		if rest != "" {
			out = append(out, filepath.Join(s.Dir, rest))
		}
	}
	return out
}

// readThresholds sets Thresholds from ThresholdsFile, when set.
func (d *Diagnosis) readThresholds() error {
	if d.ThresholdsFile == "" {
		return nil
	}
	data, err := os.ReadFile(d.ThresholdsFile)
	if err != nil {
		return option.Errorf("ThresholdsFile", "read {ThresholdsFile}: %w", err)
	}
	t, err := diagnose.ParseThresholds(data)
	if err != nil {
		return option.Errorf("ThresholdsFile", "{ThresholdsFile} %s: %w", d.ThresholdsFile, err)
	}
	d.Thresholds = &t
	return nil
}

// DiagnosePaths diagnoses what heapscope diagnose is given: one run
// directory (diagnosed again, as DiagnoseDir does), or profile files
// (BareProfiles), with the thresholds of opts.ThresholdsFile when set.
// With opts.SourceDir, a directory, source lines are read from there
// and the findings get the compiler's escape analysis of the module's
// packages that hold them; an analysis that fails leaves the findings
// without it and comes back as a warning.
func DiagnosePaths(ctx context.Context, paths []string, opts Diagnosis) (diagnose.Report, []error, error) {
	if len(paths) == 0 {
		return diagnose.Report{}, nil, errors.New("diagnose: no run directory or profile")
	}
	if err := opts.readThresholds(); err != nil {
		return diagnose.Report{}, nil, err
	}
	if st, err := os.Stat(opts.SourceDir); opts.SourceDir != "" && (err != nil || !st.IsDir()) {
		return diagnose.Report{}, nil, option.Errorf("SourceDir", "{SourceDir} %s: not a directory", opts.SourceDir)
	}
	var rep diagnose.Report
	if st, err := os.Stat(paths[0]); err == nil && st.IsDir() {
		if len(paths) > 1 {
			return diagnose.Report{}, nil, fmt.Errorf("diagnose takes one RUN_DIR, or profiles: %s is a directory", paths[0])
		}
		if _, rep, err = DiagnoseDir(paths[0], opts); err != nil {
			return diagnose.Report{}, nil, err
		}
	} else {
		in, err := BareProfiles(paths)
		if err != nil {
			return diagnose.Report{}, nil, err
		}
		in.Thresholds, in.Escapes, in.All = opts.Thresholds, opts.Escapes, opts.All
		in.Source = &SourceFiles{Dir: opts.SourceDir}
		rep = diagnose.Run(in)
	}
	var warnings []error
	if opts.SourceDir != "" {
		if err := explainEscapes(ctx, opts.SourceDir, rep.Findings); err != nil {
			warnings = append(warnings, fmt.Errorf("findings come without escape analysis: %w", err))
		}
	}
	return rep, warnings, nil
}

// explainEscapes attaches the compiler's escape analysis to the findings:
// why each line they point at allocates. Only the module's packages that
// hold a finding are compiled with -m=2, so a large module costs what its
// hot packages cost (and the go command caches the compiler's output).
func explainEscapes(ctx context.Context, dir string, findings []result.Finding) error {
	module, err := escape.ModulePath(dir)
	if err != nil {
		return err
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("escape analysis of %s: %w", dir, err)
	}
	var sites []escape.Site
	for _, f := range findings {
		if f.Function != "" && f.File != "" && f.Line > 0 {
			sites = append(sites, escape.Site{Package: pprofx.PackagePath(f.Function), File: f.File})
		}
	}
	patterns := escape.Patterns(module, root, sites)
	if len(patterns) == 0 {
		return nil // no finding in the module's own code
	}
	rep, err := escape.Analyze(ctx, dir, patterns...)
	if err != nil {
		return err
	}
	diagnose.AttachEscapes(findings, rep)
	return nil
}
