package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heapscope/heapscope/internal/kube"
	"github.com/heapscope/heapscope/internal/kube/kubetest"
	"github.com/heapscope/heapscope/internal/store"
)

// TestWatch_oncePodsOfAKubeconfigsCluster runs watch --once as the
// CronJob does, but with a kubernetes section: the pods come from an API
// server reached through a kubeconfig, and the one that opts in (the
// leaky example, at a pod IP of 127.0.0.1) is captured with its pod's
// labels.
func TestWatch_oncePodsOfAKubeconfigsCluster(t *testing.T) {
	svc, err := startExample(t.Context(), "leaky")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	u, err := url.Parse(svc.URL)
	if err != nil {
		t.Fatal(err)
	}
	optedIn := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "leaky-7d9f5-x2x", UID: "u1",
			Labels:          map[string]string{"app": "leaky", "pod-template-hash": "7d9f5"},
			Annotations:     map[string]string{kube.AnnotationScrape: "true", kube.AnnotationPort: u.Port()},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "leaky-7d9f5", Controller: ptr(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "leaky",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1"},
	}
	other := optedIn.DeepCopy()
	other.Name, other.UID, other.Annotations = "db-0", "u2", nil
	api := kubetest.NewAPIServer(t, optedIn, other)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "heapscope.yaml")
	yaml := "defaults: {window: 1s}\ngroups:\n  - name: pods\n    kubernetes:\n      namespaces: [shop]\n      selector: app=leaky\n      kubeconfig: " + api.Kubeconfig(t) + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "store")
	got := heapscope(t, "watch", "--config", cfg, "--data", data, "--once")
	if got.code != exitOK {
		t.Fatalf("watch --once: exit %d: %s", got.code, got.stderr)
	}
	st, err := store.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := st.History(store.Query{})
	if err != nil || len(h.Runs) != 1 {
		t.Fatalf("history %+v, %v: want one run, of the pod that opts in", h.Runs, err)
	}
	want := map[string]string{"namespace": "shop", "pod": "leaky-7d9f5-x2x", "container": "leaky", "node": "node-a",
		"owner_kind": "Deployment", "owner": "leaky", "group": "pods"}
	for k, v := range want {
		if h.Runs[0].Labels[k] != v {
			t.Errorf("run labels %v: want %s=%s", h.Runs[0].Labels, k, v)
		}
	}
}

func TestWatch_kubernetesWithoutACluster(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "heapscope.yaml")
	missing := filepath.Join(dir, "no-kubeconfig")
	os.WriteFile(cfg, []byte("groups:\n  - name: pods\n    kubernetes: {kubeconfig: "+missing+"}\n"), 0o600)
	for _, args := range [][]string{
		{"watch", "--config", cfg, "--data", filepath.Join(dir, "a"), "--once"},
		{"watch", "--config", cfg, "--data", filepath.Join(dir, "b")},
	} {
		got := heapscope(t, args...)
		msg := strings.TrimSpace(got.stderr)
		if got.code == exitOK || strings.Contains(msg, "\n") || !strings.Contains(msg, "group pods: kubernetes (") || !strings.Contains(msg, "heapscope.yaml:3)") ||
			!strings.Contains(msg, "kubeconfig "+missing) {
			t.Errorf("%v: exit %d, stderr %q; want a failure naming the section and the kubeconfig", args, got.code, got.stderr)
		}
	}
}

func ptr[T any](v T) *T { return &v }
