package pyroscope

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/google/pprof/profile"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
)

// The profile types a capture is pushed as, by their __name__: the names
// Pyroscope gives the profiles of its own Go SDK (pyroscope-go), so that
// heapscope's series sit beside an SDK's in the same views.
const (
	NameCPU       = "process_cpu"
	NameMemory    = "memory"
	NameGoroutine = "goroutine"
	NameMutex     = "mutex"
	NameBlock     = "block"
)

// kinds maps a profile type to the result.json kind it comes from, and
// the sample types a profile of that kind has: a file without them is
// not what its kind says, and is not pushed. Memory is built from the
// heap snapshots (see Build).
var kinds = []struct {
	name, kind string
	samples    []string
}{
	{NameCPU, "cpu", []string{"cpu"}},
	{NameMemory, "heap", []string{pprofx.AllocObjects, pprofx.AllocSpace, pprofx.InuseObjects, pprofx.InuseSpace}},
	{NameGoroutine, "goroutine", []string{"goroutine"}},
	{NameMutex, "mutex", []string{"contentions", "delay"}},
	{NameBlock, "block", []string{"contentions", "delay"}},
}

// Profile is one profile file of a stored run, as stored (gzipped pprof).
type Profile struct {
	// Kind is result.json's: heap, cpu, goroutine, block, mutex.
	Kind string
	// Path is the file's, relative to the run directory.
	Path string
	Time time.Time
	Data []byte
}

// Capture is a stored capture, read for export: who it is of, and the
// profiles Select picked from it.
type Capture struct {
	Meta
	Profiles []Profile
}

// Select picks, from the profiles result.json lists, those a push needs:
// the CPU, block and mutex profiles of the window, the last goroutine
// profile, and the first and last heap snapshots (see Build). The order is
// the list's.
func Select(profiles []result.Profile) []result.Profile {
	latest := func(kind string, earliest bool) int {
		at := -1
		for i, p := range profiles {
			if p.Kind != kind {
				continue
			}
			if at < 0 || (earliest && p.Time.Before(profiles[at].Time)) || (!earliest && !p.Time.Before(profiles[at].Time)) {
				at = i
			}
		}
		return at
	}
	keep := map[int]bool{}
	for _, k := range kinds {
		if i := latest(k.kind, false); i >= 0 {
			keep[i] = true
		}
	}
	if i := latest("heap", true); i >= 0 {
		keep[i] = true
	}
	var out []result.Profile
	for i, p := range profiles {
		if keep[i] {
			out = append(out, p)
		}
	}
	return out
}

// maxProfile bounds a profile's decompressed size, as everywhere in
// heapscope.
const maxProfile = pprofx.DefaultMaxDecompressed

// Build makes the push of a capture: one series for each profile type it
// has, in the order process_cpu, memory, goroutine, mutex, block, each
// with the labels of Labels and its __name__, and one sample, the
// profile. CPU, goroutine, mutex and block profiles go as stored; they
// are parsed only to check that they are what their kind says.
//
// Memory is what Pyroscope's Go SDK sends (godeltaprof): alloc_objects and
// alloc_space are the window's allocations — the last heap snapshot less
// the first — and inuse_objects and inuse_space the live heap of the last
// snapshot. A heap profile's alloc values count from the process's start:
// pushed as they are, each capture would add the whole lifetime again to
// Pyroscope's sums. A capture with one snapshot has no window, and is
// pushed with its inuse values alone.
//
// A profile that cannot be used is left out with a warning; a capture
// without any profile to push is an error.
func Build(c Capture) (*pushv1.PushRequest, []string, error) {
	labels, warnings := Labels(c.Meta)
	req := &pushv1.PushRequest{}
	for _, k := range kinds {
		var of []Profile
		for _, p := range c.Profiles {
			if p.Kind == k.kind {
				of = append(of, p)
			}
		}
		if len(of) == 0 {
			continue
		}
		slices.SortStableFunc(of, func(a, b Profile) int { return a.Time.Compare(b.Time) })
		var raw []byte
		var err error
		if k.name == NameMemory {
			raw, err = memory(of)
		} else {
			last := of[len(of)-1]
			raw, err = last.Data, check(last, k.samples)
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s not pushed: %v", k.name, err))
			continue
		}
		series := &pushv1.RawProfileSeries{
			Labels:  withName(labels, k.name),
			Samples: []*pushv1.RawSample{{RawProfile: raw, ID: sampleID(c.Meta, k.name, of)}},
		}
		req.Series = append(req.Series, series)
	}
	if len(req.Series) == 0 {
		return nil, warnings, errors.New("build push: the capture has no profile to push")
	}
	return req, warnings, nil
}

// withName returns labels with __name__ added, in name order.
func withName(labels []*typesv1.LabelPair, name string) []*typesv1.LabelPair {
	out := make([]*typesv1.LabelPair, 0, len(labels)+1)
	out = append(out, &typesv1.LabelPair{Name: LabelName, Value: name})
	for _, l := range labels {
		out = append(out, &typesv1.LabelPair{Name: l.Name, Value: l.Value})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// check parses p and says whether it has the sample types want.
func check(p Profile, want []string) error {
	parsed, err := parse(p)
	if err != nil {
		return err
	}
	return hasTypes(parsed, p.Path, want)
}

func parse(p Profile) (*profile.Profile, error) {
	parsed, err := pprofx.Parse(p.Data, maxProfile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Path, err)
	}
	return parsed, nil
}

func hasTypes(p *profile.Profile, path string, want []string) error {
	for _, w := range want {
		if index(p, w) < 0 {
			return fmt.Errorf("%s: no %s samples (it has %v): not that kind of profile", path, w, pprofx.Types(p))
		}
	}
	return nil
}

func index(p *profile.Profile, sampleType string) int {
	return slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == sampleType })
}

// memory makes the memory profile of a capture's heap snapshots (see
// Build): the first and last of heaps, which are in time order.
func memory(heaps []Profile) ([]byte, error) {
	heap := kinds[1].samples
	last, err := parse(heaps[len(heaps)-1])
	if err == nil {
		err = hasTypes(last, heaps[len(heaps)-1].Path, heap)
	}
	if err != nil {
		return nil, err
	}
	var p *profile.Profile
	if len(heaps) == 1 {
		p, err = inuseOnly(last)
	} else {
		var first *profile.Profile
		first, err = parse(heaps[0])
		if err == nil {
			err = hasTypes(first, heaps[0].Path, heap)
		}
		if err == nil {
			p, err = window(first, last)
		}
	}
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil { // gzipped
		return nil, fmt.Errorf("encode memory profile: %w", err)
	}
	return buf.Bytes(), nil
}

// window returns last with its alloc values less first's: the allocations
// between the two snapshots, and last's live heap. Neither is modified.
func window(first, last *profile.Profile) (*profile.Profile, error) {
	base := first.Copy()
	for _, name := range []string{pprofx.InuseObjects, pprofx.InuseSpace} {
		i := index(base, name)
		for _, s := range base.Sample {
			s.Value[i] = 0
		}
	}
	base.Scale(-1)
	// Merge adds the samples of one stack; those that come to zero go.
	p, err := profile.Merge([]*profile.Profile{base, last})
	if err != nil {
		return nil, fmt.Errorf("subtract the first heap snapshot from the last: %w", err)
	}
	// A count cannot go down within one process; were it to (a snapshot
	// of another process), no allocation is better than a negative one.
	for _, name := range []string{pprofx.AllocObjects, pprofx.AllocSpace} {
		i := index(p, name)
		for _, s := range p.Sample {
			s.Value[i] = max(s.Value[i], 0)
		}
	}
	p.Sample = slices.DeleteFunc(p.Sample, func(s *profile.Sample) bool {
		return !slices.ContainsFunc(s.Value, func(v int64) bool { return v != 0 })
	})
	p.TimeNanos = last.TimeNanos
	p.DurationNanos = 0
	if first.TimeNanos > 0 && last.TimeNanos > first.TimeNanos {
		p.DurationNanos = last.TimeNanos - first.TimeNanos
	}
	p.DefaultSampleType = pprofx.AllocSpace
	return p, nil
}

// inuseOnly returns p with its inuse sample types alone.
func inuseOnly(p *profile.Profile) (*profile.Profile, error) {
	keep := []int{index(p, pprofx.InuseObjects), index(p, pprofx.InuseSpace)}
	out := p.Copy()
	out.SampleType = []*profile.ValueType{out.SampleType[keep[0]], out.SampleType[keep[1]]}
	samples := out.Sample[:0]
	for _, s := range out.Sample {
		s.Value = []int64{s.Value[keep[0]], s.Value[keep[1]]}
		if s.Value[0] != 0 || s.Value[1] != 0 {
			samples = append(samples, s)
		}
	}
	out.Sample = samples
	out.DefaultSampleType = pprofx.InuseSpace
	if err := out.CheckValid(); err != nil {
		return nil, fmt.Errorf("keep the live heap of the heap snapshot: %w", err)
	}
	return out, nil
}

// sampleID is a pushed profile's ID, a UUID (version 5 in form, SHA-1 of
// the capture's ID, the profile type and its files), as Pyroscope wants
// one: the same capture pushed again has the same IDs.
func sampleID(m Meta, name string, of []Profile) string {
	h := sha1.New()
	seed := m.ID
	if seed == "" {
		seed = m.Target
	}
	fmt.Fprintf(h, "heapscope\x00%s\x00%s", seed, name)
	for _, p := range of {
		fmt.Fprintf(h, "\x00%s\x00%d", p.Path, p.Time.UnixNano())
	}
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
