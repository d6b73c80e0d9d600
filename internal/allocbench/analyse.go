package allocbench

import (
	"fmt"
	"io"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"

	"github.com/heapscope/heapscope/internal/option"
)

// Sample is one run of one pattern under one toolchain. Sizes are bytes.
type Sample struct {
	// Pattern is the pattern's name.
	Pattern string `json:"pattern"`
	// Toolchain is the toolchain's name as asked; GoVersion what it is.
	Toolchain string `json:"toolchain"`
	GoVersion string `json:"go_version"`
	// HeapAlloc, HeapInuse, HeapSys, HeapReleased and Sys are the child's
	// runtime.MemStats after the pattern.
	HeapAlloc    uint64 `json:"heap_alloc_bytes"`
	HeapInuse    uint64 `json:"heap_inuse_bytes"`
	HeapSys      uint64 `json:"heap_sys_bytes"`
	HeapReleased uint64 `json:"heap_released_bytes"`
	Sys          uint64 `json:"sys_bytes"`
	// VmRSS is the child's resident set size.
	VmRSS uint64 `json:"vm_rss_bytes"`
	// HeapMapped and HeapRss are the size and resident size of the
	// child's Go heap mappings (sysmem.GoHeap).
	HeapMapped uint64 `json:"heap_mapped_bytes"`
	HeapRss    uint64 `json:"heap_rss_bytes"`
}

// RSSPerHeapByte is the resident size of the Go heap mappings per byte of
// HeapAlloc: about 1 when what the program allocated is resident, well
// below 1 when much of it was never touched, above 1 when freed memory
// stays resident. It is 0 when HeapAlloc is.
func (s Sample) RSSPerHeapByte() float64 {
	if s.HeapAlloc == 0 {
		return 0
	}
	return float64(s.HeapRss) / float64(s.HeapAlloc)
}

// Defaults of Options.
const (
	DefaultAlpha     = 0.05
	DefaultMinEffect = 0.25
)

// Options configures Analyse.
type Options struct {
	// Alpha is the significance level of the Mann-Whitney U test;
	// DefaultAlpha when 0.
	Alpha float64
	// MinEffect is the smallest relative difference of medians of RSS per
	// heap byte that counts, such as 0.25 for 25 %; DefaultMinEffect when
	// 0. A ratio r of two medians counts when r ≥ 1+MinEffect or
	// r ≤ 1/(1+MinEffect).
	MinEffect float64
	// Confidence is the level of the medians' confidence intervals; 0.95
	// when 0.
	Confidence float64
}

func (o Options) withDefaults() Options {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.MinEffect == 0 {
		o.MinEffect = DefaultMinEffect
	}
	if o.Confidence == 0 {
		o.Confidence = 0.95
	}
	return o
}

// Validate reports the first threshold out of range as an *option.Error.
// Analyse fills the defaults of zero fields before it validates; Validate
// takes the options as they are, so a zero Alpha or MinEffect, which a
// command line gives only when its user typed 0, is an error here (a zero
// Confidence, which no flag sets, is the default still).
func (o Options) Validate() error {
	switch {
	case !(o.Alpha > 0 && o.Alpha < 1):
		return option.Errorf("Alpha", "{Alpha} %v: give a level between 0 and 1, such as 0.05", o.Alpha)
	case !(o.MinEffect > 0):
		return option.Errorf("MinEffect", "{MinEffect} %v: give a relative difference above 0, such as 0.25", o.MinEffect)
	case o.Confidence != 0 && !(o.Confidence > 0 && o.Confidence < 1):
		return option.Errorf("Confidence", "{Confidence} %v: give a level between 0 and 1, such as 0.95", o.Confidence)
	}
	return nil
}

// Report is the outcome of a matrix run.
type Report struct {
	// Toolchains are the toolchains compared, in the order asked.
	Toolchains []Toolchain `json:"toolchains"`
	// Alpha and MinEffect are the flagging thresholds used.
	Alpha     float64 `json:"alpha"`
	MinEffect float64 `json:"min_effect"`
	// LiveBytes is how many bytes each pattern kept live.
	LiveBytes int `json:"live_bytes"`
	// Patterns hold the figures, in the order of the matrix.
	Patterns []PatternResult `json:"patterns"`
	// Warnings are problems that did not stop the analysis.
	Warnings []string `json:"warnings,omitempty"`
	// Runs are the samples the figures summarise, as measured.
	Runs []Sample `json:"runs"`
}

// Toolchain names a toolchain and the Go version it is.
type Toolchain struct {
	Name      string `json:"name"`
	GoVersion string `json:"go_version"`
}

// PatternResult is one pattern across the toolchains.
type PatternResult struct {
	// Name is the pattern's name; Pattern its dimensions.
	Name    string  `json:"name"`
	Pattern Pattern `json:"pattern"`
	// Cells are the figures under each toolchain, in Report.Toolchains
	// order.
	Cells []Cell `json:"cells"`
	// Flags are the pairs of toolchains whose RSS per heap byte differ
	// significantly and by at least the minimum effect.
	Flags []Flag `json:"flags,omitempty"`
}

// Flagged reports whether any pair of toolchains differs.
func (p *PatternResult) Flagged() bool { return len(p.Flags) > 0 }

// Cell is the summary of one pattern's runs under one toolchain.
type Cell struct {
	Toolchain string `json:"toolchain"`
	// Runs is how many runs the summaries cover.
	Runs int `json:"runs"`
	// The medians, with their confidence intervals.
	HeapAlloc      Summary `json:"heap_alloc_bytes"`
	HeapInuse      Summary `json:"heap_inuse_bytes"`
	HeapSys        Summary `json:"heap_sys_bytes"`
	HeapReleased   Summary `json:"heap_released_bytes"`
	Sys            Summary `json:"sys_bytes"`
	VmRSS          Summary `json:"vm_rss_bytes"`
	HeapRss        Summary `json:"heap_rss_bytes"`
	RSSPerHeapByte Summary `json:"rss_per_heap_byte"`

	rssPerHeap *benchmath.Sample
}

// Summary is a median and its confidence interval; with too few runs for
// an interval at the confidence asked, Lo and Hi are the runs' range.
type Summary struct {
	Median float64 `json:"median"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
}

// Spread is the larger distance of the interval's ends from the median, as
// a fraction of the median (benchstat's "±"). It is 0 for a median of 0.
func (s Summary) Spread() float64 {
	if s.Median == 0 || math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) {
		return 0
	}
	return math.Max(s.Hi/s.Median-1, 1-s.Lo/s.Median)
}

// Flag is a significant difference of RSS per heap byte between two
// toolchains on one pattern.
type Flag struct {
	// A and B are the toolchains, A first in the order asked.
	A string `json:"a"`
	B string `json:"b"`
	// Ratio is B's median over A's.
	Ratio float64 `json:"ratio"`
	// P is the Mann-Whitney U test's p-value.
	P float64 `json:"p"`
}

// AnalyseSaved analyses again the runs of a report saved as JSON
// (ReadSaved), with opts.
func AnalyseSaved(r io.Reader, opts Options) (*Report, error) {
	saved, err := ReadSaved(r)
	if err != nil {
		return nil, err
	}
	return Analyse(saved.Runs, saved.Patterns, saved.Toolchains, saved.LiveBytes, opts)
}

// Analyse summarises samples per pattern (in patterns' order) and
// toolchain (in toolchains' order) and flags differences. Samples of
// patterns or toolchains not listed are an error; a cell without samples
// is a warning.
func Analyse(samples []Sample, patterns []Pattern, toolchains []Toolchain, live int, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	r := &Report{Toolchains: toolchains, Alpha: opts.Alpha, MinEffect: opts.MinEffect, LiveBytes: live, Runs: samples}
	pi := map[string]int{}
	for i, p := range patterns {
		pi[p.Name()] = i
	}
	ti := map[string]int{}
	for i, t := range toolchains {
		ti[t.Name] = i
	}
	grid := make([][][]Sample, len(patterns))
	for i := range grid {
		grid[i] = make([][]Sample, len(toolchains))
	}
	for _, s := range samples {
		p, ok := pi[s.Pattern]
		if !ok {
			return nil, fmt.Errorf("analyse: sample of pattern %q, which is not in the matrix", s.Pattern)
		}
		t, ok := ti[s.Toolchain]
		if !ok {
			return nil, fmt.Errorf("analyse: sample of toolchain %q, which was not asked for", s.Toolchain)
		}
		grid[p][t] = append(grid[p][t], s)
	}
	thresholds := &benchmath.Thresholds{CompareAlpha: opts.Alpha}
	tooFew := 0.0 // the largest of the pairs' smallest attainable p-values
	for i, p := range patterns {
		pr := PatternResult{Name: p.Name(), Pattern: p}
		for j, t := range toolchains {
			ss := grid[i][j]
			c := Cell{Toolchain: t.Name, Runs: len(ss)}
			if len(ss) == 0 {
				r.Warnings = append(r.Warnings, fmt.Sprintf("%s under %s: no runs", p.Name(), t.Name))
			} else {
				summarise := func(get func(Sample) float64) (Summary, *benchmath.Sample) {
					vs := make([]float64, len(ss))
					for k, s := range ss {
						vs[k] = get(s)
					}
					bs := benchmath.NewSample(vs, thresholds)
					sum := benchmath.AssumeNothing.Summary(bs, opts.Confidence)
					if math.IsInf(sum.Lo, 0) || math.IsInf(sum.Hi, 0) {
						// Too few runs for an interval at this
						// confidence: the range of the runs.
						sum.Lo, sum.Hi = bs.Values[0], bs.Values[len(bs.Values)-1]
					}
					return Summary{Median: sum.Center, Lo: sum.Lo, Hi: sum.Hi}, bs
				}
				c.HeapAlloc, _ = summarise(func(s Sample) float64 { return float64(s.HeapAlloc) })
				c.HeapInuse, _ = summarise(func(s Sample) float64 { return float64(s.HeapInuse) })
				c.HeapSys, _ = summarise(func(s Sample) float64 { return float64(s.HeapSys) })
				c.HeapReleased, _ = summarise(func(s Sample) float64 { return float64(s.HeapReleased) })
				c.Sys, _ = summarise(func(s Sample) float64 { return float64(s.Sys) })
				c.VmRSS, _ = summarise(func(s Sample) float64 { return float64(s.VmRSS) })
				c.HeapRss, _ = summarise(func(s Sample) float64 { return float64(s.HeapRss) })
				c.RSSPerHeapByte, c.rssPerHeap = summarise(Sample.RSSPerHeapByte)
			}
			pr.Cells = append(pr.Cells, c)
		}
		for a := 0; a < len(pr.Cells); a++ {
			for b := a + 1; b < len(pr.Cells); b++ {
				ca, cb := &pr.Cells[a], &pr.Cells[b]
				if ca.rssPerHeap == nil || cb.rssPerHeap == nil {
					continue
				}
				cmp := benchmath.AssumeNothing.Compare(ca.rssPerHeap, cb.rssPerHeap)
				tooFew = math.Max(tooFew, minP(ca.Runs, cb.Runs))
				// A tolerance, so that the smallest p-value a test
				// of few runs can give reaches an alpha set to it.
				if cmp.P > opts.Alpha*(1+1e-9) || ca.RSSPerHeapByte.Median == 0 {
					continue
				}
				ratio := cb.RSSPerHeapByte.Median / ca.RSSPerHeapByte.Median
				if ratio < 1+opts.MinEffect && ratio > 1/(1+opts.MinEffect) {
					continue
				}
				pr.Flags = append(pr.Flags, Flag{A: ca.Toolchain, B: cb.Toolchain, Ratio: ratio, P: cmp.P})
			}
		}
		r.Patterns = append(r.Patterns, pr)
	}
	if tooFew > opts.Alpha {
		r.Warnings = append(r.Warnings, fmt.Sprintf("too few runs per cell: the smallest p-value a Mann-Whitney U test of these runs can give is %.3f, above alpha %g, so nothing can be flagged; repeat more (--count 5) or raise alpha", tooFew, opts.Alpha))
	}
	return r, nil
}

// minP is the smallest two-sided p-value a Mann-Whitney U test of n1
// against n2 distinct values can give: 2 / C(n1+n2, n1).
func minP(n1, n2 int) float64 {
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return math.Min(1, 2/c)
}

// Standout returns the toolchain that differs from every other one the
// pattern was flagged against, such as the one release between two that
// agree: a regression that came and went. It is "" when there is no such
// toolchain, or fewer than two flags.
func (p *PatternResult) Standout() string {
	if len(p.Flags) < 2 {
		return ""
	}
	count := map[string]int{}
	for _, f := range p.Flags {
		count[f.A]++
		count[f.B]++
	}
	var names []string
	for n, c := range count {
		if c == len(p.Flags) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if len(names) != 1 {
		return ""
	}
	return names[0]
}
