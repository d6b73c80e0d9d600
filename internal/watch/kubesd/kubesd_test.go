package kubesd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/heapscope/heapscope/internal/kube"
	"github.com/heapscope/heapscope/internal/kube/kubetest"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// pod is an opted-in running pod of namespace shop with container app,
// its container ID ctr-<name>.
func pod(name string, edits ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: name, UID: types.UID("uid-" + name),
			Annotations: map[string]string{kube.AnnotationScrape: "true", kube.AnnotationPort: "6060"},
		},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.0.7", QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://ctr-" + name}}},
	}
	for _, e := range edits {
		e(p)
	}
	return p
}

// cgroupTree makes a v2 host cgroup root with the kubelet's cgroupfs
// layout for the containers of the named pods.
func cgroupTree(t *testing.T, names ...string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		addCgroup(t, root, n)
	}
	return root
}

func addCgroup(t *testing.T, root, name string) string {
	t.Helper()
	dir := filepath.Join(root, "kubepods", "burstable", "poduid-"+name, "ctr-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// watchPods runs Discovery.Watch over client until the test ends and
// returns its lists and warnings.
func watchPods(t *testing.T, client kubetest.Client, k *config.Kubernetes) (<-chan []config.Pod, <-chan error) {
	t.Helper()
	lists := make(chan []config.Pod, 10)
	warns := make(chan error, 10)
	d := &Discovery{Client: client, Warn: func(err error) { warns <- err }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Watch(ctx, k, func(ps []config.Pod) { lists <- ps }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch = %v, want nil when its context ends", err)
		}
	})
	return lists, warns
}

func next[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing came")
		var zero T
		return zero
	}
}

func TestWatch_podsWithTheirCgroups(t *testing.T) {
	root := cgroupTree(t, "api")
	restarted := func(p *corev1.Pod) {
		s := &p.Status.ContainerStatuses[0]
		s.RestartCount = 3
		s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137,
			FinishedAt: metav1.NewTime(time.Date(2026, 11, 2, 3, 4, 5, 0, time.UTC))}
	}
	client := kubetest.New(pod("api", restarted), pod("worker", func(p *corev1.Pod) { p.Status.PodIP = "10.1.0.8" }))
	lists, warns := watchPods(t, client, &config.Kubernetes{Namespaces: []string{"shop"}, CgroupRoot: root})

	ps := next(t, lists)
	if len(ps) != 2 {
		t.Fatalf("pods %+v, want api and worker", ps)
	}
	api, worker := ps[0], ps[1]
	want := config.PodStatus{Restarts: 3, LastTermination: "OOMKilled", LastFinishedAt: time.Date(2026, 11, 2, 3, 4, 5, 0, time.UTC),
		CgroupMount: root, Cgroup: filepath.Join(root, "kubepods", "burstable", "poduid-api", "ctr-api")}
	if api.URL != "http://10.1.0.7:6060" || api.MemoryLimit != 256<<20 || api.Labels["pod"] != "api" || api.Status != want {
		t.Errorf("api = %+v, want its URL, limit, labels and status %+v", api, want)
	}
	if worker.Status.Cgroup != "" {
		t.Errorf("worker's cgroup %q, want none: it is not under the root", worker.Status.Cgroup)
	}
	if err := next(t, warns); !strings.Contains(err.Error(), "pod shop/worker") || !strings.Contains(err.Error(), "cgroup not found") {
		t.Errorf("warning %v, want worker's cgroup not found", err)
	}

	// The cgroup appears; the next change of the pod finds it, and
	// nothing more is said.
	addCgroup(t, root, "worker")
	w := pod("worker", func(p *corev1.Pod) { p.Status.PodIP = "10.1.0.8"; p.Status.ContainerStatuses[0].RestartCount = 1 })
	if _, err := client.Clientset.CoreV1().Pods("shop").Update(t.Context(), w, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ps = next(t, lists)
	if len(ps) != 2 || ps[1].Status.Cgroup != filepath.Join(root, "kubepods", "burstable", "poduid-worker", "ctr-worker") {
		t.Errorf("after the cgroup appeared: %+v", ps)
	}
	select {
	case err := <-warns:
		t.Errorf("warned again: %v", err)
	default:
	}
}

func TestWatch_v1MemoryController(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "memory", "kubepods", "burstable", "poduid-api", "ctr-api")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lists, _ := watchPods(t, kubetest.New(pod("api")), &config.Kubernetes{CgroupRoot: root})
	ps := next(t, lists)
	if len(ps) != 1 || ps[0].Status.CgroupMount != filepath.Join(root, "memory") || ps[0].Status.Cgroup != dir {
		t.Errorf("pods %+v: want the cgroup under the v1 memory controller's mount", ps)
	}
}

func TestCheck(t *testing.T) {
	d := &Discovery{}
	for _, tt := range []struct {
		selector string
		ok       bool
	}{{"", true}, {"app=api,tier in (web, api),!canary", true}, {"app=((", false}, {"a b", false}} {
		err := d.Check(&config.Kubernetes{Selector: tt.selector})
		if (err == nil) != tt.ok {
			t.Errorf("Check(selector %q) = %v, want ok=%v", tt.selector, err, tt.ok)
		}
	}
}
