package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/rss"
)

// rssOptions are the flags of rss.
type rssOptions struct {
	format string
	url    string
	target targetFlags
	// noDiscover: without a target, do not look for pprof on the ports.
	noDiscover bool
	// proc reads /proc; sysmem.Proc{} when nil (tests replace it).
	proc rss.Proc
}

func newRSSCmd(e *env) *cobra.Command {
	o := &rssOptions{}
	cmd := &cobra.Command{
		Use:   "rss PID",
		Short: "Explain a process's resident memory: mappings, Go heap, cgroup, runtime",
		Long: `rss reads /proc/PID/smaps (streamed, however many mappings) and reports the
process's RSS, PSS and swap, per kind of mapping — the Go heap arenas
(which also hold goroutine stacks), the main [stack], other anonymous
memory, reserved address space, the binary, shared libraries, other files —
with their count, size, Rss, PSS, Private_Dirty and swap; the Go heap mappings' Rss against their
size; and the limit, usage, memory.stat and headroom of the process's own
cgroup (v1, v2 or hybrid hosts).

It puts the runtime's HeapSys, HeapInuse, HeapReleased, StackInuse and Sys beside the
kernel's figures and explains the gap as diagnose's rss.breakdown does
(docs/rss.md): heap pages committed but never touched, pages released but
still resident, idle heap, memory the runtime does not know of (cgo, C
libraries, mmap). The runtime's figures come from
--target URL, the process's pprof; without it, from the first of the
process's TCP ports on a loopback or wildcard address that serves
http://127.0.0.1:PORT/debug/pprof/heap?debug=1 (--pprof-path changes the
path; --no-discover skips the search). The report says where they came
from, or that they are unknown.

Linux only. Reading another user's process needs its rights (or root).`,
		Example: `  heapscope rss 4242
  heapscope rss 4242 --target http://127.0.0.1:6060 --format json
  heapscope rss $(pgrep -n myservice) --target http://127.0.0.1:6060 --pprof-path /admin/pprof/`,
		Args: exactArgs(1, "PID, the process id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRSS(cmd.Context(), e, args[0], o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.format, "format", "text", "output: text or json")
	fs.StringVar(&o.url, "target", "", "base URL of the process's pprof, for the runtime's MemStats (e.g. http://127.0.0.1:6060)")
	o.target.register(fs, "--target", "timeout of the request to --target", 10*time.Second, "")
	fs.BoolVar(&o.noDiscover, "no-discover", false, "without --target, do not look for pprof on the process's listening ports")
	return cmd
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
	if err := rss.Supported(); err != nil {
		return err
	}
	topts, _, err := o.target.options(o.url)
	if err != nil {
		return err
	}
	look, err := rss.NewLookup(topts, !o.noDiscover)
	if err != nil {
		return err
	}
	in, err := rss.Gather(ctx, o.proc, look, pid)
	if err != nil {
		return err
	}
	r := rss.Build(in)
	return report.Write(e.stdout, format, report.RSS{Report: &r})
}
