package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/bench"
	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/gate"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/run"
)

// compareOptions are the flags of compare.
type compareOptions struct {
	compare.Options
	format string
	out    string
	failOn []string
}

func newCompareCmd(e *env) *cobra.Command {
	o := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B | compare RUN_A... -- RUN_B...",
		Short: "Compare profiling runs before and after a change, with gates",
		RunE: func(cmd *cobra.Command, args []string) error {
			before, after, err := splitSides(args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			return runCompare(e, before, after, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.format, "format", "text", "output on stdout: text, markdown or json")
	fs.StringVarP(&o.out, "output", "o", "", "write the comparison to `FILE` instead: .html, .md, .json or .txt")
	fs.StringArrayVar(&o.failOn, "fail-on", nil, "gate `[FUNCTION_REGEX:]FIGURE>THRESHOLD`, such as 'bytes_per_request>+5%'; < where lower is worse; repeatable")
	fs.Float64Var(&o.Alpha, "alpha", bench.DefaultAlpha, "significance level with repeated runs: a change counts when p ≤ alpha")
	fs.IntVar(&o.Sites, "sites", compare.DefaultSites, "allocation sites listed as grown and as shrunk")
	return withHelp(cmd, "compare", "{{figures}}", strings.Join(result.FigureNames(), ", "))
}

// splitSides cuts the arguments at "--", or takes two.
func splitSides(args []string, dash int) ([]string, []string, error) {
	switch {
	case dash >= 0:
		before, after := args[:dash], args[dash:]
		for _, a := range after {
			if strings.HasPrefix(a, "-") {
				return nil, nil, fmt.Errorf("%s after --: everything after -- is a run directory; put flags before the runs", a)
			}
		}
		if len(before) == 0 || len(after) == 0 {
			return nil, nil, fmt.Errorf("compare takes runs on both sides of --, such as a1 a2 -- b1 b2 (got %d before and %d after)", len(before), len(after))
		}
		return before, after, nil
	case len(args) != 2:
		return nil, nil, fmt.Errorf("compare takes two run directories, or several on each side of -- (got %d arguments); see heapscope compare --help", len(args))
	}
	return args[:1], args[1:], nil
}

func runCompare(e *env, beforeDirs, afterDirs []string, o *compareOptions) error {
	format, err := report.ParseFormat(o.format)
	if err != nil {
		return err
	}
	out, err := report.OutputFormat("-o", o.out, report.FormatHTML, report.FormatMarkdown, report.FormatJSON, report.FormatText)
	if err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	opts := o.Options
	if opts.Gates, err = gate.ParseAll("--fail-on", o.failOn, compare.ParseGate); err != nil {
		return err
	}
	warn := func(w string) { fmt.Fprintf(e.stderr, "heapscope: warning: %s\n", w) }
	doc, err := run.CompareDirs(beforeDirs, afterDirs, opts, out == report.FormatHTML, warn)
	if err != nil {
		return err
	}
	if o.out == "" {
		err = report.Write(e.stdout, format, doc)
	} else if err = report.WriteFile(o.out, out, doc); err == nil {
		fmt.Fprintf(e.stderr, "heapscope: wrote %s\n", o.out)
	}
	if err != nil {
		return err
	}
	if err := doc.Comparison.GateError(); err != nil {
		return &codeError{code: exitGateFailed, err: err}
	}
	return nil
}
