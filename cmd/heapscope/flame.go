package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/flame"
	"github.com/heapscope/heapscope/internal/pprofx"
)

type flameOptions struct {
	out       string
	base      string
	sample    string
	focus     string
	ignore    string
	minShare  string
	diffBy    string
	normalize string
	requests  int64
	baseReqs  int64
	vanished  string
	title     string
	module    string
	icicle    bool
}

// defaultMinShare is --min-share's default per output format: what an SVG
// cannot show anyway (0.01% is about a tenth of a pixel at 1200 pixels),
// what keeps an HTML page responsive, and everything for folded stacks. It
// reports false for an extension that names no format.
func defaultMinShare(ext string) (float64, bool) {
	switch ext {
	case ".svg":
		return 0.0001, true
	case ".html":
		return 0.00001, true
	case ".folded":
		return 0, true
	}
	return 0, false
}

func newFlameCmd(e *env) *cobra.Command {
	o := &flameOptions{}
	cmd := &cobra.Command{
		Use:   "flame PROFILE -o OUT",
		Short: "Draw a flame graph of a pprof profile: SVG, HTML or folded",
		Long: `flame draws a flame graph of any pprof profile, PROFILE a file (gzipped or
not) or - for stdin. The format follows OUT's extension:

  .svg     a self-contained SVG: click a frame to zoom, search box, tooltips
           with the full name, file:line, value and share; opens from disk
  .html    one page, drawn on a canvas: zoom, search, tooltips, reset,
           flame/icicle toggle, and a switch between the profile's sample types
  .folded  "frame;frame;frame value" lines for flamegraph.pl, speedscope, …

Frames are coloured by whose code they run: the application's, its
dependencies' (with --module), the standard library's or the runtime's.

With --base, the graph is differential: the shape of PROFILE, coloured by
change against BASE (red grew, blue shrank, deeper for larger changes), with
before, after and change in the tooltips. --diff-by share colours by change
of share of the total instead of value; --normalize divides each profile's
values by its duration or by the requests it served. The HTML page also has
a "vanished" view on BASE's shape, for stacks that are gone; for SVG,
--vanished FILE writes that view to a second file. Folded output with
--base has two columns, base then new, as difffolded.pl writes.`,
		Example: `  heapscope flame heapscope-runs/…/profiles/allocs-delta.pb.gz -o allocs.svg
  heapscope flame heap.pb.gz --sample inuse_space --focus 'myapp/' -o heap.html
  heapscope flame cpu.pb.gz --min-share 0.5% -o cpu.folded
  heapscope flame after.pb.gz --base before.pb.gz -o diff.svg --vanished vanished.svg
  heapscope flame after.pb.gz --base before.pb.gz --normalize requests \
      --requests 12000 --base-requests 9500 -o diff.html`,
		Args: exactArgs(1, "PROFILE, a pprof file or -"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFlame(e, args[0], o)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.out, "output", "o", "", "file to write: .svg, .html or .folded (required)")
	fs.StringVar(&o.base, "base", "", "base profile: draw a differential flame graph of PROFILE against it")
	fs.StringVar(&o.sample, "sample", "", "sample type, such as alloc_space, inuse_space, cpu (default: the profile's default)")
	fs.StringVar(&o.focus, "focus", "", "keep only the samples with a function matching this regular expression")
	fs.StringVar(&o.ignore, "ignore", "", "drop the samples with a function matching this regular expression")
	fs.StringVar(&o.minShare, "min-share", "", "prune frames below this share of the total, such as 0.1% (default: 0.01% for SVG, 0.001% for HTML, 0 for folded)")
	fs.StringVar(&o.diffBy, "diff-by", "absolute", "with --base, colour by change of value (absolute) or of share of the total (share)")
	fs.StringVar(&o.normalize, "normalize", "none", "with --base, divide values by: none, duration (the profiles' own), requests (--requests, --base-requests)")
	fs.Int64Var(&o.requests, "requests", 0, "requests PROFILE's window served, for --normalize requests")
	fs.Int64Var(&o.baseReqs, "base-requests", 0, "requests BASE's window served, for --normalize requests")
	fs.StringVar(&o.vanished, "vanished", "", "with --base and an SVG, also write the vanished view (BASE's shape) to this file")
	fs.StringVar(&o.title, "title", "", "title of the graph (default: names the profile)")
	fs.StringVar(&o.module, "module", "", "the application's module path, to colour its dependencies apart")
	fs.BoolVar(&o.icicle, "icicle", false, "draw the root on top")
	return cmd
}

// flameInput is a profile read for a flame graph.
type flameInput struct {
	path   string
	stacks *pprofx.Stacks
}

func runFlame(e *env, path string, o *flameOptions) error {
	if o.out == "" {
		return errors.New("flame needs -o OUT, a .svg, .html or .folded file")
	}
	ext := strings.ToLower(filepath.Ext(o.out))
	minShare, ok := defaultMinShare(ext)
	if !ok {
		return fmt.Errorf("-o %s: the extension picks the format; use .svg, .html or .folded", o.out)
	}
	if o.minShare != "" {
		var err error
		if minShare, err = parseShare(o.minShare); err != nil {
			return fmt.Errorf("--min-share: %w", err)
		}
	}
	diffBy, err := flame.ParseDiffBy(o.diffBy)
	if err != nil {
		return fmt.Errorf("--diff-by: %w", err)
	}
	if o.base == "" {
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"--vanished", o.vanished != ""},
			{"--normalize", o.normalize != "none"},
			{"--requests", o.requests != 0},
			{"--base-requests", o.baseReqs != 0},
		} {
			if f.set {
				return fmt.Errorf("%s needs --base", f.name)
			}
		}
	}
	if o.vanished != "" && ext != ".svg" {
		return fmt.Errorf("--vanished writes an SVG next to an SVG; the %s output has the vanished view built in or has no such view", ext)
	}
	opts := flame.Options{Sample: o.sample, AllTypes: ext == ".html", Module: o.module}
	if opts.Focus, err = compileFlag("--focus", o.focus); err != nil {
		return err
	}
	if opts.Ignore, err = compileFlag("--ignore", o.ignore); err != nil {
		return err
	}

	in, err := readFlameInput(e, path, o.sample)
	if err != nil {
		return err
	}
	title := o.title
	if o.base == "" {
		if title == "" {
			title = "Flame graph of " + filepath.Base(path)
		}
		opts.MinShare = minShare
		t, err := flame.Build(in.stacks, opts)
		if err != nil {
			return fmt.Errorf("flame graph of %s: %w", path, err)
		}
		if err := writeFlame(o.out, ext, title, o.icicle, []flame.HTMLView{{Name: "profile", Tree: t}}); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "wrote %s: %d frames of %s\n", o.out, len(t.Nodes)-1, t.Types[t.Default].Name)
		return nil
	}

	base, err := readFlameInput(e, o.base, o.sample)
	if err != nil {
		return err
	}
	if err := sameKind(in, base); err != nil {
		return err
	}
	diffOpts := flame.DiffOptions{By: diffBy}
	switch o.normalize {
	case "none":
	case "duration":
		for _, p := range []*flameInput{in, base} {
			if p.stacks.DurationNanos <= 0 {
				return fmt.Errorf("--normalize duration: %s does not say how long it covers (heap profiles usually do not; delta profiles of a run do): use --normalize requests or none", p.path)
			}
		}
		diffOpts.Scale = float64(in.stacks.DurationNanos) / 1e9
		diffOpts.BaseScale = float64(base.stacks.DurationNanos) / 1e9
		diffOpts.PerUnit = "s"
	case "requests":
		if o.requests <= 0 || o.baseReqs <= 0 {
			return errors.New("--normalize requests needs --requests N and --base-requests N, both above 0")
		}
		diffOpts.Scale, diffOpts.BaseScale, diffOpts.PerUnit = float64(o.requests), float64(o.baseReqs), "request"
	default:
		return fmt.Errorf("--normalize %q: want none, duration or requests", o.normalize)
	}
	if title == "" {
		title = fmt.Sprintf("Differential flame graph of %s against %s", filepath.Base(path), filepath.Base(o.base))
	}
	// Both trees unpruned, so every path of one finds its value in the
	// other; the differential trees are pruned after.
	after, err := flame.Build(in.stacks, opts)
	if err != nil {
		return fmt.Errorf("flame graph of %s: %w", path, err)
	}
	before, err := flame.Build(base.stacks, opts)
	if err != nil {
		return fmt.Errorf("flame graph of %s: %w", o.base, err)
	}
	if ext == ".folded" {
		if err := writeAtomic(o.out, func(w io.Writer) error { return flame.WriteFoldedDiff(w, before, after, "") }); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "wrote %s: base and new values of %s\n", o.out, after.Types[after.Default].Name)
		return nil
	}
	changes, err := diffTree(flame.Diff, before, after, diffOpts, minShare)
	if err != nil {
		return err
	}
	vanished, err := diffTree(flame.Vanished, before, after, diffOpts, minShare)
	if err != nil {
		return err
	}
	views := []flame.HTMLView{{Name: "changes", Tree: changes}}
	if ext == ".html" {
		views = append(views, flame.HTMLView{Name: "vanished", Tree: vanished})
	}
	if err := writeFlame(o.out, ext, title, o.icicle, views); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s: %d frames of %s, coloured by %s change\n", o.out, len(changes.Nodes)-1, changes.Types[changes.Default].Name, diffBy)
	if o.vanished != "" {
		sub := "the base profile's shape, coloured by change: frames that vanished"
		err := writeAtomic(o.vanished, func(w io.Writer) error {
			return flame.WriteSVG(w, vanished, flame.SVGOptions{Title: title, Subtitle: sub, Icicle: o.icicle})
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "wrote %s: %d frames of the base profile\n", o.vanished, len(vanished.Nodes)-1)
	}
	return nil
}

func diffTree(f func(base, after *flame.Tree, opts flame.DiffOptions) (*flame.Tree, error), base, after *flame.Tree, opts flame.DiffOptions, minShare float64) (*flame.Tree, error) {
	t, err := f(base, after, opts)
	if err != nil {
		return nil, err
	}
	return t.Prune(minShare)
}

// writeFlame writes views in the format of ext to out.
func writeFlame(out, ext, title string, icicle bool, views []flame.HTMLView) error {
	return writeAtomic(out, func(w io.Writer) error {
		switch ext {
		case ".svg":
			return flame.WriteSVG(w, views[0].Tree, flame.SVGOptions{Title: title, Icicle: icicle})
		case ".html":
			return flame.WriteHTML(w, title, flame.HTMLWidget{ID: "flame", Views: views, Icicle: icicle})
		default:
			return flame.WriteFolded(w, views[0].Tree, "")
		}
	})
}

// readFlameInput reads a profile and checks it can be drawn: it has
// samples, the sample type asked for, and values in it.
func readFlameInput(e *env, path, sample string) (*flameInput, error) {
	s, err := readStacks(e, path)
	if err != nil {
		return nil, err
	}
	if s.Len() == 0 {
		return nil, fmt.Errorf("profile %s is empty: it has no samples", path)
	}
	idx, err := s.SampleIndex(sample)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	nonzero := false
	for i := range s.Len() {
		if s.Values(i)[idx] != 0 {
			nonzero = true
			break
		}
	}
	if !nonzero {
		return nil, fmt.Errorf("profile %s is empty: every sample's %s is 0", path, s.SampleTypes[idx].Type)
	}
	return &flameInput{path: path, stacks: s}, nil
}

// sameKind checks that base has the sample types of in.
func sameKind(in, base *flameInput) error {
	describe := func(s *pprofx.Stacks) string {
		parts := make([]string, len(s.SampleTypes))
		for i, st := range s.SampleTypes {
			parts[i] = st.Type + "/" + st.Unit
		}
		return strings.Join(parts, ", ")
	}
	if a, b := describe(in.stacks), describe(base.stacks); a != b {
		return fmt.Errorf("base profile %s is of another kind: its sample types are %s, those of %s are %s", base.path, b, in.path, a)
	}
	return nil
}

func compileFlag(name, expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", name, expr, err)
	}
	return re, nil
}

// parseShare reads a share as a percentage ("0.1%") or a fraction
// ("0.001").
func parseShare(s string) (float64, error) {
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

// writeAtomic writes a file through a temporary file in the same
// directory, renamed over path once complete: a failure leaves no partial
// file (and any previous file whole).
func writeAtomic(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	if err := write(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		done = true
		return fmt.Errorf("write %s: %w", path, err)
	}
	done = true
	return nil
}
