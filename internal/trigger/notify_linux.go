//go:build linux

package trigger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/heapscope/heapscope/internal/sysmem"
)

// WatchMemory asks the kernel to say when the usage of cgroup cg crosses
// threshold bytes, in either direction, and returns a channel that
// receives a value each time it has (several crossings before the value
// is taken make one). When the usage is already at or above the threshold
// the channel holds a value at once. The channel is closed when ctx ends
// or the cgroup is removed.
//
// A value is a prompt to sample, not a verdict: the usage counts page
// cache, which the trigger's memory does not, and once the usage is above
// the threshold no further crossing is reported while the working set
// rises (see NotifyThreshold): keep polling meanwhile.
//
// On cgroup v1 the kernel's memory thresholds notify an eventfd
// registered in cgroup.event_control on memory.usage_in_bytes. The kernel
// checks them every 128 pages charged or uncharged on a CPU: a crossing is
// reported once the cgroup has charged at most that much more (512 KiB
// with 4 KiB pages), at once for a service that keeps allocating, which
// is the one that matters; one that stops right past the threshold is
// left to the caller's poll. Cgroup v2 has no usage threshold:
// memory.current is read every 100ms, and memory.events is watched through inotify (it
// changes when the cgroup reaches memory.high or memory.max, or goes out
// of memory), so a changed memory.events sends a value too. A cgroup v2
// without the memory controller has neither file: the error then wraps
// ErrNotSupported and says so.
func WatchMemory(ctx context.Context, cg sysmem.Cgroup, threshold uint64) (<-chan struct{}, error) {
	switch cg.Version {
	case 1:
		above := func() (bool, error) {
			usage, err := readUint(filepath.Join(cg.Dir, "memory.usage_in_bytes"))
			return usage >= threshold, err
		}
		return watchEventfd(ctx, cg.Dir, "memory.usage_in_bytes", strconv.FormatUint(threshold, 10), above)
	case 2:
		return watchV2Memory(ctx, cg.Dir, threshold)
	}
	return nil, fmt.Errorf("watch memory of cgroup %s: unknown cgroup version %d: %w", cg.Dir, cg.Version, ErrNotSupported)
}

// WatchOOM returns a channel that receives a value when the OOM killer
// acts in cgroup cg: on cgroup v1 an eventfd registered in
// cgroup.event_control on memory.oom_control, which the kernel signals
// when the cgroup runs out of memory (at once if it is out of memory now);
// on cgroup v2 when the oom_kill count of memory.events rises, watched
// through inotify. The channel is closed when ctx ends or the cgroup is
// removed. The count itself is Sample.OOMKills, which DetectRestart
// compares: this only says when to look.
func WatchOOM(ctx context.Context, cg sysmem.Cgroup) (<-chan struct{}, error) {
	switch cg.Version {
	case 1:
		return watchEventfd(ctx, cg.Dir, "memory.oom_control", "", nil)
	case 2:
		return watchV2OOM(ctx, cg.Dir)
	}
	return nil, fmt.Errorf("watch OOM kills of cgroup %s: unknown cgroup version %d: %w", cg.Dir, cg.Version, ErrNotSupported)
}

// watchEventfd registers an eventfd for file of the v1 cgroup dir, with
// args, in its cgroup.event_control, and sends a value on the channel it
// returns each time the kernel signals it. now, if not nil, says whether
// to send one at once.
func watchEventfd(ctx context.Context, dir, file, args string, now func() (bool, error)) (<-chan struct{}, error) {
	what := fmt.Sprintf("watch %s of cgroup %s", file, dir)
	control := filepath.Join(dir, "cgroup.event_control")
	if _, err := os.Stat(control); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no cgroup.event_control (a cgroup v1 memory controller without event notification): %w", what, ErrNotSupported)
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("%s: eventfd: %w", what, err)
	}
	ev := os.NewFile(uintptr(efd), "eventfd")
	if err := register(control, filepath.Join(dir, file), efd, args); err != nil {
		ev.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	ch := make(chan struct{}, 1)
	if now != nil {
		above, err := now()
		if err != nil {
			ev.Close()
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if above {
			ch <- struct{}{}
		}
	}
	go func() {
		defer close(ch)
		stop := context.AfterFunc(ctx, func() { ev.Close() })
		defer func() {
			if stop() {
				ev.Close()
			}
		}()
		var buf [8]byte
		for {
			if _, err := ev.Read(buf[:]); err != nil {
				return
			}
			// The kernel signals the eventfd when the cgroup is removed,
			// too.
			gone := !exists(control)
			send(ch)
			if gone {
				return
			}
		}
	}()
	return ch, nil
}

// register writes "<eventfd> <fd of file> <args>" to control, the
// cgroup.event_control of file's cgroup.
func register(control, file string, efd int, args string) error {
	cfd, err := unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", file, err)
	}
	// The kernel takes what it needs from the file at registration.
	defer unix.Close(cfd)
	line := strconv.Itoa(efd) + " " + strconv.Itoa(cfd)
	if args != "" {
		line += " " + args
	}
	f, err := os.OpenFile(control, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("register %q in %s: %w", line, control, err)
	}
	return nil
}

// watchV2Memory reads memory.current of the v2 cgroup dir every
// pollInterval and watches its memory.events, sending a value when the
// usage crosses threshold or memory.events changes.
func watchV2Memory(ctx context.Context, dir string, threshold uint64) (<-chan struct{}, error) {
	what := "watch memory of cgroup " + dir
	current := filepath.Join(dir, "memory.current")
	usage, err := readUint(current)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, v2Unsupported(dir, err))
	}
	in, err := inotifyModify(filepath.Join(dir, "memory.events"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, v2Unsupported(dir, err))
	}
	if err := in.SetReadDeadline(time.Time{}); err != nil {
		in.Close()
		return nil, fmt.Errorf("%s: inotify without deadlines: %w", what, err)
	}
	ch := make(chan struct{}, 1)
	above := usage >= threshold
	if above {
		ch <- struct{}{}
	}
	go func() {
		defer close(ch)
		stop := context.AfterFunc(ctx, func() { in.Close() })
		defer func() {
			if stop() {
				in.Close()
			}
		}()
		buf := make([]byte, 4096)
		for {
			in.SetReadDeadline(time.Now().Add(pollInterval))
			_, err := in.Read(buf)
			switch {
			case err == nil:
				send(ch) // memory.events changed
			case !errors.Is(err, os.ErrDeadlineExceeded):
				return
			}
			usage, err := readUint(current)
			switch {
			case err == nil:
			case !exists(current):
				return // the cgroup is gone
			default:
				continue // not a number: read it again at the next poll
			}
			if now := usage >= threshold; now != above {
				above = now
				send(ch)
			}
		}
	}()
	return ch, nil
}

// watchV2OOM watches memory.events of the v2 cgroup dir and sends a value
// when its oom_kill count rises.
func watchV2OOM(ctx context.Context, dir string) (<-chan struct{}, error) {
	what := "watch OOM kills of cgroup " + dir
	cg := sysmem.Cgroup{Version: 2, Dir: dir}
	kills, err := sysmem.ReadOOMKills(cg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, v2Unsupported(dir, err))
	}
	events := filepath.Join(dir, "memory.events")
	in, err := inotifyModify(events)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, v2Unsupported(dir, err))
	}
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		stop := context.AfterFunc(ctx, func() { in.Close() })
		defer func() {
			if stop() {
				in.Close()
			}
		}()
		buf := make([]byte, 4096)
		for {
			if _, err := in.Read(buf); err != nil {
				return
			}
			n, err := sysmem.ReadOOMKills(cg)
			switch {
			case err == nil:
			case !exists(events):
				return // the cgroup is gone
			default:
				continue // unreadable: read it again at the next change
			}
			if n > kills {
				send(ch)
			}
			kills = n
		}
	}()
	return ch, nil
}

// inotifyModify returns an inotify instance watching name for
// modifications, as a pollable file.
func inotifyModify(name string) (*os.File, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, name, unix.IN_MODIFY); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("inotify %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), "inotify"), nil
}

// v2Unsupported makes err, met reading a memory file of the v2 cgroup dir,
// say that the memory controller is missing when it is.
func v2Unsupported(dir string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	controllers := "unreadable"
	if data, rerr := os.ReadFile(filepath.Join(dir, "cgroup.controllers")); rerr == nil {
		controllers = strconv.Quote(strings.TrimSpace(string(data)))
	}
	return fmt.Errorf("no memory.current or memory.events: the memory controller is not enabled in this cgroup v2 (cgroup.controllers: %s): %w", controllers, ErrNotSupported)
}

// readUint reads a cgroupfs file holding one number.
func readUint(name string) (uint64, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	return v, nil
}

// send puts a value on ch unless one is waiting already.
func send(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// exists reports whether name exists.
func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
