package main

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/atomicfile"
	"github.com/heapscope/heapscope/internal/flame"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/rundir"
)

type flameOptions struct {
	flame.DrawOptions
	out      string
	base     string
	focus    string
	ignore   string
	minShare string
	diffBy   string
	vanished string
}

func newFlameCmd(e *env) *cobra.Command {
	o := &flameOptions{}
	cmd := &cobra.Command{
		Use:   "flame PROFILE -o OUT",
		Short: "Draw a flame graph of a pprof profile: SVG, HTML or folded",
		Args:  exactArgs(1, "PROFILE, a pprof file or -"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFlame(e, args[0], o)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.out, "output", "o", "", "file to write: .svg, .html or .folded (required)")
	fs.StringVar(&o.base, "base", "", "base profile: draw a differential flame graph of PROFILE against it")
	fs.StringVar(&o.Sample, "sample", "", "sample type, such as alloc_space, inuse_space, cpu (default: the profile's default)")
	fs.StringVar(&o.focus, "focus", "", "keep only the samples with a function matching this regular expression")
	fs.StringVar(&o.ignore, "ignore", "", "drop the samples with a function matching this regular expression")
	fs.StringVar(&o.minShare, "min-share", "", "prune frames below this share of the total, such as 0.1% (default: 0.01% for SVG, 0.001% for HTML, 0 for folded)")
	fs.StringVar(&o.diffBy, "diff-by", "absolute", "with --base, colour by change of value (absolute) or of share of the total (share)")
	fs.StringVar((*string)(&o.Normalize), "normalize", "none", "with --base, divide values by: none, duration (the profiles' own), requests (--requests, --base-requests)")
	fs.Int64Var(&o.Requests, "requests", 0, "requests PROFILE's window served, for --normalize requests")
	fs.Int64Var(&o.BaseRequests, "base-requests", 0, "requests BASE's window served, for --normalize requests")
	fs.StringVar(&o.vanished, "vanished", "", "with --base and an SVG, also write the vanished view (BASE's shape) to this file")
	fs.StringVar(&o.Title, "title", "", "title of the graph (default: names the profile)")
	fs.StringVar(&o.Module, "module", "", "the application's module path, to colour its dependencies apart")
	fs.BoolVar(&o.Icicle, "icicle", false, "draw the root on top")
	return withHelp(cmd, "flame")
}

func runFlame(e *env, path string, o *flameOptions) error {
	opts, err := o.drawOptions()
	if err != nil {
		return err
	}
	in, err := readFlameInput(e, path, o.Sample)
	if err != nil {
		return err
	}
	var base *flame.Input
	if o.base != "" {
		b, err := readFlameInput(e, o.base, o.Sample)
		if err != nil {
			return err
		}
		base = &b
	}
	g, err := flame.Draw(in, base, opts)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(o.out, g.Write); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s: %s\n", o.out, g.Summary())
	if o.vanished != "" {
		if err := atomicfile.Write(o.vanished, g.WriteVanished); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "wrote %s: %s\n", o.vanished, g.VanishedSummary())
	}
	return nil
}

// drawOptions checks the flags and turns them into flame.DrawOptions.
func (o *flameOptions) drawOptions() (flame.DrawOptions, error) {
	if o.out == "" {
		return flame.DrawOptions{}, errors.New("flame needs -o OUT, a .svg, .html or .folded file")
	}
	opts := o.DrawOptions
	var ok bool
	if opts.Format, ok = flame.FormatOf(o.out); !ok {
		return flame.DrawOptions{}, fmt.Errorf("-o %s: the extension picks the format; use .svg, .html or .folded", o.out)
	}
	opts.MinShare = opts.Format.DefaultMinShare()
	var err error
	if o.minShare != "" {
		if opts.MinShare, err = flame.ParseShare(o.minShare); err != nil {
			return flame.DrawOptions{}, fmt.Errorf("--min-share: %w", err)
		}
	}
	if opts.Diff.By, err = flame.ParseDiffBy(o.diffBy); err != nil {
		return flame.DrawOptions{}, fmt.Errorf("--diff-by: %w", err)
	}
	switch {
	case o.vanished != "" && o.base == "":
		return flame.DrawOptions{}, errors.New("--vanished needs --base")
	case o.vanished != "" && opts.Format != flame.FormatSVG:
		return flame.DrawOptions{}, fmt.Errorf("--vanished writes an SVG next to an SVG; the %s output has the vanished view built in or has no such view", opts.Format)
	}
	if err := opts.Validate(o.base != ""); err != nil {
		return flame.DrawOptions{}, err
	}
	if opts.Focus, err = compileFlag("--focus", o.focus); err != nil {
		return flame.DrawOptions{}, err
	}
	if opts.Ignore, err = compileFlag("--ignore", o.ignore); err != nil {
		return flame.DrawOptions{}, err
	}
	return opts, nil
}

// readFlameInput reads a profile and checks that it can be drawn.
func readFlameInput(e *env, path, sample string) (flame.Input, error) {
	s, err := rundir.ReadStacks(path, e.stdin, pprofx.ReadOptions{})
	if err != nil {
		return flame.Input{}, err
	}
	return flame.NewInput(path, s, sample)
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
