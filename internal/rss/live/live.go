// Package live gathers what package rss explains from a live process: its
// mappings, status and cgroup from /proc (sysmem.Proc), and the runtime's
// MemStats from its pprof (target.Client for one the user names,
// target.Local for one found on the process's listening ports). Package
// rss itself takes the data and reads nothing.
package live

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/rss"
	"github.com/heapscope/heapscope/internal/sysmem"
	"github.com/heapscope/heapscope/internal/target"
)

// Proc is what Gather reads of a process; sysmem.Proc reads it from /proc.
type Proc interface {
	ScanSmaps(pid int, fn func(*sysmem.Mapping)) error
	Status(pid int) (sysmem.Status, error)
	Cgroup(pid int) (sysmem.Cgroup, error)
	Exe(pid int) (string, error)
	ListeningPorts(pid int) ([]int, error)
}

var _ Proc = sysmem.Proc{}

// Lookup says where Gather gets the runtime's MemStats of the process.
// With neither function, they are not looked for.
type Lookup struct {
	// Given fetches them from the pprof the user named, at GivenURL
	// (target.Client.MemStats and PprofURL); nil when none was named.
	Given    func(context.Context) (*gcstats.MemStats, error)
	GivenURL string
	// Find looks for them on the process's listening ports and returns
	// the pprof that served them (target.Local.FindMemStats); nil not to
	// look. Used only without Given.
	Find func(ctx context.Context, ports []int) (*gcstats.MemStats, string, error)
}

// Supported reports whether Gather can read processes here: it reads
// /proc, which only Linux has.
func Supported() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("rss reads /proc/PID/smaps: Linux only (this is %s)", runtime.GOOS)
	}
	return nil
}

// NewLookup looks the MemStats up at the pprof of opts when its BaseURL is
// set (a pprof the user names); else, when discover is true, on the
// process's listening ports with the pprof path and headers of opts.
func NewLookup(opts target.Options, discover bool) (Lookup, error) {
	switch {
	case opts.BaseURL != "":
		c, err := target.New(opts)
		if err != nil {
			return Lookup{}, err
		}
		given := func(ctx context.Context) (*gcstats.MemStats, error) {
			ms, err := c.MemStats(ctx, false)
			if err != nil {
				return nil, err
			}
			return &ms, nil
		}
		return Lookup{Given: given, GivenURL: c.PprofURL()}, nil
	case discover:
		return Lookup{Find: target.Local{PprofPath: opts.PprofPath, Header: opts.Header}.FindMemStats}, nil
	}
	return Lookup{}, nil
}

// noRuntimeHint ends every reason the runtime's figures are unknown: how
// to give them.
const noRuntimeHint = "give --target URL, the process's pprof"

// Gather reads what rss.Build explains of process pid: the runtime's MemStats
// first, when they can be had, then the mappings right after, so that the
// two views are close in time; then status and cgroup, whose failure is
// only a warning. Only a failing Given and an unreadable smaps are
// errors. A nil proc reads /proc (sysmem.Proc).
func Gather(ctx context.Context, proc Proc, look Lookup, pid int) (rss.Input, error) {
	if proc == nil {
		proc = sysmem.Proc{}
	}
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

// memStats sets in.MemStats from Given, or from Find over the process's
// ports; when neither yields them, in.RuntimeUnknown says why.
func (l Lookup) memStats(ctx context.Context, proc Proc, pid int, in *rss.Input) error {
	switch {
	case l.Given != nil:
		ms, err := l.Given(ctx)
		if err != nil {
			return fmt.Errorf("rss of process %d: %w", pid, err)
		}
		in.MemStats, in.MemStatsURL = ms, l.GivenURL
		return nil
	case l.Find == nil:
		in.RuntimeUnknown = "not looked for (--no-discover); " + noRuntimeHint
		return nil
	}
	ports, err := proc.ListeningPorts(pid)
	switch {
	case err != nil:
		// A process that is gone fails the smaps read right after, with
		// its own error.
		in.RuntimeUnknown = fmt.Sprintf("its listening ports could not be listed (%v); %s", err, noRuntimeHint)
		return nil
	case len(ports) == 0:
		in.RuntimeUnknown = "the process listens on no TCP port of a loopback or wildcard address; " + noRuntimeHint
		return nil
	}
	ms, at, err := l.Find(ctx, ports)
	if err != nil {
		in.RuntimeUnknown = err.Error() + "; " + noRuntimeHint
		return nil
	}
	in.MemStats, in.MemStatsURL, in.MemStatsDiscovered = ms, at, true
	return nil
}
