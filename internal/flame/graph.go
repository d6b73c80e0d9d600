package flame

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/heapscope/heapscope/internal/option"
	"github.com/heapscope/heapscope/internal/pprofx"
)

// Format is a flame graph's output format.
type Format string

// The formats of Draw, named by the output file's extension.
const (
	FormatSVG    Format = ".svg"
	FormatHTML   Format = ".html"
	FormatFolded Format = ".folded"
)

// FormatOf returns the format a file name's extension (.svg, .html or
// .folded, in any case) names, and false for any other.
func FormatOf(name string) (Format, bool) {
	switch f := Format(strings.ToLower(filepath.Ext(name))); f {
	case FormatSVG, FormatHTML, FormatFolded:
		return f, true
	}
	return "", false
}

// DefaultMinShare is the share of the total below which Draw prunes
// frames by default in the format: what an SVG cannot show anyway (0.01%
// is about a tenth of a pixel at 1200 pixels), what keeps an HTML page
// responsive, and nothing for folded stacks.
func (f Format) DefaultMinShare() float64 {
	switch f {
	case FormatSVG:
		return 0.0001
	case FormatHTML:
		return 0.00001
	}
	return 0
}

// ParseShare reads a share as a percentage ("0.1%") or a fraction
// ("0.001"), from 0 up to (not including) 1.
func ParseShare(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want a share such as 0.1%% or 0.001", s)
	}
	if pct {
		v /= 100
	}
	if v < 0 || v >= 1 || v != v {
		return 0, fmt.Errorf("%q: want a share from 0 up to (not including) 100%%", s)
	}
	return v, nil
}

// Input is a profile to draw and the name messages and titles give it,
// such as its file's path.
type Input struct {
	Name   string
	Stacks *pprofx.Stacks
}

// NewInput checks that s can be drawn for the sample type (empty for the
// profile's default): it has samples, that sample type, and values in it.
func NewInput(name string, s *pprofx.Stacks, sample string) (Input, error) {
	if s.Len() == 0 {
		return Input{}, fmt.Errorf("profile %s is empty: it has no samples", name)
	}
	idx, err := s.SampleIndex(sample)
	if err != nil {
		return Input{}, fmt.Errorf("profile %s: %w", name, err)
	}
	for i := range s.Len() {
		if s.Values(i)[idx] != 0 {
			return Input{Name: name, Stacks: s}, nil
		}
	}
	return Input{}, fmt.Errorf("profile %s is empty: every sample's %s is 0", name, s.SampleTypes[idx].Type)
}

// DrawOptions say what Draw makes.
type DrawOptions struct {
	Format Format
	// Options select the frames; Draw keeps every sample type in an HTML
	// page, for its switch, and prunes differential graphs after the
	// diff, so both profiles meet whole.
	Options
	// Title heads the graph; empty names the profile (or both).
	Title  string
	Icicle bool
	// Diff tunes a differential graph: what it colours, and what it
	// divides each profile's values by.
	Diff DiffOptions
	// Normalize, when set, sets Diff's scales: a differential graph
	// divides each profile's values by its own duration (in seconds) or
	// by the requests its window served, Requests and BaseRequests.
	Normalize              Normalize
	Requests, BaseRequests int64
}

// Normalize is what a differential graph divides each profile's values
// by: nothing ("" or "none"), the profile's duration, or its requests.
type Normalize string

// The normalisations.
const (
	NormalizeNone     Normalize = "none"
	NormalizeDuration Normalize = "duration"
	NormalizeRequests Normalize = "requests"
)

// Validate reports the first option that does not fit a graph with a base
// or without one (differential) as an *option.Error; {Base} names Draw's
// base profile. Draw validates too.
func (o DrawOptions) Validate(differential bool) error {
	if !differential {
		for _, f := range []struct {
			name string
			set  bool
		}{{"Normalize", o.Normalize != "" && o.Normalize != NormalizeNone}, {"Requests", o.Requests != 0}, {"BaseRequests", o.BaseRequests != 0}} {
			if f.set {
				return option.Errorf(f.name, "{"+f.name+"} needs {Base}")
			}
		}
	}
	switch o.Normalize {
	case "", NormalizeNone, NormalizeDuration:
	case NormalizeRequests:
		if o.Requests <= 0 || o.BaseRequests <= 0 {
			return option.Errorf("Normalize", "{Normalize} requests needs {Requests} N and {BaseRequests} N, both above 0")
		}
	default:
		return option.Errorf("Normalize", "{Normalize} %q: want none, duration or requests", o.Normalize)
	}
	return nil
}

// normalized returns o with Diff's scales and unit set as Normalize says
// for in against base.
func (o DrawOptions) normalized(in, base Input) (DrawOptions, error) {
	switch o.Normalize {
	case NormalizeDuration:
		for _, p := range []Input{in, base} {
			if p.Stacks.DurationNanos <= 0 {
				return o, option.Errorf("Normalize", "{Normalize} duration: %s does not say how long it covers (heap profiles usually do not; delta profiles of a run do): use {Normalize} requests or none", p.Name)
			}
		}
		o.Diff.Scale, o.Diff.BaseScale = float64(in.Stacks.DurationNanos)/1e9, float64(base.Stacks.DurationNanos)/1e9
		o.Diff.PerUnit = "s"
	case NormalizeRequests:
		o.Diff.Scale, o.Diff.BaseScale, o.Diff.PerUnit = float64(o.Requests), float64(o.BaseRequests), "request"
	}
	return o, nil
}

// Graph is a flame graph ready to write: a profile's tree, or a
// differential pair.
type Graph struct {
	format Format
	title  string
	icicle bool
	// tree is the profile's, or the new profile's shape coloured by change.
	tree *Tree
	// vanished is the base profile's shape, coloured by change.
	vanished *Tree
	// base and after are the unpruned trees of folded differential output.
	base, after *Tree
}

// Draw makes the flame graph of in, or with a base its differential graph
// against base: the shape of in, coloured by change, and the vanished view
// on base's shape. Folded differential output has two columns of raw
// values, base then new, as difffolded.pl writes.
func Draw(in Input, base *Input, o DrawOptions) (*Graph, error) {
	if err := o.Validate(base != nil); err != nil {
		return nil, err
	}
	o.AllTypes = o.Format == FormatHTML
	g := &Graph{format: o.Format, title: o.Title, icicle: o.Icicle}
	if base == nil {
		if g.title == "" {
			g.title = "Flame graph of " + filepath.Base(in.Name)
		}
		t, err := Build(in.Stacks, o.Options)
		if err != nil {
			return nil, fmt.Errorf("flame graph of %s: %w", in.Name, err)
		}
		g.tree = t
		return g, nil
	}
	if err := sameKind(in, *base); err != nil {
		return nil, err
	}
	o, err := o.normalized(in, *base)
	if err != nil {
		return nil, err
	}
	if g.title == "" {
		g.title = fmt.Sprintf("Differential flame graph of %s against %s", filepath.Base(in.Name), filepath.Base(base.Name))
	}
	// Both trees unpruned, so every path of one finds its value in the
	// other; the differential trees are pruned after.
	minShare := o.MinShare
	o.MinShare = 0
	after, err := Build(in.Stacks, o.Options)
	if err != nil {
		return nil, fmt.Errorf("flame graph of %s: %w", in.Name, err)
	}
	before, err := Build(base.Stacks, o.Options)
	if err != nil {
		return nil, fmt.Errorf("flame graph of %s: %w", base.Name, err)
	}
	if o.Format == FormatFolded {
		g.base, g.after = before, after
		return g, nil
	}
	if g.tree, err = diffPruned(Diff, before, after, o.Diff, minShare); err != nil {
		return nil, err
	}
	if g.vanished, err = diffPruned(Vanished, before, after, o.Diff, minShare); err != nil {
		return nil, err
	}
	return g, nil
}

func diffPruned(f func(base, after *Tree, opts DiffOptions) (*Tree, error), base, after *Tree, opts DiffOptions, minShare float64) (*Tree, error) {
	t, err := f(base, after, opts)
	if err != nil {
		return nil, err
	}
	return t.Prune(minShare)
}

// sameKind checks that base has the sample types of in.
func sameKind(in, base Input) error {
	describe := func(s *pprofx.Stacks) string {
		parts := make([]string, len(s.SampleTypes))
		for i, st := range s.SampleTypes {
			parts[i] = st.Type + "/" + st.Unit
		}
		return strings.Join(parts, ", ")
	}
	if a, b := describe(in.Stacks), describe(base.Stacks); a != b {
		return fmt.Errorf("base profile %s is of another kind: its sample types are %s, those of %s are %s", base.Name, b, in.Name, a)
	}
	return nil
}

// Write writes the graph in its format. An HTML differential page has
// both views, "changes" and "vanished"; an SVG shows the changes (see
// WriteVanished).
func (g *Graph) Write(w io.Writer) error {
	if g.base != nil {
		return WriteFoldedDiff(w, g.base, g.after, "")
	}
	switch g.format {
	case FormatSVG:
		return WriteSVG(w, g.tree, SVGOptions{Title: g.title, Icicle: g.icicle})
	case FormatHTML:
		views := []HTMLView{{Name: "profile", Tree: g.tree}}
		if g.vanished != nil {
			views = []HTMLView{{Name: "changes", Tree: g.tree}, {Name: "vanished", Tree: g.vanished}}
		}
		return WriteHTML(w, g.title, HTMLWidget{ID: "flame", Views: views, Icicle: g.icicle})
	}
	return WriteFolded(w, g.tree, "")
}

// WriteVanished writes the vanished view of a differential graph as an
// SVG: the base profile's shape, so that frames gone from the new profile
// stay visible.
func (g *Graph) WriteVanished(w io.Writer) error {
	if g.vanished == nil {
		return errors.New("write vanished view: not a differential graph")
	}
	sub := "the base profile's shape, coloured by change: frames that vanished"
	return WriteSVG(w, g.vanished, SVGOptions{Title: g.title, Subtitle: sub, Icicle: g.icicle})
}

// Summary says what Write writes, such as "1234 frames of alloc_space" or
// "base and new values of inuse_space".
func (g *Graph) Summary() string {
	switch {
	case g.base != nil:
		return "base and new values of " + g.after.Types[g.after.Default].Name
	case g.vanished != nil:
		return fmt.Sprintf("%d frames of %s, coloured by %s change", len(g.tree.Nodes)-1, g.tree.Types[g.tree.Default].Name, g.tree.Diff.By)
	}
	return fmt.Sprintf("%d frames of %s", len(g.tree.Nodes)-1, g.tree.Types[g.tree.Default].Name)
}

// VanishedSummary says what WriteVanished writes.
func (g *Graph) VanishedSummary() string {
	if g.vanished == nil {
		return ""
	}
	return fmt.Sprintf("%d frames of the base profile", len(g.vanished.Nodes)-1)
}
