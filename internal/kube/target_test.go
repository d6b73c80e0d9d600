package kube

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// testPod makes an opted-in, running pod with an IP on node-a whose one
// container, app, serves pprof on 6060; each edit changes it.
func testPod(ns, name string, edits ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   ns,
			Name:        name,
			UID:         types.UID("uid-" + ns + "-" + name),
			Labels:      map[string]string{"app": name},
			Annotations: map[string]string{AnnotationScrape: "true", AnnotationPort: "6060"},
		},
		Spec: corev1.PodSpec{
			NodeName:   "node-a",
			Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{ContainerPort: 6060}}}},
		},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			PodIP:             "10.1.0.7",
			QOSClass:          corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://abc123"}},
		},
	}
	for _, e := range edits {
		e(p)
	}
	return p
}

func annotate(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations[k] = v }
}

func controlledBy(kind, name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: kind, Name: name, Controller: &yes})
	}
}

func label(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels[k] = v }
}

func TestPodTarget(t *testing.T) {
	finished := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sidecarFirst := func(p *corev1.Pod) {
		p.Spec.Containers = append([]corev1.Container{{Name: "proxy", Ports: []corev1.ContainerPort{{ContainerPort: 15001}}}}, p.Spec.Containers...)
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "proxy", ContainerID: "cri-o://proxy1", RestartCount: 4})
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want func(*Target) // edits the default target
		skip bool          // not a target, without a problem
		err  string        // not a target, with this problem
	}{
		{name: "defaults", pod: testPod("shop", "api")},
		{name: "custom path", pod: testPod("shop", "api", annotate(AnnotationPath, "/internal/pprof/")),
			want: func(t *Target) { t.PprofPath = "/internal/pprof/" }},
		{name: "path without its slash", pod: testPod("shop", "api", annotate(AnnotationPath, "pp/")),
			want: func(t *Target) { t.PprofPath = "/pp/" }},
		{name: "ipv6", pod: testPod("shop", "api", func(p *corev1.Pod) { p.Status.PodIP = "fd00::7" }),
			want: func(t *Target) { t.URL = "http://[fd00::7]:6060" }},
		{name: "memory limit", pod: testPod("shop", "api", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
		}), want: func(t *Target) { t.MemoryLimit = 512 << 20 }},
		{name: "container that declares the port", pod: testPod("shop", "api", sidecarFirst)},
		{name: "first container when none declares the port", pod: testPod("shop", "api", sidecarFirst, annotate(AnnotationPort, "7070")),
			want: func(t *Target) {
				t.URL = "http://10.1.0.7:7070"
				t.Container, t.Labels["container"] = "proxy", "proxy"
				t.ContainerID, t.Restarts = "proxy1", 4
			}},
		{name: "container named by annotation", pod: testPod("shop", "api", sidecarFirst, annotate(AnnotationContainer, "proxy")),
			want: func(t *Target) {
				t.Container, t.Labels["container"] = "proxy", "proxy"
				t.ContainerID, t.Restarts = "proxy1", 4
			}},
		{name: "last termination", pod: testPod("shop", "api", func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].RestartCount = 2
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
				Reason: "OOMKilled", ExitCode: 137, FinishedAt: metav1.NewTime(finished)}
		}), want: func(t *Target) {
			t.Restarts = 2
			t.LastTermination = &Termination{Reason: "OOMKilled", ExitCode: 137, FinishedAt: finished}
		}},
		{name: "not started yet", pod: testPod("shop", "api", func(p *corev1.Pod) { p.Status.ContainerStatuses = nil }),
			want: func(t *Target) { t.ContainerID = "" }},
		{name: "deployment", pod: testPod("shop", "api", controlledBy("ReplicaSet", "api-7d9f8c6b5"), label(templateHashLabel, "7d9f8c6b5")),
			want: func(t *Target) { t.Labels["owner_kind"], t.Labels["owner"] = "Deployment", "api" }},
		{name: "replicaset of no deployment", pod: testPod("shop", "api", controlledBy("ReplicaSet", "api-rs")),
			want: func(t *Target) { t.Labels["owner_kind"], t.Labels["owner"] = "ReplicaSet", "api-rs" }},
		{name: "replicaset whose name lacks the hash", pod: testPod("shop", "api", controlledBy("ReplicaSet", "api-rs"), label(templateHashLabel, "7d9f8c6b5")),
			want: func(t *Target) { t.Labels["owner_kind"], t.Labels["owner"] = "ReplicaSet", "api-rs" }},
		{name: "statefulset", pod: testPod("shop", "db-0", controlledBy("StatefulSet", "db")),
			want: func(t *Target) {
				t.Pod, t.Labels["pod"], t.UID = "db-0", "db-0", "uid-shop-db-0"
				t.Labels["owner_kind"], t.Labels["owner"] = "StatefulSet", "db"
			}},
		{name: "daemonset", pod: testPod("shop", "api", controlledBy("DaemonSet", "agent")),
			want: func(t *Target) { t.Labels["owner_kind"], t.Labels["owner"] = "DaemonSet", "agent" }},
		{name: "owner that is not the controller", pod: testPod("shop", "api", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "j"}}
		})},
		{name: "not opted in", pod: testPod("shop", "api", annotate(AnnotationScrape, "false")), skip: true},
		{name: "pending", pod: testPod("shop", "api", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), skip: true},
		{name: "no IP", pod: testPod("shop", "api", func(p *corev1.Pod) { p.Status.PodIP = "" }), skip: true},
		{name: "no port", pod: testPod("shop", "api", func(p *corev1.Pod) { delete(p.Annotations, AnnotationPort) }),
			err: "annotation heapscope.io/port is missing"},
		{name: "named port", pod: testPod("shop", "api", annotate(AnnotationPort, "http")),
			err: `heapscope.io/port="http": want a port number`},
		{name: "port out of range", pod: testPod("shop", "api", annotate(AnnotationPort, "70000")),
			err: `heapscope.io/port="70000"`},
		{name: "no such container", pod: testPod("shop", "api", annotate(AnnotationContainer, "nope")),
			err: `heapscope.io/container="nope": the pod has no such container`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := Target{
				URL: "http://10.1.0.7:6060", PprofPath: "",
				UID: "uid-shop-api", Namespace: "shop", Pod: "api", Container: "app", Node: "node-a",
				ContainerID: "abc123", QOSClass: "Burstable",
				Labels: map[string]string{"namespace": "shop", "pod": "api", "container": "app", "node": "node-a"},
			}
			if tt.want != nil {
				tt.want(&want)
			}
			got, ok, err := podTarget(tt.pod)
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) || ok {
					t.Fatalf("podTarget = %v, %v; want the error %q", ok, err, tt.err)
				}
			case err != nil:
				t.Fatalf("podTarget: %v", err)
			case tt.skip:
				if ok {
					t.Fatalf("podTarget = %+v; want no target", got)
				}
			case !ok:
				t.Fatal("podTarget made no target")
			case !reflect.DeepEqual(got, want):
				t.Errorf("podTarget =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestTermination_OOMKilled(t *testing.T) {
	var none *Termination
	if none.OOMKilled() || (&Termination{Reason: "Error"}).OOMKilled() || !(&Termination{Reason: "OOMKilled"}).OOMKilled() {
		t.Error("OOMKilled is true of the OOMKilled reason alone")
	}
}
