package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Client lists and watches pods: all that discovery asks of the API
// server. NewClient's speaks to a real one; tests adapt client-go's fake
// clientset.
type Client interface {
	// ListPods lists the pods of a namespace ("" for all).
	ListPods(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error)
	// WatchPods watches them from opts.ResourceVersion on.
	WatchPods(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error)
}

// NewClient makes a client of the API server: from the kubeconfig file
// when one is given; else from the pod's service account when running
// in a cluster; else from $KUBECONFIG or ~/.kube/config.
//
// It knows pods alone (core/v1), rather than client-go's clientset of
// every API group, which would double heapscope's binary.
func NewClient(kubeconfig string) (Client, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	cfg.APIPath = "/api"
	cfg.GroupVersion = &corev1.SchemeGroupVersion
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	cfg.UserAgent = "heapscope"
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return restClient{c}, nil
}

// restConfig finds how to reach the API server (see NewClient).
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err == nil {
		return cfg, nil
	}
	if !errors.Is(err, rest.ErrNotInCluster) {
		return nil, fmt.Errorf("in-cluster config: %w", err)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, errors.New("not in a cluster (no service account) and no kubeconfig ($KUBECONFIG, ~/.kube/config): give the kubeconfig's path")
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

// restClient is a Client over the API server's REST API.
type restClient struct {
	c *rest.RESTClient
}

// watchTimeout bounds one watch request; the informer starts the next.
const watchTimeout = 10 * time.Minute

func (r restClient) ListPods(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error) {
	list := &corev1.PodList{}
	err := r.c.Get().Namespace(namespace).Resource("pods").
		VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(list)
	return list, err
}

func (r restClient) WatchPods(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	timeout := watchTimeout
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return r.c.Get().Namespace(namespace).Resource("pods").
		VersionedParams(&opts, metav1.ParameterCodec).Timeout(timeout).Watch(ctx)
}
