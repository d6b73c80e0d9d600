package config

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// fakePods is a PodDiscovery whose lists the test gives: each section
// gets first, then whatever is sent on next. A selector with "((" is
// refused, as a real parser refuses it.
type fakePods struct {
	first    []Pod
	next     chan []Pod
	startErr error
	silent   bool // never gives a list
}

func (f *fakePods) Check(k *Kubernetes) error {
	if strings.Contains(k.Selector, "((") {
		return errors.New(`selector "app=((": unexpected "("`)
	}
	return nil
}

func (f *fakePods) Watch(ctx context.Context, k *Kubernetes, fn func([]Pod)) error {
	if f.startErr != nil {
		return f.startErr
	}
	if !f.silent {
		fn(f.first)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ps := <-f.next:
			fn(ps)
		}
	}
}

// testPod is a discovered pod of namespace shop at ip.
func testPod(name, ip string) Pod {
	return Pod{
		URL:    "http://" + ip + ":6060",
		Labels: map[string]string{"namespace": "shop", "pod": name, "container": "app", "owner_kind": "Deployment", "owner": "api"},
	}
}

func TestLoad_Kubernetes(t *testing.T) {
	t.Setenv("NODE_NAME", "node-7")
	yaml := `defaults:
  memory_limit: 1GiB
groups:
  - name: pods
    labels: {env: prod}
    pprof_path: /debug/pprof/
    kubernetes:
      namespaces: [shop, billing]
      selector: app in (api, worker)
      node: ${NODE_NAME}
      cgroup_root: /host/sys/fs/cgroup
`
	limited := testPod("api-1", "10.1.0.7")
	limited.MemoryLimit = 512 << 20
	limited.PprofPath = "/internal/pprof"
	limited.Status = PodStatus{Restarts: 2, LastTermination: "OOMKilled", CgroupMount: "/host/sys/fs/cgroup", Cgroup: "/host/sys/fs/cgroup/kubepods/podu/ctr"}
	pods := &fakePods{first: []Pod{limited, testPod("api-2", "10.1.0.8")}}
	c, err := parse([]byte(yaml), "heapscope.yaml", Options{Pods: pods})
	if err != nil {
		t.Fatal(err)
	}
	k := c.Groups[0].Kubernetes
	want := Kubernetes{Namespaces: []string{"shop", "billing"}, Selector: "app in (api, worker)", Node: "node-7",
		CgroupRoot: "/host/sys/fs/cgroup", Pos: "heapscope.yaml:8"}
	if k == nil || fmt.Sprint(*k) != fmt.Sprint(want) {
		t.Fatalf("kubernetes section %+v, want %+v", k, want)
	}
	ts, err := c.Targets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(ts); !slices.Equal(got, []string{"10.1.0.7:6060/internal/pprof/", "10.1.0.8:6060"}) {
		t.Fatalf("targets %v, want both pods, the first at its own pprof path", got)
	}
	first, second := ts[0], ts[1]
	if first.Settings.MemoryLimit != 512<<20 || second.Settings.MemoryLimit != 1<<30 {
		t.Errorf("memory limits %d, %d: want the pod spec's, else the group's", first.Settings.MemoryLimit, second.Settings.MemoryLimit)
	}
	wantLabels := map[string]string{"env": "prod", "namespace": "shop", "pod": "api-1", "container": "app",
		"owner_kind": "Deployment", "owner": "api", "group": "pods", "instance": "10.1.0.7:6060"}
	if fmt.Sprint(first.Labels) != fmt.Sprint(wantLabels) {
		t.Errorf("labels %v, want %v", first.Labels, wantLabels)
	}
	if first.Pod == nil || *first.Pod != limited.Status {
		t.Errorf("pod status %+v, want %+v", first.Pod, limited.Status)
	}
}

func TestLoad_KubernetesBad(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	head := "groups:\n  - name: pods\n    kubernetes:\n"
	tests := []struct {
		name, yaml, want string
		noPods           bool
	}{
		{"a list", "groups:\n  - name: pods\n    kubernetes: [default]\n",
			"heapscope.yaml:3: groups[0].kubernetes: want a mapping of namespaces, selector, node, cgroup_root and kubeconfig, not a list", false},
		{"misspelt key", head + "      namespace: [shop]\n",
			"heapscope.yaml:4: groups[0].kubernetes.namespace: unknown key (did you mean namespaces?)", false},
		{"bad namespace", head + "      namespaces: [Shop]\n",
			`heapscope.yaml:4: groups[0].kubernetes.namespaces[0]: namespace "Shop": want lower-case letters, digits and -, at most 63`, false},
		{"bad selector", head + "      selector: app=((\n",
			`heapscope.yaml:4: groups[0].kubernetes: selector "app=((": unexpected "("`, false},
		{"unset variable", head + "      node: $NODE_NAME\n",
			"heapscope.yaml:4: groups[0].kubernetes.node: $NODE_NAME is not set in the environment (a DaemonSet sets NODE_NAME from spec.nodeName)", false},
		{"relative cgroup root", head + "      cgroup_root: host/sys/fs/cgroup\n",
			`heapscope.yaml:4: groups[0].kubernetes.cgroup_root: "host/sys/fs/cgroup": want an absolute path, such as /host/sys/fs/cgroup`, false},
		{"no discovery", head + "      namespaces: [shop]\n",
			"heapscope.yaml:4: groups[0].kubernetes: pod discovery is not available here", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Pods: &fakePods{}}
			if tt.noPods {
				opts.Pods = nil
			}
			_, err := parse([]byte(tt.yaml), "heapscope.yaml", opts)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error\n  %v\nwant\n  %s", err, tt.want)
			}
		})
	}
}

// podConfig loads a config of one static target and a kubernetes group.
func podConfig(t *testing.T, pods *fakePods) *Config {
	t.Helper()
	yaml := "groups:\n  - name: static\n    static: [{targets: [127.0.0.1:6060]}]\n  - name: pods\n    kubernetes: {namespaces: [shop]}\n"
	c, err := parse([]byte(yaml), "heapscope.yaml", Options{Pods: pods})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWatch_FollowsPods(t *testing.T) {
	pods := &fakePods{first: []Pod{testPod("api-1", "10.1.0.7")}, next: make(chan []Pod)}
	c := podConfig(t, pods)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	lists := make(chan []Target, 10)
	done := make(chan error, 1)
	go func() { done <- c.Watch(ctx, func(ts []Target) { lists <- ts }) }()
	next := func() []Target {
		t.Helper()
		select {
		case ts := <-lists:
			return ts
		case <-time.After(5 * time.Second):
			t.Fatal("no list")
			return nil
		}
	}
	// The static target at once, the pods as their first list comes.
	if got := keys(next()); !slices.Equal(got, []string{"127.0.0.1:6060"}) {
		t.Fatalf("first list %v, want the static target", got)
	}
	if got := keys(next()); !slices.Equal(got, []string{"127.0.0.1:6060", "10.1.0.7:6060"}) {
		t.Fatalf("second list %v, want the pod too", got)
	}
	added := []Pod{testPod("api-1", "10.1.0.7"), testPod("api-2", "10.1.0.8")}
	pods.next <- added
	if got := keys(next()); !slices.Equal(got, []string{"127.0.0.1:6060", "10.1.0.7:6060", "10.1.0.8:6060"}) {
		t.Fatalf("after a pod came: %v", got)
	}
	pods.next <- slices.Clone(added) // the same pods: no call
	restarted := []Pod{testPod("api-1", "10.1.0.7"), testPod("api-2", "10.1.0.8")}
	restarted[1].Status = PodStatus{Restarts: 1, LastTermination: "OOMKilled"}
	pods.next <- restarted
	ts := next()
	if got := keys(ts); !slices.Equal(got, []string{"127.0.0.1:6060", "10.1.0.7:6060", "10.1.0.8:6060"}) || ts[2].Pod == nil || !ts[2].Pod.OOMKilled() {
		t.Fatalf("after a restart: %v (pod %+v), want the same targets, the status new", got, ts[2].Pod)
	}
	pods.next <- restarted[1:]
	if got := keys(next()); !slices.Equal(got, []string{"127.0.0.1:6060", "10.1.0.8:6060"}) {
		t.Fatalf("after a pod went: %v", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch = %v, want nil when its context ends", err)
	}
}

func TestWatch_PodDiscoveryThatCannotStart(t *testing.T) {
	c := podConfig(t, &fakePods{startErr: errors.New("not in a cluster")})
	err := c.Watch(t.Context(), func([]Target) {})
	want := "group pods: kubernetes (heapscope.yaml:5): not in a cluster"
	if err == nil || err.Error() != want {
		t.Errorf("Watch = %v, want %q", err, want)
	}
	if _, err := c.Targets(t.Context()); err == nil || err.Error() != want {
		t.Errorf("Targets = %v, want %q", err, want)
	}
}

func TestTargets_WaitsForTheFirstPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := podConfig(t, &fakePods{silent: true})
		start := time.Now()
		_, err := c.Targets(t.Context())
		want := "group pods: kubernetes (heapscope.yaml:5): no list of pods from the API server within 1m0s"
		if err == nil || err.Error() != want {
			t.Errorf("Targets = %v, want %q", err, want)
		}
		if waited := time.Since(start); waited != firstPodsTimeout {
			t.Errorf("waited %v, want %v", waited, firstPodsTimeout)
		}
	})
}

func TestExpandEnv(t *testing.T) {
	t.Setenv("NODE_NAME", "node-7")
	t.Setenv("ZONE", "b")
	t.Setenv("EMPTY", "")
	tests := []struct{ in, want, err string }{
		{"node-1", "node-1", ""},
		{"$NODE_NAME", "node-7", ""},
		{"${NODE_NAME}.zone-${ZONE}", "node-7.zone-b", ""},
		{"$EMPTY", "", "$EMPTY is not set"},
		{"$NODE_NAME-$UNSET_ONE", "", "$UNSET_ONE is not set"},
	}
	for _, tt := range tests {
		got, err := expandEnv(tt.in)
		if (err != nil) != (tt.err != "") || (err != nil && !strings.Contains(err.Error(), tt.err)) || got != tt.want {
			t.Errorf("expandEnv(%q) = %q, %v; want %q, error %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}
