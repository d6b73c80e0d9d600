package kube

import (
	"context"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
)

// TestMain checks that Run leaves no informer goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeClient is a Client over client-go's fake clientset.
type fakeClient struct {
	cs *fake.Clientset
}

func (f fakeClient) ListPods(ctx context.Context, ns string, o metav1.ListOptions) (*corev1.PodList, error) {
	return f.cs.CoreV1().Pods(ns).List(ctx, o)
}

func (f fakeClient) WatchPods(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
	return f.cs.CoreV1().Pods(ns).Watch(ctx, o)
}

// IsWatchListSemanticsUnSupported says, as the fake clientset does, that
// the fake cannot stream lists: the informers list, then watch.
func (f fakeClient) IsWatchListSemanticsUnSupported() bool { return true }
