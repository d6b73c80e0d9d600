package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"
)

// firstPodsTimeout bounds how long Targets waits for a kubernetes
// section's first list of pods.
const firstPodsTimeout = time.Minute

// Targets returns every target now: the static ones, then those of each
// file_sd file as it reads now, then the pods of the group's kubernetes
// section, group by group in the config's order (a file_sd entry's files
// by name). A file that cannot be read or parsed, and a target given
// twice (the first is kept), make the error, which joins them all; the
// list still holds every target that could be resolved. A kubernetes
// section that gives no list within a minute, or before ctx ends, fails
// the whole call.
func (c *Config) Targets(ctx context.Context) ([]Target, error) {
	d := newDiscovery(c)
	var problems []error
	for _, s := range d.sources {
		s.refresh()
		problems = append(problems, s.problems...)
	}
	if len(d.pods) > 0 {
		if err := d.firstPods(ctx); err != nil {
			return nil, err
		}
	}
	ts, more := d.targets()
	return ts, errors.Join(append(problems, more...)...)
}

// Watch calls fn with every target (as Targets lists them) at its start,
// then again whenever the list changes: each file_sd entry's files are
// read again every refresh_interval, new files matching its patterns
// included, and each kubernetes section's pods are followed as the API
// server reports them (a section's pods join the list once its first
// list has come). A file that no longer exists gives up its targets; a
// file that cannot be read or parsed keeps its last good targets. Such
// problems, and targets given twice, go to Options.Warn, each once when
// it appears. fn is called from Watch's goroutine, one call at a time,
// with a list of its own. Watch returns nil when ctx is done, and an
// error when a kubernetes section cannot reach its API server. The
// Config must not change while Watch runs.
func (c *Config) Watch(ctx context.Context, fn func([]Target)) error {
	d := newDiscovery(c)
	reported := map[string]bool{}
	update := func() []Target {
		ts, dups := d.targets()
		var problems []error
		for _, s := range d.sources {
			problems = append(problems, s.problems...)
		}
		now := map[string]bool{}
		for _, p := range append(problems, dups...) {
			msg := p.Error()
			if !reported[msg] && !now[msg] {
				c.warn(p)
			}
			now[msg] = true
		}
		reported = now
		return ts
	}
	start := time.Now()
	for _, s := range d.sources {
		s.refresh()
		s.next = start.Add(s.sd.RefreshInterval)
	}
	last := update()
	fn(slices.Clone(last))

	ctx, cancel := context.WithCancel(ctx)
	pods, podErrs, wait := d.watchPods(ctx)
	defer wait()
	defer cancel()
	var (
		due   <-chan time.Time // nil without file_sd sources
		timer *time.Timer
	)
	if len(d.sources) > 0 {
		timer = time.NewTimer(time.Until(d.nextDue()))
		defer timer.Stop()
		due = timer.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-podErrs:
			return err
		case u := <-pods:
			u.src.pods = u.pods
		case <-due:
			now := time.Now()
			for _, s := range d.sources {
				if !now.Before(s.next) {
					s.refresh()
					s.next = now.Add(s.sd.RefreshInterval)
				}
			}
			timer.Reset(time.Until(d.nextDue()))
		}
		if ts := update(); !sameTargets(last, ts) {
			last = ts
			fn(slices.Clone(ts))
		}
	}
}

// podUpdate is a kubernetes section's new list of pods.
type podUpdate struct {
	src  *podSource
	pods []Pod
}

// watchPods runs each kubernetes section's discovery until ctx ends. Its
// lists come on the first channel; a discovery that cannot start sends
// its error on the second. wait returns when every discovery has ended
// (after ctx has).
func (d *discovery) watchPods(ctx context.Context) (<-chan podUpdate, <-chan error, func()) {
	updates := make(chan podUpdate)
	errs := make(chan error, len(d.pods))
	var wg sync.WaitGroup
	for _, ps := range d.pods {
		wg.Go(func() {
			err := d.c.opts.Pods.Watch(ctx, ps.g.Kubernetes, func(pods []Pod) {
				select {
				case updates <- podUpdate{ps, slices.Clone(pods)}:
				case <-ctx.Done():
				}
			})
			if err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("group %s: kubernetes (%s): %w", ps.g.Name, ps.g.Kubernetes.Pos, err)
			}
		})
	}
	return updates, errs, wg.Wait
}

// firstPods waits for the first list of every kubernetes section.
func (d *discovery) firstPods(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, firstPodsTimeout)
	updates, errs, wait := d.watchPods(ctx)
	defer wait()
	defer cancel()
	pending := map[*podSource]bool{}
	for _, ps := range d.pods {
		pending[ps] = true
	}
	for len(pending) > 0 {
		select {
		case u := <-updates:
			u.src.pods = u.pods
			delete(pending, u.src)
		case err := <-errs:
			return err
		case <-ctx.Done():
			if err := parent.Err(); err != nil {
				return err
			}
			for ps := range pending {
				return fmt.Errorf("group %s: kubernetes (%s): no list of pods from the API server within %v", ps.g.Name, ps.g.Kubernetes.Pos, firstPodsTimeout)
			}
		}
	}
	return nil
}

// discovery holds the file_sd sources and kubernetes sections of a
// config and what they read.
type discovery struct {
	c       *Config
	sources []*source
	pods    []*podSource
}

// podSource is one group's kubernetes section and its last list of pods.
type podSource struct {
	group int
	g     *Group
	pods  []Pod
}

// source is one file_sd entry of one group, with the last good targets of
// each of its files.
type source struct {
	group    int
	g        *Group
	sd       FileSD
	files    map[string][]Target // by path
	problems []error             // of the last refresh
	next     time.Time
	// read1 is each file's last read, by path: an unchanged file is not
	// read again. reads counts the files read.
	read1 map[string]lastRead
	reads int
}

func newDiscovery(c *Config) *discovery {
	d := &discovery{c: c}
	for gi := range c.Groups {
		for _, sd := range c.Groups[gi].FileSD {
			d.sources = append(d.sources, &source{group: gi, g: &c.Groups[gi], sd: sd, files: map[string][]Target{}, read1: map[string]lastRead{}})
		}
		if c.Groups[gi].Kubernetes != nil {
			d.pods = append(d.pods, &podSource{group: gi, g: &c.Groups[gi]})
		}
	}
	return d
}

func (d *discovery) nextDue() time.Time {
	next := d.sources[0].next
	for _, s := range d.sources[1:] {
		if s.next.Before(next) {
			next = s.next
		}
	}
	return next
}

// refresh reads the source's files again.
func (s *source) refresh() {
	s.problems = nil
	seen := map[string]bool{}
	for _, pattern := range s.sd.Files {
		literal := !strings.ContainsAny(pattern, `*?[\`)
		paths := []string{pattern}
		if !literal {
			paths, _ = filepath.Glob(pattern) // the pattern was checked by Load
		}
		for _, p := range paths {
			if seen[p] {
				continue
			}
			seen[p] = true
			ts, err := s.read(p)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				delete(s.files, p)
				if literal {
					s.problems = append(s.problems, fmt.Errorf("group %s: file_sd: %w", s.g.Name, err))
				}
			case err != nil:
				s.problems = append(s.problems, fmt.Errorf("group %s: file_sd: %w; its last good targets are kept", s.g.Name, err))
			default:
				s.files[p] = ts
			}
		}
	}
	for p := range s.files {
		if !seen[p] {
			delete(s.files, p)
		}
	}
	for p := range s.read1 {
		if !seen[p] {
			delete(s.read1, p)
		}
	}
}

// read reads the file_sd file at path, unless it is the very file of the
// last read, unchanged: then the last read's targets or error are
// returned again without opening it. Unchanged means the same inode,
// size and modification time (stat follows a symbolic link, so a
// Kubernetes ConfigMap's file changes with the link it is reached by).
func (s *source) read(path string) ([]Target, error) {
	fi, err := os.Stat(path)
	if err != nil {
		delete(s.read1, path)
		return nil, err
	}
	st := stampOf(fi)
	if last, ok := s.read1[path]; ok && last.stamp == st {
		return last.targets, last.err
	}
	ts, err := readSDFile(path, s.g)
	s.reads++
	// A file written again within the clock's granularity of its last
	// write may keep its stamp: one written lately is read again next
	// time, as git does with its racily clean files.
	if fi.Mode().IsRegular() && time.Since(st.mtime) > racyWindow {
		s.read1[path] = lastRead{stamp: st, targets: ts, err: err}
	} else {
		delete(s.read1, path)
	}
	return ts, err
}

// racyWindow is how long after its last write a file's stamp is trusted.
const racyWindow = 2 * time.Second

// fileStamp tells a file's version: a file written again gets a new
// modification time, one replaced by a rename a new inode.
type fileStamp struct {
	ino, size int64
	mtime     time.Time
}

// stampOf is fi's stamp.
func stampOf(fi fs.FileInfo) fileStamp {
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = int64(sys.Ino)
	}
	return st
}

// lastRead is what reading a file_sd file gave, and the version it read.
type lastRead struct {
	stamp   fileStamp
	targets []Target
	err     error
}

// targets lists the targets, static then discovered, group by group; a
// target already listed is left out and named in the problems.
func (d *discovery) targets() ([]Target, []error) {
	var out []Target
	var problems []error
	first := map[string]string{}
	add := func(t Target) {
		if pos, ok := first[t.Key]; ok {
			problems = append(problems, fmt.Errorf("%s: %s is already a target at %s: the first is watched", t.pos, t.Key, pos))
			return
		}
		first[t.Key] = t.pos
		out = append(out, t)
	}
	for gi := range d.c.Groups {
		g := &d.c.Groups[gi]
		for _, st := range g.Static {
			for j, raw := range st.Targets {
				u, err := parseTarget(raw, g.Settings.PprofPath)
				if err != nil {
					problems = append(problems, fmt.Errorf("group %s: %w", g.Name, err))
					continue
				}
				pos := "group " + g.Name
				if j < len(st.pos) {
					pos = st.pos[j]
				}
				add(newTarget(u, g, st.Labels, st.PID, pos))
			}
		}
		for _, s := range d.sources {
			if s.group != gi {
				continue
			}
			for _, p := range slices.Sorted(maps.Keys(s.files)) {
				for _, t := range s.files[p] {
					add(t)
				}
			}
		}
		for _, ps := range d.pods {
			if ps.group != gi {
				continue
			}
			for _, p := range ps.pods {
				t, err := podTarget(p, g)
				if err != nil {
					problems = append(problems, fmt.Errorf("group %s: kubernetes: %w", g.Name, err))
					continue
				}
				add(t)
			}
		}
	}
	return out, problems
}

// podTarget resolves a discovered pod as a target of group g: the
// group's settings, with the pod's pprof path and memory limit when it
// gives them, and its labels over the group's.
func podTarget(p Pod, g *Group) (Target, error) {
	path := g.Settings.PprofPath
	if p.PprofPath != "" {
		path = p.PprofPath
		if !strings.HasSuffix(path, "/") {
			path += "/"
		}
		if err := checkPath(path); err != nil {
			return Target{}, fmt.Errorf("pod %s/%s: %w", p.Labels["namespace"], p.Labels["pod"], err)
		}
	}
	u, err := parseTarget(p.URL, path)
	if err != nil {
		return Target{}, fmt.Errorf("pod %s/%s: %w", p.Labels["namespace"], p.Labels["pod"], err)
	}
	pos := fmt.Sprintf("pod %s/%s", p.Labels["namespace"], p.Labels["pod"])
	t := newTarget(u, g, p.Labels, 0, pos)
	t.Key = targetKey(u, path)
	t.Settings.PprofPath = path
	if p.MemoryLimit > 0 {
		t.Settings.MemoryLimit = p.MemoryLimit
	}
	status := p.Status
	t.Pod = &status
	return t, nil
}

// newTarget resolves a target of group g with its entry's labels.
func newTarget(base *url.URL, g *Group, labels map[string]string, pid int, pos string) Target {
	l := make(map[string]string, len(g.Labels)+len(labels)+2)
	maps.Copy(l, g.Labels)
	maps.Copy(l, labels)
	l[LabelInstance] = base.Host
	l[LabelGroup] = g.Name
	u := *base
	return Target{
		Key:      targetKey(base, g.Settings.PprofPath),
		URL:      &u,
		Group:    g.Name,
		Labels:   l,
		Settings: cloneSettings(g.Settings),
		PID:      pid,
		pos:      pos,
	}
}

// sameTargets reports whether two lists hold the same targets with the
// same labels, in the same order.
func sameTargets(a, b []Target) bool {
	return slices.EqualFunc(a, b, func(x, y Target) bool {
		return x.Key == y.Key && x.Group == y.Group && x.PID == y.PID && maps.Equal(x.Labels, y.Labels) &&
			x.Settings.PprofPath == y.Settings.PprofPath && x.Settings.MemoryLimit == y.Settings.MemoryLimit &&
			(x.Pod == nil) == (y.Pod == nil) && (x.Pod == nil || *x.Pod == *y.Pod)
	})
}

// sdEntry is one entry of a file_sd file.
type sdEntry struct {
	targets []string
	nodes   []*yaml.Node
	labels  map[string]string
}

var sdEntryFields = []field[sdEntry]{
	{"targets", func(d *decoder, n *yaml.Node, path string, e *sdEntry) error {
		ts, nodes, err := d.strings(n, path)
		e.targets, e.nodes = ts, nodes
		return err
	}},
	{"labels", func(d *decoder, n *yaml.Node, path string, e *sdEntry) error {
		l, err := d.labels(n, path, true)
		e.labels = l
		return err
	}},
}

// readSDFile reads a file_sd file, in Prometheus' format, into targets of
// group g. Targets are host:port as Prometheus has them, or URLs.
// Prometheus' meta labels (__…) are dropped.
func readSDFile(path string, g *Group) ([]Target, error) {
	data, err := readRegular(path)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s is empty (write [] for no targets)", path)
	}
	root, err := parseSD(data, path)
	if err != nil {
		return nil, err
	}
	d := &decoder{file: path}
	if root == nil {
		return nil, fmt.Errorf("%s: want a list of {targets: [...], labels: {...}}, not nothing", path)
	}
	if resolve(root).Kind != yaml.SequenceNode {
		return nil, d.failf(resolve(root), "", "want a list of {targets: [...], labels: {...}}, not %s", kind(resolve(root)))
	}
	items, _ := d.list(root, "")
	var out []Target
	for i, item := range items {
		var e sdEntry
		p := index("", i)
		if _, err := decodeMapping(d, item, p, sdEntryFields, &e); err != nil {
			return nil, err
		}
		for j, raw := range e.targets {
			n := resolve(e.nodes[j])
			u, err := parseTarget(raw, g.Settings.PprofPath)
			if err != nil {
				return nil, d.fail(n, index(join(p, "targets"), j), err)
			}
			out = append(out, newTarget(u, g, e.labels, 0, d.pos(n)))
		}
	}
	return out, nil
}

// parseSD parses a file_sd file: YAML, or JSON when its name ends in
// .json, checked as JSON first.
func parseSD(data []byte, path string) (*yaml.Node, error) {
	if !strings.EqualFold(filepath.Ext(path), ".json") {
		return parseYAML(data, path)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			return nil, fmt.Errorf("%s:%d: not JSON: %w", path, line, err)
		}
		return nil, fmt.Errorf("%s: not JSON: %w", path, err)
	}
	root, err := parseYAML(data, path)
	if err == nil {
		return root, nil
	}
	// JSON that YAML reads otherwise (escaped surrogate pairs): decode it
	// without lines.
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &n, nil
}
