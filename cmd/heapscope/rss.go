package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/rss"
	"github.com/heapscope/heapscope/internal/rss/live"
)

// rssOptions are the flags of rss.
type rssOptions struct {
	format string
	url    string
	target targetFlags
	// noDiscover: without a target, do not look for pprof on the ports.
	noDiscover bool
	// proc reads /proc; sysmem.Proc{} when nil (tests replace it).
	proc live.Proc
}

func newRSSCmd(e *env) *cobra.Command {
	o := &rssOptions{}
	cmd := &cobra.Command{
		Use:   "rss PID",
		Short: "Explain a process's resident memory: mappings, Go heap, cgroup, runtime",
		Args:  exactArgs(1, "PID, the process id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRSS(cmd.Context(), e, args[0], o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.format, "format", "text", "output: text or json")
	fs.StringVar(&o.url, "target", "", "base URL of the process's pprof, for the runtime's MemStats (e.g. http://127.0.0.1:6060)")
	o.target.register(fs, "--target", "timeout of the request to --target", 10*time.Second, "")
	fs.BoolVar(&o.noDiscover, "no-discover", false, "without --target, do not look for pprof on the process's listening ports")
	return withHelp(cmd, "rss")
}

func runRSS(ctx context.Context, e *env, pidArg string, o *rssOptions) error {
	format, err := report.ParseFormat(o.format, report.RSS{}.Formats()...)
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(pidArg)
	if err != nil || pid <= 0 {
		return fmt.Errorf("rss: PID %q is not a process id (a positive number)", pidArg)
	}
	if err := live.Supported(); err != nil {
		return err
	}
	topts, _, err := o.target.options(o.url)
	if err != nil {
		return err
	}
	look, err := live.NewLookup(topts, !o.noDiscover)
	if err != nil {
		return err
	}
	in, err := live.Gather(ctx, o.proc, look, pid)
	if err != nil {
		return err
	}
	r := rss.Build(in)
	return report.Write(e.stdout, format, report.RSS{Report: &r})
}
