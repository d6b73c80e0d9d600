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
		Long: `top prints the heaviest source lines of any pprof profile (heap, allocs,
CPU, goroutine, block, mutex), flat and cumulative, with their shares, the
function and file:line. PROFILE is a file, gzipped or not, or - for stdin.`,
		Example: `  heapscope top heapscope-runs/127.0.0.1_6060-20261122T101500Z/profiles/allocs-delta.pb.gz
  heapscope top heap.pb.gz --sample inuse_space -n 5 --format markdown
  curl -s localhost:6060/debug/pprof/profile?seconds=5 | heapscope top --cum -`,
		Args: exactArgs(1, "PROFILE, a pprof file or -"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTop(e, args[0], o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.sample, "sample", "", "sample type, such as alloc_space, inuse_space, cpu (default: the profile's default)")
	fs.IntVarP(&o.n, "n", "n", 20, "number of sites; 0 for all")
	fs.BoolVar(&o.cum, "cum", false, "sort by cumulative value instead of flat")
	fs.StringVar(&o.format, "format", "text", "output: text, json or markdown")
	return cmd
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
