package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/rss"
	"github.com/heapscope/heapscope/internal/sysmem"
	"github.com/heapscope/heapscope/internal/target"
)

// rssOptions are the flags of rss.
type rssOptions struct {
	format    string
	target    string
	pprofPath string
	headers   []string
	caCert    string
	insecure  bool
	timeout   time.Duration

	// proc reads /proc; sysmem.Proc{} when nil (tests replace it).
	proc procReader
}

// procReader is what rss reads of a process: sysmem.Proc in production.
type procReader interface {
	ScanSmaps(pid int, fn func(*sysmem.Mapping)) error
	Status(pid int) (sysmem.Status, error)
	Cgroup(pid int) (sysmem.Cgroup, error)
	Exe(pid int) (string, error)
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
with size, Rss and Private_Dirty; the Go heap mappings' Rss against their
size; and the limit, usage, memory.stat and headroom of the process's own
cgroup (v1, v2 or hybrid hosts).

With --target URL, the process's pprof, it puts the runtime's HeapSys,
HeapInuse, HeapReleased and Sys beside the kernel's figures and explains
the gap: heap pages committed but never touched, pages released but still
resident, memory the runtime does not know of (cgo, C libraries, mmap).

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
	fs.StringVar(&o.target, "target", "", "base URL of the process's pprof, for the runtime's MemStats (e.g. http://127.0.0.1:6060)")
	fs.StringVar(&o.pprofPath, "pprof-path", target.DefaultPprofPath, "path of net/http/pprof on --target")
	fs.StringArrayVarP(&o.headers, "header", "H", nil, "header 'Name: value' sent to --target (repeatable)")
	fs.StringVar(&o.caCert, "cacert", "", "PEM file of CA certificates to trust for https")
	fs.BoolVar(&o.insecure, "insecure", false, "do not verify the target's TLS certificate")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "timeout of the request to --target")
	return cmd
}

func runRSS(ctx context.Context, e *env, pidArg string, o *rssOptions) error {
	format, err := report.ParseFormat(o.format)
	if err != nil || format == report.FormatMarkdown {
		return fmt.Errorf("--format %q: give text or json", o.format)
	}
	pid, err := strconv.Atoi(pidArg)
	if err != nil || pid <= 0 {
		return fmt.Errorf("rss: PID %q is not a process id (a positive number)", pidArg)
	}
	if err := rssSupported(); err != nil {
		return err
	}
	var client *target.Client
	if o.target != "" {
		header, err := parseHeaders(o.headers)
		if err != nil {
			return err
		}
		client, err = target.New(target.Options{
			BaseURL: o.target, PprofPath: o.pprofPath, Header: header,
			CACertFile: o.caCert, Insecure: o.insecure, Timeout: o.timeout,
		})
		if err != nil {
			return err
		}
	}
	proc := o.proc
	if proc == nil {
		proc = sysmem.Proc{}
	}
	in, err := gatherRSS(ctx, proc, client, pid)
	if err != nil {
		return err
	}
	r := rss.Build(in)
	return report.RSS(e.stdout, &r, format)
}

// gatherRSS reads what rss explains: MemStats first (when a client is
// given), then the mappings right after, so the two views are close in
// time; then status and cgroup, whose failure is only a warning.
func gatherRSS(ctx context.Context, proc procReader, client *target.Client, pid int) (rss.Input, error) {
	in := rss.Input{PID: pid}
	if client != nil {
		body, err := client.HeapDebug(ctx)
		if err != nil {
			return in, fmt.Errorf("rss of process %d: %w", pid, err)
		}
		ms, err := gcstats.ParseHeapDebug(bytes.NewReader(body))
		if err != nil {
			return in, fmt.Errorf("rss of process %d: read MemStats from %s: %w", pid, client.ProfileURL("heap", nil), err)
		}
		in.MemStats = &ms
	}
	exe, err := proc.Exe(pid)
	if err != nil && !errors.Is(err, fs.ErrPermission) && !errors.Is(err, fs.ErrNotExist) {
		in.Warnings = append(in.Warnings, err.Error())
	}
	c := rss.Classifier{Exe: exe}
	if err := proc.ScanSmaps(pid, c.Add); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return in, fmt.Errorf("rss of process %d: %w (run as the process's user, or as root)", pid, err)
		}
		return in, fmt.Errorf("rss of process %d: %w", pid, err)
	}
	in.Mappings = c.Result()
	if st, err := proc.Status(pid); err != nil {
		in.Warnings = append(in.Warnings, err.Error())
	} else {
		in.Status = &st
	}
	if cg, err := proc.Cgroup(pid); err != nil {
		in.Warnings = append(in.Warnings, "cgroup: "+err.Error())
	} else {
		in.Cgroup = &cg
	}
	return in, nil
}
