//go:build linux

package watch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/cgrouptest"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/sysmem"
	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// TestTrigger_memoryOfARealCgroup runs the leaky example in a v1 memory
// cgroup of its own, limited to 256 MiB, with a second process in it that
// allocates on command, and watches the example with a memory trigger whose
// polling is too slow to matter (a minute): the kernel's notification must
// start the bundle within a second of the crossing. Then the allocating
// process grows past the limit and is killed by the OOM killer, and the
// bundle is marked as the one before the kill.
//
// It does so twice: the example as a local process, found by its port,
// and as a pod of this node that a kubernetes section discovered, whose
// container's cgroup the watcher reads by its directory (the DaemonSet
// form, where the pod's processes are not to be seen).
func TestTrigger_memoryOfARealCgroup(t *testing.T) {
	for _, form := range []string{"local process", "pod on this node"} {
		t.Run(form, func(t *testing.T) { testMemoryOfARealCgroup(t, form == "pod on this node") })
	}
}

func testMemoryOfARealCgroup(t *testing.T, pod bool) {
	const limit = 256 << 20
	dir := cgrouptest.MakeV1(t, limit)
	leaky := startExample(t, "leaky")
	cgrouptest.Move(t, dir, leaky.PID())
	hog := cgrouptest.StartAlloc(t, dir)

	cg, err := (sysmem.Proc{}).Cgroup(leaky.PID())
	if err != nil {
		t.Fatal(err)
	}
	base := cg.WorkingSet()
	// The threshold: 48 MiB above what the cgroup holds now, as a share
	// of the limit (rounded up to a whole percent).
	pct := int((base+48<<20)*100/limit) + 1

	var (
		mu     sync.Mutex
		events []Event
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev Event
		json.NewDecoder(r.Body).Decode(&ev)
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}))
	defer hook.Close()

	expr := "memory>=" + strconv.Itoa(pct) + "%"
	var cfg *config.Config
	if pod {
		cfg = podCgroupConfig(t, leaky.URL, expr, cg)
	} else {
		cfg, err = config.ForURLs([]string{leaky.URL}, config.Settings{
			Every: time.Hour, Window: time.Second, Timeout: 5 * time.Second, Poll: time.Minute,
			Triggers: []config.Trigger{{Expr: expr, Pos: "test"}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg.Webhook = &config.Webhook{URL: hook.URL}
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := New(Options{Config: cfg, Store: st, Version: "test", BundleWindow: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	// Let the watcher take its first sample and arm the notification.
	time.Sleep(time.Second)
	if err := hog.Alloc(64); err != nil {
		t.Fatalf("allocate in the cgroup: %v", err)
	}
	crossed := time.Now()

	bundle := testserver.WaitFor(t, 30*time.Second, "the trigger's bundle", func() (store.Entry, bool) {
		h, _ := st.History(store.Query{})
		if len(h.Bundles) > 0 {
			return h.Bundles[0], true
		}
		return store.Entry{}, false
	})
	if bundle.Trigger == nil || !strings.HasPrefix(bundle.Trigger.Expr, "memory>=") || bundle.Trigger.Value < float64(pct) {
		t.Errorf("bundle trigger %+v: want memory>=%d%% with the value that crossed it", bundle.Trigger, pct)
	}
	if d := bundle.Time.Sub(crossed); d > time.Second {
		t.Errorf("the trigger fired %s after the crossing with a 1-minute poll: the kernel's notification did not start it", d)
	}
	if bundle.CaptureSeconds <= 0 || bundle.CaptureSeconds > 20 {
		t.Errorf("capture_seconds = %v, want the measured time from crossing to bundle", bundle.CaptureSeconds)
	}
	t.Logf("crossing → trigger %s, → complete bundle %.1fs", bundle.Time.Sub(crossed).Round(time.Millisecond), bundle.CaptureSeconds)
	for _, f := range []string{"result.json.gz", "goroutines.txt", "smaps_rollup", "memory.stat", "compare.md"} {
		if _, err := os.Stat(filepath.Join(st.Dir(), bundle.Path, f)); err != nil {
			t.Errorf("bundle lacks %s: %v", f, err)
		}
	}

	// Past the limit: the kernel kills the biggest process of the cgroup,
	// the allocating one, and the watcher marks the bundle before it.
	if err := hog.Alloc(256); err == nil {
		t.Fatal("allocating past the cgroup's limit succeeded")
	}
	marked := testserver.WaitFor(t, 30*time.Second, "the bundle marked", func() (store.Entry, bool) {
		h, _ := st.History(store.Query{})
		for _, b := range h.Bundles {
			if b.BeforeOOM {
				return b, true
			}
		}
		return store.Entry{}, false
	})
	if marked.Path != bundle.Path {
		t.Errorf("marked %s as before the OOM kill, want the bundle %s", marked.Path, bundle.Path)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var sawBundle, sawKill bool
	for _, ev := range events {
		sawBundle = sawBundle || ev.Kind == "bundle" && ev.Path == bundle.Path && strings.Contains(ev.Text, "memory>=")
		sawKill = sawKill || ev.OOMKill
	}
	if !sawBundle || !sawKill {
		t.Errorf("webhook events %+v: want the bundle and the OOM kill", events)
	}
}

// podCgroupConfig is the config of a kubernetes group whose one pod
// serves at url, its container's cgroup cg, as a DaemonSet's watcher
// finds it under the node's cgroup root.
func podCgroupConfig(t *testing.T, url, expr string, cg sysmem.Cgroup) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "heapscope.yaml")
	yaml := "defaults: {every: 1h, window: 1s, timeout: 5s, poll: 1m, triggers: ['" + expr + "']}\n" +
		"groups:\n  - name: pods\n    kubernetes: {node: node-a, cgroup_root: /sys/fs/cgroup}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	feed := &podFeed{lists: make(chan []config.Pod, 1)}
	feed.lists <- []config.Pod{{URL: url,
		Labels: map[string]string{"namespace": "shop", "pod": "leaky-0", "container": "leaky", "node": "node-a"},
		Status: config.PodStatus{CgroupMount: cgrouptest.V1Memory, Cgroup: cg.Dir}}}
	cfg, err := config.Load(path, config.Options{Pods: feed})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
