package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
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
	format string
	target string
	targetFlags
	// noDiscover skips looking for pprof on the process's listening ports
	// when no target is given.
	noDiscover bool

	// proc reads /proc; sysmem.Proc{} when nil (tests replace it).
	proc procReader
}

// procReader is what rss reads of a process: sysmem.Proc in production.
type procReader interface {
	ScanSmaps(pid int, fn func(*sysmem.Mapping)) error
	Status(pid int) (sysmem.Status, error)
	Cgroup(pid int) (sysmem.Cgroup, error)
	Exe(pid int) (string, error)
	ListeningPorts(pid int) ([]int, error)
}

var _ procReader = sysmem.Proc{}

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
kernel's figures and explains the gap: heap pages committed but never
touched, pages released but still resident, memory the runtime does not
know of (cgo, C libraries, mmap). The runtime's figures come from
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
	fs.StringVar(&o.target, "target", "", "base URL of the process's pprof, for the runtime's MemStats (e.g. http://127.0.0.1:6060)")
	o.targetFlags.register(fs, "--target", "timeout of the request to --target", 10*time.Second, "")
	fs.BoolVar(&o.noDiscover, "no-discover", false, "without --target, do not look for pprof on the process's listening ports")
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
	topts, header, err := o.targetFlags.options(o.target)
	if err != nil {
		return err
	}
	look := runtimeLookup{discover: !o.noDiscover, pprofPath: o.pprofPath, header: header}
	if o.target != "" {
		look.target, err = target.New(topts)
		if err != nil {
			return err
		}
	}
	proc := o.proc
	if proc == nil {
		proc = sysmem.Proc{}
	}
	in, err := gatherRSS(ctx, proc, look, pid)
	if err != nil {
		return err
	}
	r := rss.Build(in)
	return report.RSS(e.stdout, &r, format)
}

// gatherRSS reads what rss explains: MemStats first (when they can be
// had), then the mappings right after, so the two views are close in
// time; then status and cgroup, whose failure is only a warning.
func gatherRSS(ctx context.Context, proc procReader, look runtimeLookup, pid int) (rss.Input, error) {
	in := rss.Input{PID: pid}
	if err := look.memStats(ctx, proc, pid, &in); err != nil {
		return in, err
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

// runtimeLookup is where rss gets the runtime's MemStats: the --target
// client when given, else the pprof found on one of the process's
// listening ports.
type runtimeLookup struct {
	// target is the client of --target; nil when not given.
	target *target.Client
	// discover says to look on the process's ports without a target.
	discover bool
	// pprofPath and header are what to ask a discovered port with.
	pprofPath string
	header    http.Header
	// transport replaces the discovery's HTTP transport (tests).
	transport http.RoundTripper
}

// probeTimeout bounds the request to each listening port: a port that
// speaks another protocol, or none, must not hold the report up.
const probeTimeout = 3 * time.Second

// maxProbes caps the ports tried at once.
const maxProbes = 8

// noRuntimeHint ends every "unknown" line: how to give the figures.
const noRuntimeHint = "give --target URL, the process's pprof"

// memStats sets in.MemStats from the target, or from the first of the
// process's ports that serves them. Only a failing --target is an error;
// when no port answers, in.RuntimeUnknown says so.
func (l runtimeLookup) memStats(ctx context.Context, proc procReader, pid int, in *rss.Input) error {
	if l.target != nil {
		ms, err := fetchMemStats(ctx, l.target)
		if err != nil {
			return fmt.Errorf("rss of process %d: %w", pid, err)
		}
		in.MemStats, in.MemStatsURL = ms, shownURL(l.target.ProfileURL("", nil))
		return nil
	}
	if !l.discover {
		in.RuntimeUnknown = "not looked for (--no-discover); " + noRuntimeHint
		return nil
	}
	ports, err := proc.ListeningPorts(pid)
	if err != nil {
		// A process that is gone fails the smaps read right after,
		// with its own error.
		in.RuntimeUnknown = fmt.Sprintf("its listening ports could not be listed (%v); %s", err, noRuntimeHint)
		return nil
	}
	if len(ports) == 0 {
		in.RuntimeUnknown = "the process listens on no TCP port of a loopback or wildcard address; " + noRuntimeHint
		return nil
	}
	c, ms, notFound := l.probe(ctx, ports)
	if ms != nil {
		in.MemStats, in.MemStatsURL, in.MemStatsDiscovered = ms, c.ProfileURL("", nil), true
		return nil
	}
	list := make([]string, len(ports))
	for i, p := range ports {
		list[i] = strconv.Itoa(p)
	}
	pprofPath := "/" + strings.Trim(l.pprofPath, "/") + "/"
	if pprofPath == "//" {
		pprofPath = "/"
	}
	text := fmt.Sprintf("none of the process's listening ports (%s) serves http://127.0.0.1:PORT%sheap?debug=1", strings.Join(list, ", "), pprofPath)
	if notFound {
		text += " (one answered 404: is pprof under another --pprof-path?)"
	}
	in.RuntimeUnknown = text + "; " + noRuntimeHint
	return nil
}

// probe asks every port, a few at a time, for MemStats on 127.0.0.1 and
// returns the client and figures of the lowest port that served them, or
// nil, and whether some port answered 404.
func (l runtimeLookup) probe(ctx context.Context, ports []int) (*target.Client, *gcstats.MemStats, bool) {
	rt := l.transport
	if rt == nil {
		// No proxy, no idle connections left behind: each port is
		// asked once.
		tr := &http.Transport{DisableKeepAlives: true, DisableCompression: true}
		defer tr.CloseIdleConnections()
		rt = tr
	}
	type result struct {
		client   *target.Client
		ms       *gcstats.MemStats
		notFound bool
	}
	results := make([]result, len(ports))
	sem := make(chan struct{}, maxProbes)
	var wg sync.WaitGroup
	for i, port := range ports {
		c, err := target.New(target.Options{
			BaseURL: "http://127.0.0.1:" + strconv.Itoa(port), PprofPath: l.pprofPath,
			Header: l.header, Timeout: probeTimeout, MaxBody: 16 << 20, Transport: rt,
		})
		if err != nil {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ms, err := fetchMemStats(ctx, c)
			results[i] = result{client: c, ms: ms, notFound: errors.Is(err, target.ErrNotFound)}
		})
	}
	wg.Wait()
	notFound := false
	for _, r := range results {
		if r.ms != nil {
			return r.client, r.ms, false
		}
		notFound = notFound || r.notFound
	}
	return nil, nil, notFound
}

// fetchMemStats reads the runtime's MemStats from c's heap?debug=1.
func fetchMemStats(ctx context.Context, c *target.Client) (*gcstats.MemStats, error) {
	body, err := c.HeapDebug(ctx, false)
	if err != nil {
		return nil, err
	}
	ms, err := gcstats.ParseHeapDebug(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("read MemStats from %s: %w", shownURL(c.ProfileURL("heap", nil)), err)
	}
	return &ms, nil
}

// shownURL is raw without its user information: reports and errors end
// up in logs.
func shownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}
