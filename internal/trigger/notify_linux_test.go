//go:build linux

package trigger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/sysmem"
)

// fakeV2 is a directory laid out as a cgroup v2 with the memory
// controller, whose files the test writes: WatchMemory's poll and inotify
// work on it as on cgroupfs.
func fakeV2(t *testing.T, current, events string) string {
	t.Helper()
	return writeTree(t, map[string]string{"memory.current": current, "memory.events": events})
}

// write replaces a file's contents, as the kernel updates cgroupfs.
func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// expect waits up to a second for a value on ch, or for ch to close when
// closed is set.
func expect(t *testing.T, ch <-chan struct{}, closed bool, why string) {
	t.Helper()
	select {
	case _, open := <-ch:
		if open == closed {
			t.Fatalf("%s: channel open %v, want %v", why, open, !closed)
		}
	case <-time.After(time.Second):
		t.Fatalf("%s: nothing within a second", why)
	}
}

// expectNothing checks that ch stays quiet for a few polls.
func expectNothing(t *testing.T, ch <-chan struct{}, why string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s: a value, want none", why)
	case <-time.After(3 * pollInterval):
	}
}

const events0 = "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n"

func TestWatchMemory_v2(t *testing.T) {
	dir := fakeV2(t, "1000\n", events0)
	ch, err := WatchMemory(t.Context(), sysmem.Cgroup{Version: 2, Dir: dir}, 5000)
	if err != nil {
		t.Fatal(err)
	}
	expectNothing(t, ch, "usage below the threshold")
	write(t, dir, "memory.current", "4999\n")
	expectNothing(t, ch, "usage still below")
	write(t, dir, "memory.current", "5000\n")
	expect(t, ch, false, "usage at the threshold")
	write(t, dir, "memory.current", "7000\n")
	expectNothing(t, ch, "usage above, no new crossing")
	// The usage holds still: only inotify can tell.
	write(t, dir, "memory.events", strings.Replace(events0, "max 0", "max 3", 1))
	expect(t, ch, false, "memory.events changed")
	write(t, dir, "memory.current", "100\n")
	expect(t, ch, false, "usage back below")
	if err := os.Remove(filepath.Join(dir, "memory.current")); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, true, "cgroup removed")
}

func TestWatchMemory_v2AlreadyAbove(t *testing.T) {
	dir := fakeV2(t, "9000\n", events0)
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := WatchMemory(ctx, sysmem.Cgroup{Version: 2, Dir: dir}, 5000)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("no value at once for a usage above the threshold")
	}
	cancel()
	expect(t, ch, true, "context ended")
}

func TestWatchOOM_v2(t *testing.T) {
	dir := fakeV2(t, "1000\n", strings.Replace(events0, "oom_kill 0", "oom_kill 2", 1))
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := WatchOOM(ctx, sysmem.Cgroup{Version: 2, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	expectNothing(t, ch, "no kill yet")
	write(t, dir, "memory.events", strings.Replace(strings.Replace(events0, "oom_kill 0", "oom_kill 2", 1), "high 0", "high 5", 1))
	expectNothing(t, ch, "the count did not rise")
	write(t, dir, "memory.events", strings.Replace(strings.Replace(events0, "oom_kill 0", "oom_kill 3", 1), "oom 0", "oom 3", 1))
	expect(t, ch, false, "one more OOM kill")
	cancel()
	expect(t, ch, true, "context ended")
}

func TestWatch_notSupported(t *testing.T) {
	tests := []struct {
		name  string
		cg    func(t *testing.T) sysmem.Cgroup
		watch func(context.Context, sysmem.Cgroup) error
		want  string
	}{
		{
			name: "v2 without the memory controller",
			cg: func(t *testing.T) sysmem.Cgroup {
				return sysmem.Cgroup{Version: 2, Dir: writeTree(t, map[string]string{"cgroup.controllers": "cpu pids\n"})}
			},
			watch: func(ctx context.Context, cg sysmem.Cgroup) error { _, err := WatchMemory(ctx, cg, 1); return err },
			want:  `no memory.current or memory.events: the memory controller is not enabled in this cgroup v2 (cgroup.controllers: "cpu pids"): not supported`,
		},
		{
			name: "v2 OOM without the memory controller",
			cg: func(t *testing.T) sysmem.Cgroup {
				return sysmem.Cgroup{Version: 2, Dir: writeTree(t, map[string]string{"cgroup.controllers": "\n"})}
			},
			watch: func(ctx context.Context, cg sysmem.Cgroup) error { _, err := WatchOOM(ctx, cg); return err },
			want:  `the memory controller is not enabled in this cgroup v2 (cgroup.controllers: ""): not supported`,
		},
		{
			name: "v1 without event_control",
			cg: func(t *testing.T) sysmem.Cgroup {
				return sysmem.Cgroup{Version: 1, Dir: writeTree(t, map[string]string{"memory.usage_in_bytes": "1\n"})}
			},
			watch: func(ctx context.Context, cg sysmem.Cgroup) error { _, err := WatchMemory(ctx, cg, 1); return err },
			want:  "no cgroup.event_control (a cgroup v1 memory controller without event notification): not supported",
		},
		{
			name:  "no cgroup",
			cg:    func(t *testing.T) sysmem.Cgroup { return sysmem.Cgroup{} },
			watch: func(ctx context.Context, cg sysmem.Cgroup) error { _, err := WatchMemory(ctx, cg, 1); return err },
			want:  "unknown cgroup version 0: not supported",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cg := tt.cg(t)
			err := tt.watch(t.Context(), cg)
			if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), cg.Dir) {
				t.Errorf("error = %v, want ErrNotSupported naming %s and saying %q", err, cg.Dir, tt.want)
			}
		})
	}
}
