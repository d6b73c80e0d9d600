package sysmem

import (
	"path/filepath"
	"testing"
)

// TestProc_Cgroup_recorded reads a cgroup tree copied from a real hybrid
// host (cgroup v1 controllers, the unified hierarchy under
// /sys/fs/cgroup/unified with no memory controller), the process's cgroup
// renamed: memory is accounted by v1, with no limit set anywhere.
func TestProc_Cgroup_recorded(t *testing.T) {
	p := Proc{Root: filepath.Join("testdata", "cgroup", "hybrid-recorded")}
	cg, err := p.Cgroup(42)
	if err != nil {
		t.Fatal(err)
	}
	if cg.Version != 1 || cg.Path != "/sandbox/task-1" || !cg.Unlimited || cg.Limit != 0 {
		t.Errorf("cgroup %+v: want v1 /sandbox/task-1 without a limit", cg)
	}
	if cg.Usage != 970854400 {
		t.Errorf("usage %d, want the recorded 970854400", cg.Usage)
	}
	if cg.Stat["total_rss"] != 2330624 || len(cg.Stat) < 20 {
		t.Errorf("memory.stat total_rss %d of %d keys", cg.Stat["total_rss"], len(cg.Stat))
	}
	if len(cg.Notes) != 0 {
		t.Errorf("notes %q", cg.Notes)
	}
}
