package run

import (
	"bytes"
	"fmt"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/flame"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/result"
)

// Names of the flame graphs and the HTML report in a run directory.
const (
	flameDir       = "flame"
	flameHTMLFile  = "flame/flame.html"
	htmlReportFile = "report.html"
)

// Pruning of the run's flame graphs, as heapscope flame does by default:
// what an SVG cannot show anyway, and what keeps the page responsive.
const (
	flameSVGMinShare  = 0.0001
	flameHTMLMinShare = 0.00001
)

// renderedFile is a file of the run directory rendered in memory, written
// with the others.
type renderedFile struct {
	rel  string
	data []byte
}

// flameSource is one profile the run draws.
type flameSource struct {
	id, sample, title, profile string
	p                          *profile.Profile
}

// render draws the flame graphs and report.html from the summary and the
// profiles in memory, and records them in res. A graph that cannot be
// drawn (an idle target's empty CPU profile) is a warning. It runs after
// summarise, so it adds its warnings to res itself.
func (c *collector) render(res *result.Run, delta *profile.Profile) []renderedFile {
	var sources []flameSource
	if delta != nil {
		sources = append(sources, flameSource{"alloc_space", "alloc_space", "Allocations over the window (alloc_space)", allocDeltaFile, delta})
	}
	last := len(c.snaps) - 1
	sources = append(sources, flameSource{"inuse_space", "inuse_space", "Heap in use at the window's end (inuse_space)", snapshotFile(last), c.snaps[last].profile})
	if c.cpu != nil {
		if p, err := c.parse(c.cpu); err == nil {
			app, _ := pprofx.WithoutProfiler(p)
			sources = append(sources, flameSource{"cpu", "cpu", "CPU time over the window", cpuFile, app})
		}
	}

	var files []renderedFile
	var embeds []report.HTMLFlame
	var widgets []flame.HTMLWidget
	for _, src := range sources {
		svg, tree, err := drawFlame(src, res.Target.MainModule)
		if err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s flame graph not drawn: %v", src.sample, err))
			continue
		}
		rel := flameDir + "/" + src.id + ".svg"
		files = append(files, renderedFile{rel, svg})
		embeds = append(embeds, report.HTMLFlame{ID: "flame-" + src.id, Title: src.title, Path: rel, SVG: svg})
		widgets = append(widgets, flame.HTMLWidget{ID: "flame-" + src.id, Title: src.title, Views: []flame.HTMLView{{Name: src.sample, Tree: tree}}})
		res.Files.Flames = append(res.Files.Flames, result.FlameGraph{Path: rel, Format: "svg", Profile: src.profile, SampleType: src.sample, Title: src.title})
	}
	if len(widgets) > 0 {
		var buf bytes.Buffer
		if err := flame.WriteHTML(&buf, "Flame graphs of "+res.Target.URL, widgets...); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("interactive flame graphs not drawn: %v", err))
		} else {
			files = append(files, renderedFile{flameHTMLFile, buf.Bytes()})
			res.Files.Flames = append(res.Files.Flames, result.FlameGraph{Path: flameHTMLFile, Format: "html",
				Title: "Interactive flame graphs of every profile drawn, with their sample types"})
		}
	}
	// Last, so that the report lists every file above.
	res.Files.HTMLReport = htmlReportFile
	var buf bytes.Buffer
	if err := report.HTML(&buf, res, embeds); err != nil {
		res.Files.HTMLReport = ""
		res.Warnings = append(res.Warnings, fmt.Sprintf("report.html not written: %v", err))
	} else {
		files = append(files, renderedFile{htmlReportFile, buf.Bytes()})
	}
	return files
}

// drawFlame renders a profile's SVG flame graph and builds the tree of
// every sample type for the interactive page.
func drawFlame(src flameSource, module string) (svg []byte, all *flame.Tree, err error) {
	s, err := pprofx.StacksOf(src.p)
	if err != nil {
		return nil, nil, err
	}
	idx, err := s.SampleIndex(src.sample)
	if err != nil {
		return nil, nil, err
	}
	if s.Total(idx) == 0 {
		return nil, nil, fmt.Errorf("%s has no %s samples over the window", src.profile, src.sample)
	}
	t, err := flame.Build(s, flame.Options{Sample: src.sample, MinShare: flameSVGMinShare, Module: module})
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	if err := flame.WriteSVG(&buf, t, flame.SVGOptions{Title: src.title, Subtitle: src.profile}); err != nil {
		return nil, nil, err
	}
	all, err = flame.Build(s, flame.Options{Sample: src.sample, AllTypes: true, MinShare: flameHTMLMinShare, Module: module})
	if err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), all, nil
}
