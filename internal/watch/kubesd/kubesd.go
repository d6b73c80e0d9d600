// Package kubesd is heapscope watch's pod discovery: it gives the watch
// config's kubernetes sections (config.PodDiscovery) the pods that
// internal/kube finds through client-go, with the cgroup of each pod's
// container on this node when the section names the node's cgroup root.
//
// It is the one package between the config and client-go, so that the
// config, and everything that reads one, does not link client-go.
package kubesd

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/heapscope/heapscope/internal/kube"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// Discovery discovers the pods of kubernetes sections.
type Discovery struct {
	// Client reaches the API server; nil makes one for each section from
	// its kubeconfig, or the pod's service account (kube.NewClient).
	Client kube.Client
	// Warn is told of problems that do not stop discovery: a pod's bad
	// annotation, a failed watch of the API server (retried), a
	// container whose cgroup is not under the section's cgroup root.
	// Nil drops them.
	Warn func(error)
}

var _ config.PodDiscovery = (*Discovery)(nil)

// Check checks a section's label selector.
func (d *Discovery) Check(k *config.Kubernetes) error {
	if _, err := labels.Parse(k.Selector); err != nil {
		return fmt.Errorf("selector %q: %w", k.Selector, err)
	}
	return nil
}

// Watch follows the section's pods until ctx ends (see config.PodDiscovery).
func (d *Discovery) Watch(ctx context.Context, k *config.Kubernetes, fn func([]config.Pod)) error {
	client := d.Client
	if client == nil {
		c, err := kube.NewClient(k.Kubeconfig)
		if err != nil {
			return err
		}
		client = c
	}
	cgroups := &cgroupCache{root: k.CgroupRoot, warn: d.warn, found: map[string]cgroupPath{}, warned: map[string]bool{}}
	return kube.Run(ctx, kube.Options{
		Client:     client,
		Namespaces: k.Namespaces,
		Selector:   k.Selector,
		Node:       k.Node,
		Warn:       d.warn,
	}, func(ts []kube.Target) {
		pods := make([]config.Pod, len(ts))
		for i, t := range ts {
			pods[i] = podOf(t, cgroups.lookup(t))
		}
		cgroups.keep(ts)
		fn(pods)
	})
}

func (d *Discovery) warn(err error) {
	if d.Warn != nil {
		d.Warn(err)
	}
}

// podOf is the config's view of a discovered target.
func podOf(t kube.Target, cg cgroupPath) config.Pod {
	p := config.Pod{
		URL:         t.URL,
		PprofPath:   t.PprofPath,
		Labels:      maps.Clone(t.Labels),
		MemoryLimit: t.MemoryLimit,
		Status: config.PodStatus{
			Restarts:    t.Restarts,
			CgroupMount: cg.mount,
			Cgroup:      cg.dir,
		},
	}
	if lt := t.LastTermination; lt != nil {
		p.Status.LastTermination = lt.Reason
		p.Status.LastFinishedAt = lt.FinishedAt
	}
	return p
}

// cgroupPath is a container's cgroup directory and the mount of the
// memory hierarchy it is in.
type cgroupPath struct {
	mount, dir string
}

// cgroupCache remembers where each container's cgroup is, so that a pod
// event does not look for every container's again; a container not
// found is looked for again at the next event.
type cgroupCache struct {
	root   string
	warn   func(error)
	found  map[string]cgroupPath // by container ID
	warned map[string]bool       // containers not found, by ID
}

// lookup finds the target's container's cgroup; the zero path when the
// section reads no cgroups, the container has not started, or it is not
// there (warned once).
func (c *cgroupCache) lookup(t kube.Target) cgroupPath {
	if c.root == "" || t.ContainerID == "" {
		return cgroupPath{}
	}
	if p, ok := c.found[t.ContainerID]; ok {
		return p
	}
	dir, err := kube.ContainerCgroup(c.root, t.UID, t.ContainerID, t.QOSClass)
	if err != nil {
		// The node's layout is not one kube knows, or the root is not
		// the node's: say so once per container.
		if !c.warned[t.ContainerID] {
			c.warned[t.ContainerID] = true
			c.warn(fmt.Errorf("pod %s/%s: its memory is read from /metrics: %w", t.Namespace, t.Pod, err))
		}
		return cgroupPath{}
	}
	p := cgroupPath{mount: c.root, dir: dir}
	if v1 := filepath.Join(c.root, "memory"); strings.HasPrefix(dir, v1+string(filepath.Separator)) {
		p.mount = v1
	}
	c.found[t.ContainerID] = p
	return p
}

// keep forgets the containers that are no longer among ts.
func (c *cgroupCache) keep(ts []kube.Target) {
	live := make(map[string]bool, len(ts))
	for _, t := range ts {
		live[t.ContainerID] = true
	}
	maps.DeleteFunc(c.found, func(id string, _ cgroupPath) bool { return !live[id] })
	maps.DeleteFunc(c.warned, func(id string, _ bool) bool { return !live[id] })
}
