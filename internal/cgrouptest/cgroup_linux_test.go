//go:build linux

package cgrouptest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestMakeV1 checks that the cgroup has its limit, that the child lands in
// it and is charged there for what it allocates, and that the cgroup is
// gone after the test.
func TestMakeV1(t *testing.T) {
	const limit = 128 << 20
	var dir string
	t.Run("cgroup", func(t *testing.T) {
		dir = MakeV1(t, limit)
		if got := ReadUint(t, dir, "memory.limit_in_bytes"); got != limit {
			t.Errorf("memory.limit_in_bytes = %d, want %d", got, limit)
		}
		child := StartAlloc(t, dir)
		if pids := PIDs(dir); !slices.Equal(pids, []int{child.PID()}) {
			t.Errorf("PIDs = %v, want the child's [%d]", pids, child.PID())
		}
		before := ReadUint(t, dir, "memory.usage_in_bytes")
		if err := child.Alloc(16); err != nil {
			t.Fatal(err)
		}
		if after := ReadUint(t, dir, "memory.usage_in_bytes"); after < before+16<<20 {
			t.Errorf("usage %d after 16 MiB allocated from %d, want at least %d", after, before, before+16<<20)
		}
		if err := child.Wait(); err != nil {
			t.Errorf("Wait = %v, want the child's clean exit when its stdin closes", err)
		}
	})
	if dir == "" {
		return
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cgroup %s after its test: %v, want it removed", dir, err)
	}
}

// TestMake checks that a cgroup of the unified hierarchy takes a process
// and that its processes are killed when the test ends.
func TestMake(t *testing.T) {
	NeedRoot(t)
	mount := UnifiedMount(t)
	var child *AllocChild
	var dir string
	t.Run("cgroup", func(t *testing.T) {
		dir = Make(t, mount)
		if filepath.Dir(dir) != mount {
			t.Errorf("Make = %s, want a cgroup under %s", dir, mount)
		}
		child = StartAlloc(t, dir)
		if pids := PIDs(dir); !slices.Equal(pids, []int{child.PID()}) {
			t.Errorf("PIDs = %v, want the child's [%d]", pids, child.PID())
		}
	})
	if child == nil {
		return
	}
	if err := child.Wait(); err == nil {
		t.Error("the child exited cleanly, want it killed when its test ended")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cgroup %s after its test: %v, want it removed", dir, err)
	}
}
