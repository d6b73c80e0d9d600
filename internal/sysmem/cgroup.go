package sysmem

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CgroupEntry is one line of /proc/PID/cgroup:
// "hierarchy-ID:controller-list:cgroup-path".
type CgroupEntry struct {
	// HierarchyID is 0 for the cgroup v2 (unified) hierarchy.
	HierarchyID int
	// Controllers are the v1 controllers bound to the hierarchy, such as
	// "memory" or "cpu", "cpuacct", or a named hierarchy such as
	// "name=systemd"; empty for v2.
	Controllers []string
	// Path is the cgroup's path, relative to the hierarchy's root (as
	// seen from this process's cgroup namespace).
	Path string
}

// ParseCgroupFile parses the contents of /proc/PID/cgroup.
func ParseCgroupFile(r io.Reader) ([]CgroupEntry, error) {
	var entries []CgroupEntry
	err := eachLine(r, 4<<10, func(n int, line []byte) error {
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			return nil
		}
		id, rest, ok1 := bytes.Cut(line, []byte{':'})
		ctrls, cpath, ok2 := bytes.Cut(rest, []byte{':'})
		if !ok1 || !ok2 {
			return &SyntaxError{Line: n, Msg: "want hierarchy-ID:controllers:path"}
		}
		hid, ok := parseDec(id)
		if !ok || hid > 1<<31-1 {
			return &SyntaxError{Line: n, Msg: fmt.Sprintf("bad hierarchy id %q", id)}
		}
		if len(cpath) == 0 || cpath[0] != '/' {
			return &SyntaxError{Line: n, Msg: fmt.Sprintf("cgroup path %q is not absolute", cpath)}
		}
		e := CgroupEntry{HierarchyID: int(hid), Path: string(cpath)}
		if len(ctrls) > 0 {
			e.Controllers = strings.Split(string(ctrls), ",")
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("parse cgroup: %w", err)
	}
	return entries, nil
}

// Cgroup describes the memory cgroup of a process: its limit, its usage
// and the kernel's breakdown of that usage.
type Cgroup struct {
	// Version is 1 when memory is accounted by a cgroup v1 memory
	// controller (v1 and hybrid hosts), 2 on the unified hierarchy.
	Version int
	// Path is the process's cgroup, as in /proc/PID/cgroup.
	Path string
	// Dir is the cgroupfs directory the figures were read from.
	Dir string
	// Limit is the memory limit in bytes that applies: the smallest set
	// on the cgroup or any of its ancestors; 0 when Unlimited.
	Limit uint64
	// LimitDir is the cgroupfs directory whose limit is Limit; "" when
	// Unlimited.
	LimitDir string
	// Unlimited reports whether no limit applies ("max" in v2, the
	// kernel's huge sentinel in v1).
	Unlimited bool
	// Usage is the memory charged to the cgroup, in bytes: page cache
	// included, so it can be close to Limit with little real pressure.
	Usage uint64
	// Stat is memory.stat: anon, file, shmem, ... in v2; rss, cache,
	// mapped_file, total_*, ... in v1. Values are bytes, except the
	// event counters (pgfault and the like).
	Stat map[string]uint64
	// Notes explain what could not be read as expected: a fallback to
	// the hierarchy's root, a file missing from the root cgroup.
	Notes []string
}

// memoryStatSplits are the memory.stat keys that split a cgroup's usage
// into anonymous memory and page cache, in the order Split tries them:
// v2's anon and file; v1's total_rss and total_cache, which count the
// cgroup's descendants too (as its usage does); v1's rss and cache, its
// own pages only, on kernels without the totals.
var memoryStatSplits = [...][2]string{{"anon", "file"}, {"total_rss", "total_cache"}, {"rss", "cache"}}

// Split returns the anonymous and page-cache parts of the cgroup's usage,
// from the first pair of memory.stat keys present (see memoryStatSplits):
// the keys of one pair are read together, never one from v2 and the other
// from v1. Both are 0 when memory.stat holds neither pair.
//
// Page cache is reclaimed before the OOM killer acts, so the anonymous
// part is what presses against the limit.
func (c *Cgroup) Split() (anon, file uint64) {
	for _, keys := range memoryStatSplits {
		a, okA := c.Stat[keys[0]]
		f, okF := c.Stat[keys[1]]
		if okA || okF {
			return a, f
		}
	}
	return 0, 0
}

// v1Unlimited is the smallest value cgroup v1 uses to mean "no limit"
// (the kernel writes the largest page-aligned int64,
// 0x7FFFFFFFFFFFF000 with 4 KiB pages).
const v1Unlimited = 1 << 62

// Cgroup reads the memory cgroup of process pid: /proc/PID/cgroup names
// it; its figures come from Root+"/sys/fs/cgroup"+path on cgroup v2, or
// Root+"/sys/fs/cgroup/memory"+path when a v1 memory controller accounts
// for it (v1 and hybrid hosts). When that directory does not exist (the
// process is in another cgroup namespace, or a container mounts its own
// cgroup as the root), the hierarchy's root is read instead and Notes say
// so.
func (p Proc) Cgroup(pid int) (Cgroup, error) {
	data, file, err := p.readPID(pid, "cgroup")
	if err != nil {
		return Cgroup{}, err
	}
	entries, err := ParseCgroupFile(bytes.NewReader(data))
	if err != nil {
		return Cgroup{}, fmt.Errorf("read %s: %w", file, err)
	}
	var v1, v2 *CgroupEntry
	for i := range entries {
		e := &entries[i]
		if e.HierarchyID == 0 && len(e.Controllers) == 0 {
			v2 = e
		}
		for _, c := range e.Controllers {
			if c == "memory" {
				v1 = e
			}
		}
	}
	switch {
	case v1 != nil:
		return p.cgroupV1(v1)
	case v2 != nil:
		return p.cgroupV2(v2)
	}
	return Cgroup{}, fmt.Errorf("read %s: no cgroup v2 entry and no v1 memory controller", file)
}

// cgroupV1 reads a cgroup of the v1 memory controller.
func (p Proc) cgroupV1(e *CgroupEntry) (Cgroup, error) {
	cg := Cgroup{Version: 1, Path: e.Path}
	mount := p.path("sys", "fs", "cgroup", "memory")
	if !isDir(mount) {
		// Mounted with other controllers, as "memory,cpu" for instance.
		mount = p.path("sys", "fs", "cgroup", strings.Join(e.Controllers, ","))
	}
	if !isDir(mount) {
		return cg, fmt.Errorf("read cgroup %s: no cgroup v1 memory hierarchy at %s", e.Path, p.path("sys", "fs", "cgroup", "memory"))
	}
	cg.Dir = p.cgroupDir(&cg, mount)
	return cg, p.readV1(&cg, mount)
}

// readV1 reads the figures of a v1 memory cgroup whose Dir is set, under
// the hierarchy mounted at mount.
func (p Proc) readV1(cg *Cgroup, mount string) error {
	err := p.cgroupLimit(cg, mount, "memory.limit_in_bytes", func(s string) (uint64, bool, error) {
		v, err := parseCgroupUint(s)
		return v, v >= v1Unlimited, err
	})
	if err != nil {
		return err
	}
	if err := p.cgroupUsage(cg, "memory.usage_in_bytes"); err != nil {
		return err
	}
	return p.cgroupStat(cg)
}

// cgroupV2 reads a cgroup of the unified hierarchy.
func (p Proc) cgroupV2(e *CgroupEntry) (Cgroup, error) {
	cg := Cgroup{Version: 2, Path: e.Path}
	// Hybrid hosts mount the unified hierarchy at /sys/fs/cgroup/unified.
	mount := p.path("sys", "fs", "cgroup")
	if !exists(filepath.Join(mount, "cgroup.controllers")) {
		if u := p.path("sys", "fs", "cgroup", "unified"); exists(filepath.Join(u, "cgroup.controllers")) {
			mount = u
		}
	}
	cg.Dir = p.cgroupDir(&cg, mount)
	return cg, p.readV2(&cg, mount)
}

// readV2 reads the figures of a cgroup of the unified hierarchy whose
// Dir is set, under the hierarchy mounted at mount.
func (p Proc) readV2(cg *Cgroup, mount string) error {
	err := p.cgroupLimit(cg, mount, "memory.max", func(s string) (uint64, bool, error) {
		if s == "max" {
			return 0, true, nil
		}
		v, err := parseCgroupUint(s)
		return v, false, err
	})
	if err != nil {
		return err
	}
	if err := p.cgroupUsage(cg, "memory.current"); err != nil {
		return err
	}
	return p.cgroupStat(cg)
}

// CgroupAt reads the memory cgroup whose directory is dir, under the
// memory hierarchy mounted at mount: the unified hierarchy (version 2)
// when mount holds cgroup.controllers, else a v1 memory controller. It
// reads another container's cgroup through the host's cgroup filesystem
// mounted into this one, where no /proc/PID/cgroup names it. The error
// matches fs.ErrNotExist when dir does not exist (the container has
// gone).
func CgroupAt(mount, dir string) (Cgroup, error) {
	mount, dir = filepath.Clean(mount), filepath.Clean(dir)
	rel, err := filepath.Rel(mount, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return Cgroup{}, fmt.Errorf("read cgroup %s: not under the hierarchy at %s", dir, mount)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return Cgroup{}, fmt.Errorf("read cgroup: %w", err)
	}
	if !fi.IsDir() {
		return Cgroup{}, fmt.Errorf("read cgroup %s: not a directory", dir)
	}
	cg := Cgroup{Version: 1, Path: "/" + filepath.ToSlash(rel), Dir: dir}
	if rel == "." {
		cg.Path = "/"
	}
	var p Proc
	if exists(filepath.Join(mount, "cgroup.controllers")) {
		cg.Version = 2
		return cg, p.readV2(&cg, mount)
	}
	return cg, p.readV1(&cg, mount)
}

// cgroupDir returns the directory of cg under the hierarchy mounted at
// mount, or mount itself, with a note, when that does not exist.
func (p Proc) cgroupDir(cg *Cgroup, mount string) string {
	dir := filepath.Join(mount, cg.Path)
	if isDir(dir) && (dir == mount || strings.HasPrefix(dir, mount+string(filepath.Separator))) {
		return dir
	}
	cg.Notes = append(cg.Notes, fmt.Sprintf("cgroup %s is not under %s (another cgroup namespace, or a container that mounts its own cgroup as the root): read the hierarchy's root instead", cg.Path, mount))
	return mount
}

// cgroupLimit sets the limit of cg: the smallest of the limits in file on
// cg.Dir and its ancestors up to mount. parse returns a file's value and
// whether it means no limit.
func (p Proc) cgroupLimit(cg *Cgroup, mount, file string, parse func(string) (uint64, bool, error)) error {
	cg.Unlimited = true
	read := 0
	for dir := cg.Dir; ; dir = filepath.Dir(dir) {
		s, err := readCgroupFile(filepath.Join(dir, file))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// The root cgroup has no limit file.
		case err != nil:
			return err
		default:
			read++
			v, unlimited, err := parse(s)
			if err != nil {
				return fmt.Errorf("read %s: %w", filepath.Join(dir, file), err)
			}
			if !unlimited && (cg.Unlimited || v < cg.Limit) {
				cg.Limit, cg.LimitDir, cg.Unlimited = v, dir, false
			}
		}
		if dir == mount || len(dir) <= len(mount) {
			break
		}
	}
	if read == 0 {
		cg.Notes = append(cg.Notes, fmt.Sprintf("no %s in %s or its ancestors (the root cgroup has none): no limit", file, cg.Dir))
	}
	return nil
}

// cgroupUsage sets the usage of cg from file in cg.Dir.
func (p Proc) cgroupUsage(cg *Cgroup, file string) error {
	name := filepath.Join(cg.Dir, file)
	s, err := readCgroupFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		cg.Notes = append(cg.Notes, fmt.Sprintf("no %s in %s (the root cgroup has none): usage unknown", file, cg.Dir))
		return nil
	}
	if err != nil {
		return err
	}
	if cg.Usage, err = parseCgroupUint(s); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
}

// cgroupStat sets the stat of cg from memory.stat in cg.Dir.
func (p Proc) cgroupStat(cg *Cgroup) error {
	name := filepath.Join(cg.Dir, "memory.stat")
	data, err := readFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		cg.Notes = append(cg.Notes, fmt.Sprintf("no memory.stat in %s", cg.Dir))
		return nil
	}
	if err != nil {
		return err
	}
	if cg.Stat, err = ParseMemoryStat(bytes.NewReader(data)); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
}

// ParseMemoryStat parses the contents of a cgroup's memory.stat: one
// "key value" pair a line. memory.events (v2) and memory.oom_control (v1)
// have the same form and are read with it too.
func ParseMemoryStat(r io.Reader) (map[string]uint64, error) {
	stat := make(map[string]uint64)
	err := eachLine(r, 4<<10, func(n int, line []byte) error {
		line = trimSpace(line)
		if len(line) == 0 {
			return nil
		}
		key, rest := nextField(line)
		val, extra := nextField(rest)
		v, ok := parseDec(val)
		if !ok || len(extra) > 0 {
			return &SyntaxError{Line: n, Msg: fmt.Sprintf("want \"key value\", got %q", line)}
		}
		stat[string(key)] = v
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("parse memory.stat: %w", err)
	}
	return stat, nil
}

// readCgroupFile reads a one-value cgroupfs file, blanks trimmed.
func readCgroupFile(name string) (string, error) {
	data, err := readFile(name)
	if err != nil {
		return "", err
	}
	return string(trimSpace(bytes.TrimRight(data, "\n"))), nil
}

// parseCgroupUint parses a cgroupfs number of bytes.
func parseCgroupUint(s string) (uint64, error) {
	v, ok := parseDec([]byte(s))
	if !ok {
		return 0, fmt.Errorf("%q is not a number of bytes", s)
	}
	return v, nil
}

// isDir reports whether name is a directory.
func isDir(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && fi.IsDir()
}

// exists reports whether name exists.
func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// WorkingSet returns the cgroup's working set, in bytes: its usage less
// the page cache on the inactive file list (memory.stat's
// total_inactive_file in v1, which counts descendants as the usage does,
// else inactive_file: v2's, or v1's on kernels without the totals), 0
// when that cache exceeds the usage. It is the
// figure the kubelet and cAdvisor report as a container's memory and
// evict on: inactive file pages are the first the kernel reclaims when the
// cgroup reaches its limit, so the working set is what is left pressing
// against it. Without those keys in Stat it is the whole usage.
func (c *Cgroup) WorkingSet() uint64 {
	for _, key := range [...]string{"total_inactive_file", "inactive_file"} {
		if inactive, ok := c.Stat[key]; ok {
			if inactive >= c.Usage {
				return 0
			}
			return c.Usage - inactive
		}
	}
	return c.Usage
}

// ReadOOMKills reads how many processes of cgroup cg the OOM killer has
// killed, from the oom_kill line of memory.events on cgroup v2 (which
// counts the cgroup's descendants too) or of memory.oom_control on v1
// (Linux 4.13 and later). cg is what Proc.Cgroup returned: its Dir is
// already under the Proc's Root. The error matches fs.ErrNotExist when the
// cgroup has no such counter (the v2 root cgroup, an older kernel).
func ReadOOMKills(cg Cgroup) (uint64, error) {
	file := "memory.events"
	if cg.Version == 1 {
		file = "memory.oom_control"
	}
	name := filepath.Join(cg.Dir, file)
	data, err := readFile(name)
	if err != nil {
		return 0, err
	}
	events, err := ParseMemoryStat(bytes.NewReader(data))
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	n, ok := events["oom_kill"]
	if !ok {
		return 0, fmt.Errorf("read %s: no oom_kill counter: %w", name, fs.ErrNotExist)
	}
	return n, nil
}
