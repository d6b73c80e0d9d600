//go:build linux

package trigger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/cgrouptest"
	"github.com/heapscope/heapscope/internal/sysmem"
)

// The tests of this file create cgroups, which takes root: CI runs them as
// root; elsewhere they skip.

// notifyWithin is how soon after a crossing a notification must come.
const notifyWithin = time.Second

// startAllocChild starts cgrouptest's allocating child in cgroup dir with
// the runtime's limit that the samples read.
func startAllocChild(t *testing.T, dir string) *cgrouptest.AllocChild {
	t.Helper()
	return cgrouptest.StartAlloc(t, dir, "GOMEMLIMIT=200MiB", "GOGC=off")
}

// TestWatchMemory_v1 runs a child in a limited v1 memory cgroup that
// allocates step by step past a threshold, and checks that the kernel's
// notification comes within a second of the step that crossed it, and
// that Local.Sample reads what the cgroup's files say.
func TestWatchMemory_v1(t *testing.T) {
	const limit = 256 << 20
	dir := cgrouptest.MakeV1(t, limit)
	child := startAllocChild(t, dir)

	cg, err := sysmem.Proc{}.Cgroup(child.PID())
	if err != nil {
		t.Fatal(err)
	}
	if cg.Version != 1 || cg.Dir != dir || cg.Limit != limit {
		t.Fatalf("child's cgroup: v%d %s limit %d, want v1 %s limit %d", cg.Version, cg.Dir, cg.Limit, dir, limit)
	}
	// The kernel checks thresholds every 128 pages charged on a CPU: the
	// threshold lies in the middle of a step, as it lies on the way of a
	// service that keeps allocating, so that the check comes after the
	// crossing.
	base := cgrouptest.ReadUint(t, dir, "memory.usage_in_bytes")
	threshold := base + 36<<20
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := WatchMemory(ctx, cg, threshold)
	if err != nil {
		t.Fatal(err)
	}
	crossed := false
	for step := 1; step <= 10 && !crossed; step++ {
		began := time.Now()
		if err := child.Alloc(8); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		done := time.Now()
		usage := cgrouptest.ReadUint(t, dir, "memory.usage_in_bytes")
		if usage < threshold {
			select {
			case <-ch:
				t.Fatalf("step %d: notified at usage %d, below the threshold %d", step, usage, threshold)
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		crossed = true
		select {
		case <-ch:
			got := time.Now()
			t.Logf("usage %d crossed %d in step %d (%v long): notified %v after the step began, %v after it ended",
				usage, threshold, step, done.Sub(began), got.Sub(began), got.Sub(done))
		case <-time.After(notifyWithin):
			t.Fatalf("step %d took usage from below %d to %d: no notification %v after", step, threshold, usage, notifyWithin)
		}
	}
	if !crossed {
		t.Fatalf("80 MiB allocated and the usage never reached %d", threshold)
	}

	// A threshold the usage is above already is reported at once.
	above, err := WatchMemory(ctx, cg, base)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-above:
	default:
		t.Error("no value at once for a threshold below the usage")
	}

	t.Run("sample", func(t *testing.T) { checkSample(t, child.PID(), dir, limit) })

	cancel()
	for _, c := range []<-chan struct{}{ch, above} {
		select {
		case _, open := <-c:
			if open {
				// A value may be waiting; the close follows.
				<-c
			}
		case <-time.After(time.Second):
			t.Fatal("the channel stayed open after the context ended")
		}
	}
}

// checkSample compares Local.Sample of the child pid with the files of its
// v1 cgroup dir, read before and after: the child is idle, but its
// runtime may still move a page, so a sample between two reads that
// differ is taken again.
func checkSample(t *testing.T, pid int, dir string, limit uint64) {
	for try := 0; ; try++ {
		usage := cgrouptest.ReadUint(t, dir, "memory.usage_in_bytes")
		stat := readStat(t, dir)
		st, err := sysmem.Proc{}.Status(pid)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Local{PID: pid}.Sample(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		st2, err := sysmem.Proc{}.Status(pid)
		if err != nil {
			t.Fatal(err)
		}
		if usage != cgrouptest.ReadUint(t, dir, "memory.usage_in_bytes") || st.VmRSS != st2.VmRSS || !equalStat(stat, readStat(t, dir)) {
			if try == 10 {
				t.Fatal("the cgroup's figures never held still across a sample")
			}
			continue
		}
		t.Logf("sample: %+v", s)
		want := Sample{
			Time:  s.Time,
			Known: KnownPID | KnownStart | KnownRSS | KnownMemory | KnownMemoryLimit | KnownCgroupUsage | KnownOOMKills | KnownGoMemLimit,
			PID:   pid, Start: s.Start, RSS: st.VmRSS,
			Memory: usage - stat["total_inactive_file"], MemoryLimit: limit, CgroupUsage: usage, Cgroup: dir,
			GoMemLimit: 200 << 20,
		}
		if !sameSample(s, want) {
			t.Errorf("Sample\n got %+v\nwant %+v", s, want)
		}
		started, err := sysmem.Proc{}.Started(pid)
		if err != nil || s.Start.Sub(started).Abs() > time.Second || time.Since(s.Start) > time.Minute {
			t.Errorf("Start = %v, want the child's start %v (%v)", s.Start, started, err)
		}
		return
	}
}

func readStat(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		t.Fatal(err)
	}
	stat, err := sysmem.ParseMemoryStat(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return stat
}

func equalStat(a, b map[string]uint64) bool {
	return a["total_inactive_file"] == b["total_inactive_file"] && a["total_rss"] == b["total_rss"] && a["total_cache"] == b["total_cache"]
}

// TestWatchOOM_v1 lets a child allocate past its v1 cgroup's limit: the OOM
// killer kills it, WatchOOM says so, the counter rises, and the next
// process in the cgroup is seen as a restart after an OOM kill.
func TestWatchOOM_v1(t *testing.T) {
	const limit = 64 << 20
	dir := cgrouptest.MakeV1(t, limit)
	child := startAllocChild(t, dir)
	cg, err := sysmem.Proc{}.Cgroup(child.PID())
	if err != nil {
		t.Fatal(err)
	}
	before, err := Local{PID: child.PID()}.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !before.Has(KnownOOMKills) || before.OOMKills != 0 {
		t.Fatalf("OOM kills before: %d (known %v), want 0", before.OOMKills, before.Has(KnownOOMKills))
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	oom, err := WatchOOM(ctx, cg)
	if err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	if err := child.Alloc(256); err == nil {
		t.Fatalf("the child allocated 256 MiB under a %d-byte limit", limit)
	}
	err = child.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed by SIGKILL", err)
	}
	select {
	case <-oom:
		t.Logf("OOM notified %v after the allocation began", time.Since(began))
	case <-time.After(notifyWithin):
		t.Fatalf("no OOM notification %v after the child was killed", notifyWithin)
	}
	kills, err := sysmem.ReadOOMKills(cg)
	if err != nil || kills != 1 {
		t.Errorf("ReadOOMKills = %d, %v, want 1", kills, err)
	}

	// The service comes back in the same cgroup.
	next := startAllocChild(t, dir)
	after, err := Local{PID: next.PID()}.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := DetectRestart(before, after)
	t.Logf("restart: %+v", r)
	if !r.Restarted || r.OOMKills != 1 || !strings.Contains(r.Reason, "1 OOM kill in "+dir) {
		t.Errorf("DetectRestart = %+v, want a restart after 1 OOM kill", r)
	}
	cancel()
	for range oom {
	}
}

// TestWatch_v1Removed checks that removing a watched cgroup closes the
// channels: the kernel signals the eventfd of a removed cgroup.
func TestWatch_v1Removed(t *testing.T) {
	dir := cgrouptest.MakeV1(t, 64<<20)
	cg := sysmem.Cgroup{Version: 1, Dir: dir}
	mem, err := WatchMemory(t.Context(), cg, 32<<20)
	if err != nil {
		t.Fatal(err)
	}
	oom, err := WatchOOM(t.Context(), cg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []<-chan struct{}{mem, oom} {
		deadline := time.After(time.Second)
	drain:
		for {
			select {
			case _, open := <-c:
				if !open {
					break drain
				}
			case <-deadline:
				t.Fatal("the channel stayed open after the cgroup was removed")
			}
		}
	}
}

// TestWatch_v2Real creates a cgroup on this host's v2 hierarchy. Without
// the memory controller there (a hybrid host, memory accounted by v1),
// the watchers must say they are not supported and why, and a process
// moved into it must still be read through its v1 memory cgroup. With
// the controller, a child crossing a threshold must be notified.
func TestWatch_v2Real(t *testing.T) {
	cgrouptest.NeedRoot(t)
	dir := cgrouptest.Make(t, cgrouptest.UnifiedMount(t))
	controllers, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		t.Fatal(err)
	}
	cg := sysmem.Cgroup{Version: 2, Dir: dir}
	if strings.Contains(" "+string(controllers)+" ", " memory ") {
		t.Logf("memory controller in %s: watching a child", dir)
		cgrouptest.Write(t, dir, "memory.max", strconv.Itoa(256<<20))
		child := startAllocChild(t, dir)
		threshold := cgrouptest.ReadUint(t, dir, "memory.current") + 16<<20
		ch, err := WatchMemory(t.Context(), cg, threshold)
		if err != nil {
			t.Fatal(err)
		}
		if err := child.Alloc(32); err != nil {
			t.Fatal(err)
		}
		done := time.Now()
		select {
		case <-ch:
			t.Logf("notified %v after the allocation ended", time.Since(done))
		case <-time.After(notifyWithin):
			t.Fatalf("usage %d crossed %d: no notification %v after", cgrouptest.ReadUint(t, dir, "memory.current"), threshold, notifyWithin)
		}
		return
	}

	t.Logf("%s has controllers %q", dir, strings.TrimSpace(string(controllers)))
	for name, watch := range map[string]func() (<-chan struct{}, error){
		"WatchMemory": func() (<-chan struct{}, error) { return WatchMemory(t.Context(), cg, 1<<20) },
		"WatchOOM":    func() (<-chan struct{}, error) { return WatchOOM(t.Context(), cg) },
	} {
		_, err := watch()
		t.Logf("%s: %v", name, err)
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "the memory controller is not enabled in this cgroup v2") ||
			!strings.Contains(err.Error(), dir) {
			t.Errorf("%s error = %v, want ErrNotSupported naming %s and the missing memory controller", name, err, dir)
		}
	}

	// A process in that cgroup is accounted by its v1 memory cgroup,
	// when the host has one.
	child := startAllocChild(t, dir)
	s, err := Local{PID: child.PID()}.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", child.PID()))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("/proc/%d/cgroup:\n%s", child.PID(), data)
	if !strings.Contains(string(data), "0::/"+filepath.Base(dir)+"\n") {
		t.Errorf("the child is not in %s", dir)
	}
	if _, err := os.Stat(cgrouptest.V1Memory); err == nil && !strings.HasPrefix(s.Cgroup, cgrouptest.V1Memory+"/") {
		t.Errorf("Sample read cgroup %q, want the child's v1 memory cgroup under %s", s.Cgroup, cgrouptest.V1Memory)
	}
}
