// Package kube discovers the pods to profile in a Kubernetes cluster.
//
// A pod opts in with annotations (AnnotationScrape, AnnotationPort, and
// optionally AnnotationPath and AnnotationContainer); Run keeps the list of
// opted-in running pods through client-go pod informers (a watch, not a
// poll) and hands each new list to a function. ContainerCgroup finds a
// container's cgroup under the host's cgroup root, for a watcher that runs
// as a DaemonSet beside the pods it profiles.
//
// Discovery reads pods only (list and watch), so its RBAC role needs
// nothing else. client-go lives in this package alone, so that the rest of
// heapscope does not link it unless it discovers pods; NewClient's client
// knows pods alone, not client-go's clientset of every API group.
package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Options say which pods Run watches.
type Options struct {
	// Client reaches the API server (NewClient's).
	Client Client
	// Namespaces are the namespaces to watch, one informer each; empty
	// watches all namespaces with one informer.
	Namespaces []string
	// Selector is a label selector (kubectl's syntax) that pods must match;
	// empty matches every pod.
	Selector string
	// Node, when set, restricts discovery to the pods on that node: a
	// watcher running as a DaemonSet profiles its own node's pods.
	Node string
	// Resync is how often the informers replay their whole cache; 0 never.
	// Targets follow watch events without it.
	Resync time.Duration
	// Warn, when set, is told of problems that do not stop discovery: an
	// opted-in pod with a bad annotation (once per pod and problem) and
	// failed lists and watches of the API server (which the informers
	// retry). Run calls it from one goroutine, never while fn runs.
	Warn func(error)
}

// Run watches the pods that opts select and calls fn with the whole list of
// targets, sorted by namespace and pod: once when the informers have
// synced, then whenever the list changes (bursts of pod events make one
// call). fn is called from Run's goroutine, one call at a time, and must not
// keep the slice past its return unless it copies it. Run returns nil when
// ctx ends, and an error at once for invalid options.
func Run(ctx context.Context, opts Options, fn func([]Target)) error {
	if opts.Client == nil {
		return errors.New("discover pods: no Kubernetes client")
	}
	sel, err := labels.Parse(opts.Selector)
	if err != nil {
		return fmt.Errorf("discover pods: label selector %q: %w", opts.Selector, err)
	}
	if opts.Resync < 0 {
		return fmt.Errorf("discover pods: resync period %v is negative", opts.Resync)
	}
	d := &discovery{
		opts:    opts,
		sel:     sel,
		changed: make(chan struct{}, 1),
		errs:    make(chan error, 8),
		warned:  map[warning]bool{},
	}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer wg.Wait() // after cancel: the informers stop with ctx
	defer cancel()
	var synced []cache.InformerSynced
	for _, ns := range namespaces(opts.Namespaces) {
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				d.tweak(&o)
				return opts.Client.ListPods(ctx, ns, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				d.tweak(&o)
				return opts.Client.WatchPods(ctx, ns, o)
			},
		}
		// A client that says it cannot stream lists (client-go's fake)
		// is listed, then watched; others are asked for a streaming list
		// first, as client-go does.
		inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, opts.Client),
			&corev1.Pod{}, opts.Resync, cache.Indexers{})
		if err := inf.SetWatchErrorHandlerWithContext(d.watchError); err != nil {
			return fmt.Errorf("discover pods: %w", err)
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { d.poke() },
			UpdateFunc: func(any, any) { d.poke() },
			DeleteFunc: func(any) { d.poke() },
		}); err != nil {
			return fmt.Errorf("discover pods: %w", err)
		}
		d.stores = append(d.stores, inf.GetStore())
		synced = append(synced, inf.HasSynced)
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	ready := make(chan struct{})
	wg.Go(func() {
		if cache.WaitForCacheSync(ctx.Done(), synced...) {
			close(ready)
		}
	})

	var last []Target
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-d.errs:
			d.warn(err)
		case <-ready:
			ready = nil // synced: from now on every change counts
			last = d.publish(fn, last, true)
		case <-d.changed:
			if ready == nil {
				last = d.publish(fn, last, false)
			}
		}
	}
}

// discovery is the state of one Run.
type discovery struct {
	opts    Options
	sel     labels.Selector
	stores  []cache.Store
	changed chan struct{} // a pod event since the last look; capacity 1
	errs    chan error    // the informers' list and watch errors
	warned  map[warning]bool
}

// warning is a problem of a pod, told once.
type warning struct {
	uid, problem string
}

// tweak narrows the informers' lists and watches on the server.
func (d *discovery) tweak(o *metav1.ListOptions) {
	o.LabelSelector = d.sel.String()
	if d.opts.Node != "" {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", d.opts.Node).String()
	}
}

// poke notes that the pods changed.
func (d *discovery) poke() {
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// watchError passes an informer's list or watch error to Run, dropping the
// routine ends of a watch and the errors Run is too busy to take (the
// informer retries, and says so again).
func (d *discovery) watchError(_ context.Context, r *cache.Reflector, err error) {
	if err == io.EOF || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || errors.Is(err, context.Canceled) {
		return
	}
	select {
	case d.errs <- fmt.Errorf("discover pods: list and watch: %w", err):
	default:
	}
}

func (d *discovery) warn(err error) {
	if d.opts.Warn != nil {
		d.opts.Warn(err)
	}
}

// publish computes the targets and calls fn with them when they differ from
// last, or always when force is set.
func (d *discovery) publish(fn func([]Target), last []Target, force bool) []Target {
	targets := d.targets()
	if !force && reflect.DeepEqual(targets, last) {
		return last
	}
	fn(slices.Clone(targets))
	return targets
}

// targets reads the informers' caches: the targets in order, and a warning
// for each new problem of an opted-in pod.
func (d *discovery) targets() []Target {
	var out []Target
	seen := map[string]bool{}
	for _, store := range d.stores {
		for _, obj := range store.List() {
			pod, ok := obj.(*corev1.Pod)
			if !ok || !d.selects(pod) {
				continue
			}
			seen[string(pod.UID)] = true
			t, ok, err := podTarget(pod)
			if err != nil {
				w := warning{string(pod.UID), err.Error()}
				if !d.warned[w] {
					d.warned[w] = true
					d.warn(fmt.Errorf("discover pods: %w", err))
				}
			}
			if ok {
				out = append(out, t)
			}
		}
	}
	for w := range d.warned {
		if !seen[w.uid] {
			delete(d.warned, w) // a pod gone: forget what was said of it
		}
	}
	slices.SortFunc(out, func(a, b Target) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Pod, b.Pod))
	})
	return out
}

// selects repeats the server's selection on the client, for API servers
// (and fakes) that do not apply every selector to a watch.
func (d *discovery) selects(pod *corev1.Pod) bool {
	if d.opts.Node != "" && pod.Spec.NodeName != d.opts.Node {
		return false
	}
	return d.sel.Matches(labels.Set(pod.Labels))
}

// namespaces gives the namespaces to watch: each one once, or all.
func namespaces(given []string) []string {
	var out []string
	for _, ns := range given {
		if ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	if len(out) == 0 {
		return []string{metav1.NamespaceAll}
	}
	return out
}
