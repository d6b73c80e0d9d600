package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/run"
	"github.com/heapscope/heapscope/internal/rundir"
)

type topOptions struct {
	sample string
	n      int
	cum    bool
	format string
}

func newTopCmd(e *env) *cobra.Command {
	o := &topOptions{}
	cmd := &cobra.Command{
		Use:   "top PROFILE",
		Short: "Print the heaviest sites of a pprof profile",
		Args:  exactArgs(1, "PROFILE, a pprof file or -"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTop(e, args[0], o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.sample, "sample", "", "sample type, such as alloc_space, inuse_space, cpu (default: the profile's default)")
	fs.IntVarP(&o.n, "n", "n", 20, "number of sites; 0 for all")
	fs.BoolVar(&o.cum, "cum", false, "sort by cumulative value instead of flat")
	fs.StringVar(&o.format, "format", "text", "output: text, json or markdown")
	return withHelp(cmd, "top")
}

func runTop(e *env, path string, o *topOptions) error {
	format, err := report.ParseFormat(o.format)
	if err != nil {
		return err
	}
	if o.n < 0 {
		return fmt.Errorf("-n %d: give a number of sites ≥ 0", o.n)
	}
	s, err := rundir.ReadStacks(path, e.stdin, pprofx.ReadOptions{})
	if err != nil {
		return err
	}
	tab, err := s.Top(pprofx.TopOptions{Sample: o.sample, N: o.n, SortByCum: o.cum})
	if err != nil {
		return fmt.Errorf("top of %s: %w", path, err)
	}
	return report.Write(e.stdout, format, report.Top{Table: run.TopTable(tab, path, "")})
}
