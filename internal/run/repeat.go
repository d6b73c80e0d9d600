package run

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/atomicfile"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/result"
)

// maxRepeat bounds the windows of one repeated run.
const maxRepeat = 1000

// windowDir is the directory of the i-th window (from 0), relative to the
// run's.
func windowDir(i int) string { return fmt.Sprintf("%s/%03d", result.WindowsDir, i+1) }

// profileRepeated records cfg.Repeat consecutive windows, each a run of its
// own under windows/NNN/, then the top-level result.json that summarises
// them. A window that fails is recorded as failed and the next one starts;
// an interrupt ends the series.
func profileRepeated(ctx context.Context, cfg Config) (*result.Run, string, error) {
	n := cfg.Repeat
	progress := cfg.Progress
	windowCfg := func(i int) *Config {
		wc := cfg
		if progress != nil {
			wc.Progress = func(p Progress) {
				p.Elapsed += time.Duration(i) * cfg.Duration
				p.Total = time.Duration(n) * cfg.Duration
				progress(p)
			}
		}
		return &wc
	}
	first := &collector{cfg: windowCfg(0)}
	if err := first.start(ctx); err != nil {
		return nil, "", err
	}
	dir, err := createRunDir(cfg.OutDir, first.runName(), first.startTime)
	if err != nil {
		return nil, "", err
	}
	// The windows keep the profiles; the top level has none of its own.
	_ = os.Remove(filepath.Join(dir, profilesDir))

	rep := &result.Repeat{Count: n, Figures: map[string]result.FigureSummary{}}
	var runs []*result.Run
	var deltas []*profile.Profile
	var writeErr error
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		rel := windowDir(i)
		wdir := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Join(wdir, profilesDir), 0o755); err != nil {
			return nil, dir, fmt.Errorf("create window directory: %w", err)
		}
		c := first
		if i > 0 {
			c = &collector{cfg: windowCfg(i)}
			if err := c.start(ctx); err != nil {
				rep.Windows = append(rep.Windows, result.RepeatWindow{Path: rel, Status: result.StatusFailed, Error: err.Error()})
				continue
			}
		}
		c.window(ctx)
		c.finish(ctx)
		res, delta := c.summarise()
		if err := writeRun(wdir, c, res, delta, c.render(res, delta)...); err != nil {
			writeErr = err
		}
		rep.Windows = append(rep.Windows, result.RepeatWindow{Path: rel, Status: res.Status})
		runs = append(runs, res)
		if delta != nil {
			deltas = append(deltas, delta)
		}
	}
	top := summariseRepeat(cfg, rep, runs, ctx.Err() != nil)
	rendered := renderRepeat(top, deltas)
	if b, err := renderMarkdown(top); err == nil {
		top.Files.Report = reportFile
		rendered = append(rendered, renderedFile{reportFile, b})
	}
	for _, f := range rendered {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f.rel)), 0o755); err != nil && writeErr == nil {
			writeErr = fmt.Errorf("write run directory %s: %w", dir, err)
		}
		if err := atomicfile.WriteBytes(filepath.Join(dir, filepath.FromSlash(f.rel)), f.data); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, result.FileName), mustJSON(top)); err != nil {
		return nil, dir, fmt.Errorf("write run directory %s: %w", dir, err)
	}
	if writeErr != nil {
		return top, dir, writeErr
	}
	if len(runs) == 0 {
		return top, dir, fmt.Errorf("profile %s: none of the %d windows could be collected: %s", cfg.Target.BaseURL, n, rep.Windows[0].Error)
	}
	return top, dir, nil
}

// renderRepeat draws the top level's flame graph, of the allocations of
// every window merged, and its report.html, which leads to the windows'
// own; it records them in top.
func renderRepeat(top *result.Run, deltas []*profile.Profile) []renderedFile {
	var files []renderedFile
	var embeds []report.HTMLFlame
	if len(deltas) > 0 {
		merged, err := profile.Merge(deltas)
		if err == nil {
			title := fmt.Sprintf("Allocations over the %d windows (alloc_space)", len(deltas))
			src := flameSource{"alloc_space", "alloc_space", title, "the windows' " + allocDeltaFile + ", merged", merged}
			var svg []byte
			if svg, _, err = drawFlame(src, top.Target.MainModule); err == nil {
				rel := flameDir + "/alloc_space.svg"
				files = append(files, renderedFile{rel, svg})
				embeds = append(embeds, report.HTMLFlame{ID: "flame-alloc_space", Title: title, Path: rel, SVG: svg})
				top.Files.Flames = append(top.Files.Flames, result.FlameGraph{Path: rel, Format: "svg", SampleType: "alloc_space", Title: title})
			}
		}
		if err != nil {
			top.Warnings = append(top.Warnings, fmt.Sprintf("flame graph of the windows' allocations not drawn: %v", err))
		}
	}
	top.Files.HTMLReport = htmlReportFile
	var buf bytes.Buffer
	if err := report.HTML(&buf, top, embeds); err != nil {
		top.Files.HTMLReport = ""
		top.Warnings = append(top.Warnings, fmt.Sprintf("report.html not written: %v", err))
		return files
	}
	return append(files, renderedFile{htmlReportFile, buf.Bytes()})
}

func renderMarkdown(r *result.Run) ([]byte, error) {
	var b bytes.Buffer
	err := report.Markdown(&b, r)
	return b.Bytes(), err
}

// summariseRepeat makes the top-level result of a repeated run: the first
// window's target and load settings, the span of the windows, each
// headline figure's median in its usual place and its median and range
// under repeat.figures, the findings of any window, and which windows
// failed.
func summariseRepeat(cfg Config, rep *result.Repeat, runs []*result.Run, interrupted bool) *result.Run {
	top := &result.Run{
		SchemaVersion: result.SchemaVersion,
		Status:        result.StatusComplete,
		Heapscope:     result.Tool{Version: cfg.Version, GoVersion: runtime.Version()},
		Target:        result.Target{URL: cfg.Target.BaseURL},
		Top:           []result.TopTable{},
		Findings:      []result.Finding{},
		Profiles:      []result.Profile{},
		RSS:           result.RSS{Source: "unknown"},
		Repeat:        rep,
	}
	for _, w := range rep.Windows {
		switch w.Status {
		case result.StatusFailed:
			top.Failures = append(top.Failures, result.Failure{Step: "window " + w.Path, Error: orFailed(w.Error)})
		case result.StatusPartial:
			top.Failures = append(top.Failures, result.Failure{Step: "window " + w.Path, Error: "partial: see its result.json"})
		}
	}
	if interrupted && len(rep.Windows) < rep.Count {
		top.Failures = append(top.Failures, result.Failure{Step: "windows", Error: fmt.Sprintf("interrupted after %d of %d windows", len(rep.Windows), rep.Count)})
	}
	switch {
	case len(runs) == 0:
		top.Status = result.StatusFailed
		return top
	case len(top.Failures) > 0:
		top.Status = result.StatusPartial
	}
	first, last := runs[0], runs[len(runs)-1]
	top.Target = first.Target
	top.Window = result.Window{Start: first.Window.Start, End: last.Window.End, DurationSeconds: last.Window.End.Sub(first.Window.Start).Seconds()}
	top.RSS.Source = first.RSS.Source
	top.MemStats.GCCPUFractionScope = first.MemStats.GCCPUFractionScope
	if first.Load != nil {
		l := *first.Load
		l.Series, l.StatusCodes, l.ErrorKinds = nil, nil, nil
		top.Load = &l
	}
	seen := map[string]bool{}
	for _, r := range runs {
		top.Window.ForcedGCs += r.Window.ForcedGCs
		top.Window.ProfilerAllocatedBytes += r.Window.ProfilerAllocatedBytes
		top.MemStats.GCPausesCovered += r.MemStats.GCPausesCovered
		top.MemStats.GCCycles += r.MemStats.GCCycles
		top.MemStats.AllocatedBytes += r.MemStats.AllocatedBytes
		if r.PerRequest != nil {
			if top.PerRequest == nil {
				top.PerRequest = &result.PerRequest{}
			}
			top.PerRequest.Requests += r.PerRequest.Requests
		}
		for _, w := range r.Warnings {
			if !seen[w] {
				seen[w] = true
				top.Warnings = append(top.Warnings, w)
			}
		}
		for _, f := range r.Findings {
			key := fmt.Sprintf("%s %s %s %d", f.ID, f.Function, f.File, f.Line)
			if !seen[key] {
				seen[key] = true
				top.Findings = append(top.Findings, f)
			}
		}
	}
	for _, f := range result.Figures {
		var vs []float64
		for _, r := range runs {
			if v, ok := f.Get(r); ok {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			continue
		}
		slices.Sort(vs)
		med := vs[len(vs)/2]
		if len(vs)%2 == 0 {
			med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
		}
		rep.Figures[f.Name] = result.FigureSummary{Median: med, Min: vs[0], Max: vs[len(vs)-1], N: len(vs)}
		f.Set(top, med)
	}
	return top
}

func orFailed(s string) string {
	if s == "" {
		return "failed"
	}
	return s
}
