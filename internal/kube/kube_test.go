package kube

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/heapscope/heapscope/internal/kube/kubetest"
)

// wait bounds every wait for a call of fn or Warn.
const wait = 5 * time.Second

// discovered is a Run over a fake API server, its calls of fn and Warn
// gathered on channels.
type discovered struct {
	client *fake.Clientset
	calls  chan []Target
	warns  chan error
}

// startRun runs Run over a fake API server holding objs until the test
// ends, and checks then that it returned nil.
func startRun(t *testing.T, opts Options, objs ...runtime.Object) *discovered {
	t.Helper()
	d := &discovered{
		client: fake.NewClientset(objs...),
		calls:  make(chan []Target, 100),
		warns:  make(chan error, 100),
	}
	if opts.Client == nil {
		opts.Client = kubetest.Client{Clientset: d.client}
	}
	opts.Warn = func(err error) { d.warns <- err }
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts, func(ts []Target) { d.calls <- ts }) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v, want nil when its context ends", err)
			}
		case <-time.After(wait):
			t.Error("Run did not return when its context ended")
		}
	})
	return d
}

// next waits for fn's next call.
func (d *discovered) next(t *testing.T) []Target {
	t.Helper()
	select {
	case ts := <-d.calls:
		return ts
	case <-time.After(wait):
		t.Fatal("no call of fn")
		return nil
	}
}

// pods gives the namespace/name of each target.
func pods(ts []Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Namespace+"/"+t.Pod)
	}
	return out
}

// expect waits for fn's next call and checks its pods.
func (d *discovered) expect(t *testing.T, want ...string) []Target {
	t.Helper()
	ts := d.next(t)
	if got := pods(ts); !slices.Equal(got, want) {
		t.Fatalf("fn got pods %q, want %q", got, want)
	}
	return ts
}

func (d *discovered) update(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if _, err := d.client.CoreV1().Pods(p.Namespace).Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (d *discovered) create(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if _, err := d.client.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestRun_FollowsPods(t *testing.T) {
	noIP := func(p *corev1.Pod) { p.Status.PodIP = ""; p.Status.Phase = corev1.PodPending }
	d := startRun(t, Options{},
		testPod("shop", "api"),
		testPod("shop", "plain", annotate(AnnotationScrape, "false")),
		testPod("shop", "late", noIP),
	)
	d.expect(t, "shop/api")

	// A change that touches no target makes no call: the next call is the
	// one for the pod that gets its IP.
	d.update(t, testPod("shop", "plain", annotate(AnnotationScrape, "false"), label("tier", "web")))
	d.update(t, testPod("shop", "late"))
	ts := d.expect(t, "shop/api", "shop/late")
	if ts[1].URL != "http://10.1.0.7:6060" {
		t.Errorf("late pod's URL = %q", ts[1].URL)
	}

	d.create(t, testPod("shop", "new"))
	d.expect(t, "shop/api", "shop/late", "shop/new")

	optOut := testPod("shop", "api")
	delete(optOut.Annotations, AnnotationScrape)
	d.update(t, optOut)
	d.expect(t, "shop/late", "shop/new")

	if err := d.client.CoreV1().Pods("shop").Delete(t.Context(), "late", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d.expect(t, "shop/new")
	if err := d.client.CoreV1().Pods("shop").Delete(t.Context(), "new", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d.expect(t)
}

func TestRun_EmptyClusterCallsOnceSynced(t *testing.T) {
	d := startRun(t, Options{})
	if ts := d.next(t); ts != nil {
		t.Errorf("first call = %v, want no targets", ts)
	}
}

func TestRun_OOMKilledRestart(t *testing.T) {
	d := startRun(t, Options{}, testPod("shop", "api"))
	if ts := d.expect(t, "shop/api"); ts[0].Restarts != 0 || ts[0].LastTermination != nil {
		t.Fatalf("fresh pod: Restarts %d, LastTermination %+v", ts[0].Restarts, ts[0].LastTermination)
	}
	finished := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	d.update(t, testPod("shop", "api", func(p *corev1.Pod) {
		s := &p.Status.ContainerStatuses[0]
		s.RestartCount = 1
		s.ContainerID = "containerd://def456"
		s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
			Reason: "OOMKilled", ExitCode: 137, FinishedAt: metav1.NewTime(finished)}
	}))
	ts := d.expect(t, "shop/api")
	got := ts[0]
	if got.Restarts != 1 || !got.LastTermination.OOMKilled() || got.LastTermination.ExitCode != 137 ||
		!got.LastTermination.FinishedAt.Equal(finished) || got.ContainerID != "def456" {
		t.Errorf("after the OOM kill: Restarts %d, ContainerID %q, LastTermination %+v", got.Restarts, got.ContainerID, got.LastTermination)
	}
}

func TestRun_Restrictions(t *testing.T) {
	onNode := func(n string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
	tests := []struct {
		name    string
		opts    Options
		initial []string // the first call's pods
		added   []*corev1.Pod
		after   []string // once added are created
		list    string   // the server-side restriction the informers ask for
	}{
		{
			name:    "namespaces",
			opts:    Options{Namespaces: []string{"shop", "billing", "shop"}},
			initial: []string{"billing/api", "shop/api"},
			added:   []*corev1.Pod{testPod("infra", "new"), testPod("shop", "new")},
			after:   []string{"billing/api", "shop/api", "shop/new"},
		},
		{
			name:    "label selector",
			opts:    Options{Selector: "team in (pay),app!=db"},
			initial: []string{"billing/api"},
			added:   []*corev1.Pod{testPod("shop", "new", label("team", "pay")), testPod("shop", "db", label("team", "pay"))},
			after:   []string{"billing/api", "shop/new"},
			list:    "labels:app!=db,team in (pay)",
		},
		{
			name:    "node",
			opts:    Options{Node: "node-b"},
			initial: []string{"shop/api"},
			added:   []*corev1.Pod{testPod("infra", "new", onNode("node-b")), testPod("shop", "new")},
			after:   []string{"infra/new", "shop/api"},
			list:    "fields:spec.nodeName=node-b",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := startRun(t, tt.opts,
				testPod("shop", "api", onNode("node-b")),
				testPod("billing", "api", label("team", "pay")),
				testPod("infra", "api"),
			)
			d.expect(t, tt.initial...)
			for _, p := range tt.added {
				d.create(t, p)
			}
			for {
				ts := d.next(t) // additions may come in one call or several
				if slices.Equal(pods(ts), tt.after) {
					break
				}
				if len(ts) > len(tt.after) {
					t.Fatalf("fn got pods %q, want %q", pods(ts), tt.after)
				}
			}
			if tt.list != "" {
				checkListRestriction(t, d.client.Actions(), tt.list)
			}
		})
	}
}

// checkListRestriction checks that every list and watch of pods asked the
// server for the restriction (labels:… or fields:…).
func checkListRestriction(t *testing.T, actions []k8stesting.Action, want string) {
	t.Helper()
	n := 0
	for _, a := range actions {
		var r k8stesting.ListRestrictions
		switch a := a.(type) {
		case k8stesting.ListAction:
			r = a.GetListRestrictions()
		case k8stesting.WatchAction:
			w := a.GetWatchRestrictions()
			r = k8stesting.ListRestrictions{Labels: w.Labels, Fields: w.Fields}
		default:
			continue
		}
		n++
		kind, sel, _ := strings.Cut(want, ":")
		got := r.Labels.String()
		if kind == "fields" {
			got = r.Fields.String()
		}
		if got != sel {
			t.Errorf("%s %s asked for %s %q, want %q", a.GetVerb(), a.GetResource().Resource, kind, got, sel)
		}
	}
	if n == 0 {
		t.Error("no list or watch of pods")
	}
}

func TestRun_BadAnnotationWarnedOnce(t *testing.T) {
	bad := func(edits ...func(*corev1.Pod)) *corev1.Pod {
		return testPod("shop", "api", append([]func(*corev1.Pod){annotate(AnnotationPort, "http")}, edits...)...)
	}
	d := startRun(t, Options{}, bad(), testPod("shop", "ok"))
	d.expect(t, "shop/ok")
	// A change to the bad pod says nothing new; the fix then makes it a
	// target, and by that call every warning is in (Warn comes before fn).
	d.update(t, bad(label("v", "2")))
	d.update(t, testPod("shop", "api"))
	d.expect(t, "shop/api", "shop/ok")
	close(d.warns)
	var warns []error
	for err := range d.warns {
		warns = append(warns, err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0].Error(), `shop/api: annotation heapscope.io/port="http"`) {
		t.Errorf("warnings %v, want one of the port of shop/api", warns)
	}
}

func TestRun_InvalidOptions(t *testing.T) {
	client := fake.NewClientset()
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no client", Options{}, "no Kubernetes client"},
		{"bad selector", Options{Client: kubetest.Client{Clientset: client}, Selector: "app=(("}, `label selector "app=(("`},
		{"negative resync", Options{Client: kubetest.Client{Clientset: client}, Resync: -time.Second}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			err := Run(t.Context(), tt.opts, func([]Target) { called = true })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run = %v, want an error with %q", err, tt.want)
			}
			if called {
				t.Error("fn called for invalid options")
			}
		})
	}
}

func TestRun_ListErrorsWarned(t *testing.T) {
	d := &discovered{client: fake.NewClientset(), warns: make(chan error, 100)}
	d.client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden: no RBAC")
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Client: kubetest.Client{Clientset: d.client}, Warn: func(err error) { d.warns <- err }},
			func([]Target) { t.Error("fn called without a synced list") })
	}()
	select {
	case err := <-d.warns:
		if !strings.Contains(err.Error(), "forbidden: no RBAC") {
			t.Errorf("warning %v, want the list's error", err)
		}
	case <-time.After(wait):
		t.Error("the list's error was not warned")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}
