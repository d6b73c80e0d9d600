package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// podFeed is a config.PodDiscovery whose lists of pods the test sends.
type podFeed struct {
	lists chan []config.Pod
}

func (p *podFeed) Check(*config.Kubernetes) error { return nil }

func (p *podFeed) Watch(ctx context.Context, _ *config.Kubernetes, fn func([]config.Pod)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ps := <-p.lists:
			fn(ps)
		}
	}
}

// hookEvents is a webhook that keeps the events posted to it.
type hookEvents struct {
	mu     sync.Mutex
	events []Event
}

func (h *hookEvents) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev Event
	json.NewDecoder(r.Body).Decode(&ev)
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
}

func (h *hookEvents) all() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.events...)
}

// TestRun_recordsAPodsOOMKilledRestart watches a pod (the optimized
// example, as the API server would list it) whose container restarts
// after an OOM kill, as its status says: the last capture before the kill
// is marked, and the webhook is told, while the target stays the same.
func TestRun_recordsAPodsOOMKilledRestart(t *testing.T) {
	svc := startExample(t, "optimized")
	hook := &hookEvents{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "heapscope.yaml")
	yaml := fmt.Sprintf("webhook: {url: %q}\ndefaults: {every: 1h, window: 1s, timeout: 30s}\ngroups:\n  - name: pods\n    kubernetes: {namespaces: [shop]}\n", srv.URL)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	feed := &podFeed{lists: make(chan []config.Pod, 1)}
	cfg, err := config.Load(path, config.Options{Pods: feed})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	pod := config.Pod{URL: svc.URL, MemoryLimit: 512 << 20,
		Labels: map[string]string{"namespace": "shop", "pod": "api-7d9f-x2", "container": "api", "owner_kind": "Deployment", "owner": "api"}}
	// A CronJob-style capture first, so that there is one before the kill.
	feed.lists <- []config.Pod{pod}
	once, err := New(Options{Config: cfg, Store: st, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := once.Once(t.Context()); err != nil {
		t.Fatalf("Once: %v", err)
	}
	h, err := st.History(store.Query{})
	if err != nil || len(h.Runs) != 1 {
		t.Fatalf("history %+v, %v: want the one capture", h, err)
	}
	captured := h.Runs[0]
	for k, v := range pod.Labels {
		if captured.Labels[k] != v {
			t.Errorf("stored labels %v: want the pod's %s=%s", captured.Labels, k, v)
		}
	}

	w, err := New(Options{Config: cfg, Store: st, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	feed.lists <- []config.Pod{pod}
	key := captured.Target
	testserver.WaitFor(t, time.Minute, "the pod watched", func() (bool, bool) { return true, len(w.watchedList()) == 1 })
	first := w.watchedList()[0]

	killed := pod
	killed.Labels = maps.Clone(pod.Labels)
	killed.Status = config.PodStatus{Restarts: 1, LastTermination: "OOMKilled", LastFinishedAt: time.Now().UTC()}
	feed.lists <- []config.Pod{killed}
	ev := testserver.WaitFor(t, time.Minute, "the pod's event", func() (Event, bool) {
		for _, ev := range hook.all() {
			if ev.Kind == "restart" {
				return ev, true
			}
		}
		return Event{}, false
	})
	if !ev.OOMKill || ev.Target != key || ev.Path != captured.Path {
		t.Errorf("event %+v: want an OOM kill of %s naming the capture %s", ev, key, captured.Path)
	}
	h, err = st.History(store.Query{})
	if err != nil || len(h.Runs) != 1 || !h.Runs[0].BeforeOOM {
		t.Errorf("history %+v, %v: want the capture marked as the one before the kill", h.Runs, err)
	}
	if now := w.watchedList(); len(now) != 1 || now[0] != first {
		t.Errorf("watched %v after the restart, want the same target, not a new one", now)
	}

	// A restart for another reason is told, and marks nothing.
	crashed := killed
	crashed.Status = config.PodStatus{Restarts: 2, LastTermination: "Error", LastFinishedAt: time.Now().UTC()}
	feed.lists <- []config.Pod{crashed}
	again := testserver.WaitFor(t, time.Minute, "the pod's event again", func() (Event, bool) {
		evs := hook.all()
		if n := len(evs); n > 1 && evs[n-1].Kind == "restart" {
			return evs[n-1], true
		}
		return Event{}, false
	})
	if again.OOMKill || again.Path != "" {
		t.Errorf("event %+v: want a restart without an OOM kill", again)
	}
	// Both are stored, for the pages and the health of the target.
	stored, err := st.Events(store.Query{Target: key})
	if err != nil || len(stored) != 2 || stored[0].Kind != store.EventRestart || stored[1].Kind != store.EventOOMKill {
		t.Errorf("stored events %+v, %v: want the OOM kill, then the restart", stored, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
