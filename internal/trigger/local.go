package trigger

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/heapscope/heapscope/internal/sysmem"
)

// Local samples a process of this machine from /proc and its memory
// cgroup (v1, v2 or hybrid hosts), through sysmem.
type Local struct {
	// PID is the process's id.
	PID int
	// Root is the filesystem root to read /proc and /sys/fs/cgroup from,
	// as sysmem.Proc's; "" for "/". Tests point it at a tree.
	Root string
}

// Sample reads the process's figures:
//
//	/proc/PID/status VmRSS                 RSS
//	/proc/PID/stat and /proc/stat btime    Start (sysmem.Proc.Started)
//	the cgroup's usage                     CgroupUsage (memory.current, memory.usage_in_bytes)
//	  less its inactive file cache         Memory, the working set
//	its limit, or an ancestor's            MemoryLimit, unless unlimited
//	memory.events, memory.oom_control      OOMKills
//	/proc/PID/environ GOMEMLIMIT           GoMemLimit, when set
//
// The error is for the process itself: gone (it matches fs.ErrNotExist)
// or its status unreadable. Figures that cannot be read beside it are left
// unknown, each with a warning in Sample.Warnings, except those that do
// not exist here (no OOM-kill counter, an environ this user may not read)
// which are only unknown. The goroutine count, the heap after GC and the
// GC's figures are not in /proc: merge them from RemoteSample or add them
// with AddMemStats.
func (l Local) Sample(ctx context.Context) (Sample, error) {
	if err := ctx.Err(); err != nil {
		return Sample{}, err
	}
	p := sysmem.Proc{Root: l.Root}
	s := Sample{Time: time.Now(), PID: l.PID, Known: KnownPID}
	st, err := p.Status(l.PID)
	if err != nil {
		return Sample{}, fmt.Errorf("sample process %d: %w", l.PID, err)
	}
	s.RSS = st.VmRSS
	s.Known |= KnownRSS
	warn := func(err error) { s.Warnings = append(s.Warnings, err) }

	if start, err := p.Started(l.PID); err == nil {
		s.Start = start
		s.Known |= KnownStart
	} else {
		warn(err)
	}

	if cg, err := p.Cgroup(l.PID); err == nil {
		s.addCgroup(cg)
	} else {
		warn(err)
	}

	switch env, err := p.GoEnv(l.PID); {
	case err == nil:
		if limit, ok := env.MemoryLimit(); ok {
			s.GoMemLimit = limit
			s.Known |= KnownGoMemLimit
		}
	case !errors.Is(err, fs.ErrPermission):
		warn(err)
	}
	return s, nil
}

// usageMissing reports whether cg has no usage file, as the v2 root
// cgroup has none: sysmem then leaves the usage at 0 with a note.
func usageMissing(cg sysmem.Cgroup) bool {
	name := "memory.current"
	if cg.Version == 1 {
		name = "memory.usage_in_bytes"
	}
	_, err := os.Stat(filepath.Join(cg.Dir, name))
	return errors.Is(err, fs.ErrNotExist)
}

// addCgroup sets the figures of the target's memory cgroup: Cgroup,
// MemoryLimit unless unlimited, CgroupUsage and Memory unless the cgroup
// has no usage file (the v2 root cgroup), OOMKills when it counts them.
func (s *Sample) addCgroup(cg sysmem.Cgroup) {
	s.Cgroup = cg.Dir
	if !cg.Unlimited {
		s.MemoryLimit = cg.Limit
		s.Known |= KnownMemoryLimit
	}
	if !usageMissing(cg) {
		s.CgroupUsage, s.Memory = cg.Usage, cg.WorkingSet()
		s.Known |= KnownCgroupUsage | KnownMemory
	}
	switch n, err := sysmem.ReadOOMKills(cg); {
	case err == nil:
		s.OOMKills = n
		s.Known |= KnownOOMKills
	case !errors.Is(err, fs.ErrNotExist):
		s.Warnings = append(s.Warnings, err)
	}
}

// Container samples a container by its memory cgroup alone: what a
// watcher beside it on the node reads through the host's cgroup
// filesystem, where the container's processes are not to be seen.
type Container struct {
	// Mount is the memory hierarchy's mount (sysmem.CgroupAt's).
	Mount string
	// Dir is the container's cgroup directory under Mount.
	Dir string
}

// Sample reads the container's cgroup: Cgroup, MemoryLimit, CgroupUsage,
// Memory (the working set) and OOMKills, as Local reads a process's. The
// error matches fs.ErrNotExist when the cgroup has gone (the container
// ended). The process's own figures (RSS, start, the Go runtime's) are
// not here: merge them from RemoteSample.
func (c Container) Sample(ctx context.Context) (Sample, error) {
	if err := ctx.Err(); err != nil {
		return Sample{}, err
	}
	cg, err := sysmem.CgroupAt(c.Mount, c.Dir)
	if err != nil {
		return Sample{}, fmt.Errorf("sample container: %w", err)
	}
	s := Sample{Time: time.Now()}
	s.addCgroup(cg)
	return s, nil
}
