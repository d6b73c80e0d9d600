package kube

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The annotations a pod carries to be profiled.
const (
	// AnnotationScrape opts a pod in when its value is "true".
	AnnotationScrape = "heapscope.io/scrape"
	// AnnotationPort names the port that serves pprof (a number; required).
	AnnotationPort = "heapscope.io/port"
	// AnnotationPath is the pprof path on that port; when absent the
	// watcher's default applies (/debug/pprof/ unless configured).
	AnnotationPath = "heapscope.io/path"
	// AnnotationContainer names the container a target stands for (its
	// memory limit, its restarts); by default the container that declares
	// the port, else the first.
	AnnotationContainer = "heapscope.io/container"
)

// templateHashLabel is the label a Deployment's ReplicaSet adds to its pods,
// whose value ends the ReplicaSet's name.
const templateHashLabel = "pod-template-hash"

// Target is one pod to profile: an opted-in, running pod with an IP.
type Target struct {
	// URL is the pprof server's base URL, http://<pod IP>:<port>.
	URL string
	// PprofPath is the pprof path under URL, from AnnotationPath with a
	// leading slash; empty when the pod does not say.
	PprofPath string
	// Labels are namespace, pod, container, node, owner_kind and owner;
	// a label whose value is empty (a pod without a controller) is absent.
	Labels map[string]string
	// UID is the pod's UID, which a recreated pod of the same name changes.
	UID string
	// Namespace, Pod and Container name the pod and the chosen container.
	Namespace, Pod, Container string
	// Node is the node the pod runs on.
	Node string
	// MemoryLimit is the container's memory limit from the pod spec in
	// bytes, 0 when it has none.
	MemoryLimit int64
	// ContainerID is the container's runtime ID without the runtime's
	// prefix (containerd://…), empty before the container has started.
	ContainerID string
	// QOSClass is the pod's QoS class: Guaranteed, Burstable or BestEffort.
	QOSClass string
	// Restarts is the container's restart count.
	Restarts int32
	// LastTermination is how the container's previous run ended, nil when
	// it has not restarted. A watcher that sees Restarts grow reads here
	// whether the kernel killed it (Reason "OOMKilled").
	LastTermination *Termination
}

// Termination is how a container's run ended, from its status's
// lastState.terminated.
type Termination struct {
	// Reason is the kubelet's word for it: OOMKilled, Error, Completed, …
	Reason string
	// ExitCode is the container's exit code (137 for a SIGKILL).
	ExitCode int32
	// FinishedAt is when the run ended.
	FinishedAt time.Time
}

// OOMKilled reports whether the run ended in the kernel's OOM killer.
func (t *Termination) OOMKilled() bool { return t != nil && t.Reason == "OOMKilled" }

// podTarget makes the target of a pod. It returns ok=false for a pod that
// is not one (not opted in, not running, no IP yet), and an error for an
// opted-in pod whose annotations are wrong.
func podTarget(pod *corev1.Pod) (t Target, ok bool, err error) {
	if pod.Annotations[AnnotationScrape] != "true" {
		return Target{}, false, nil
	}
	port, err := annotatedPort(pod)
	if err != nil {
		return Target{}, false, err
	}
	c, err := chooseContainer(pod, port)
	if err != nil {
		return Target{}, false, err
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return Target{}, false, nil
	}
	path := pod.Annotations[AnnotationPath]
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	t = Target{
		URL:       "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)),
		PprofPath: path,
		UID:       string(pod.UID),
		Namespace: pod.Namespace,
		Pod:       pod.Name,
		Container: c.Name,
		Node:      pod.Spec.NodeName,
		QOSClass:  string(pod.Status.QOSClass),
	}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		t.MemoryLimit = q.Value()
	}
	for i := range pod.Status.ContainerStatuses {
		s := &pod.Status.ContainerStatuses[i]
		if s.Name != c.Name {
			continue
		}
		t.ContainerID = stripRuntime(s.ContainerID)
		t.Restarts = s.RestartCount
		if term := s.LastTerminationState.Terminated; term != nil {
			t.LastTermination = &Termination{
				Reason:     term.Reason,
				ExitCode:   term.ExitCode,
				FinishedAt: term.FinishedAt.UTC(),
			}
		}
	}
	ownerKind, owner := podOwner(pod)
	t.Labels = map[string]string{}
	for k, v := range map[string]string{
		"namespace": t.Namespace, "pod": t.Pod, "container": t.Container,
		"node": t.Node, "owner_kind": ownerKind, "owner": owner,
	} {
		if v != "" {
			t.Labels[k] = v
		}
	}
	return t, true, nil
}

// annotatedPort reads AnnotationPort.
func annotatedPort(pod *corev1.Pod) (int, error) {
	s, ok := pod.Annotations[AnnotationPort]
	if !ok {
		return 0, fmt.Errorf("pod %s/%s: annotation %s is missing: it names the pprof port", pod.Namespace, pod.Name, AnnotationPort)
	}
	port, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("pod %s/%s: annotation %s=%q: want a port number from 1 to 65535", pod.Namespace, pod.Name, AnnotationPort, s)
	}
	return port, nil
}

// chooseContainer picks the container a target stands for: the one
// AnnotationContainer names, else the one that declares port, else the first.
func chooseContainer(pod *corev1.Pod, port int) (*corev1.Container, error) {
	cs := pod.Spec.Containers
	if name, ok := pod.Annotations[AnnotationContainer]; ok {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i], nil
			}
		}
		return nil, fmt.Errorf("pod %s/%s: annotation %s=%q: the pod has no such container", pod.Namespace, pod.Name, AnnotationContainer, name)
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("pod %s/%s: no containers", pod.Namespace, pod.Name)
	}
	for i := range cs {
		for _, p := range cs[i].Ports {
			if int(p.ContainerPort) == port {
				return &cs[i], nil
			}
		}
	}
	return &cs[0], nil
}

// podOwner returns the kind and name of the pod's controller, a
// Deployment's ReplicaSet given as the Deployment. The Deployment's name is
// the ReplicaSet's less the pod-template-hash suffix, so no ReplicaSet is
// read (discovery needs only pods).
func podOwner(pod *corev1.Pod) (kind, name string) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return "", ""
	}
	if ref.Kind == "ReplicaSet" {
		if hash := pod.Labels[templateHashLabel]; hash != "" {
			if d, ok := strings.CutSuffix(ref.Name, "-"+hash); ok && d != "" {
				return "Deployment", d
			}
		}
	}
	return ref.Kind, ref.Name
}

// stripRuntime drops the runtime's scheme from a status's container ID:
// containerd://abc → abc.
func stripRuntime(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}
