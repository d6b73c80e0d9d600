// Package kubetest adapts client-go's fake clientset to kube.Client, for
// tests of pod discovery without a cluster.
package kubetest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
)

// Client is a kube.Client over a fake clientset: what the test creates,
// updates and deletes through Clientset, discovery sees.
type Client struct {
	Clientset *fake.Clientset
}

// New returns a Client over a fake clientset holding objs.
func New(objs ...*corev1.Pod) Client {
	cs := fake.NewClientset()
	for _, p := range objs {
		cs.Tracker().Add(p)
	}
	return Client{cs}
}

// ListPods lists the fake's pods.
func (c Client) ListPods(ctx context.Context, ns string, o metav1.ListOptions) (*corev1.PodList, error) {
	return c.Clientset.CoreV1().Pods(ns).List(ctx, o)
}

// WatchPods watches the fake's pods.
func (c Client) WatchPods(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
	return c.Clientset.CoreV1().Pods(ns).Watch(ctx, o)
}

// IsWatchListSemanticsUnSupported tells client-go's informers, as the fake
// clientset does, that the fake cannot stream lists: they list, then
// watch.
func (c Client) IsWatchListSemanticsUnSupported() bool { return true }
