package pprofx

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/pprof/profile"
)

// Sample types of Go heap profiles.
const (
	AllocObjects = "alloc_objects"
	AllocSpace   = "alloc_space"
	InuseObjects = "inuse_objects"
	InuseSpace   = "inuse_space"
)

// AllocDelta returns the allocations made between two heap profiles of
// one process: end minus start, computed as pprof's -base does (start
// scaled by -1, then merged with end).
//
// Only the alloc_objects and alloc_space sample types are kept: they are
// cumulative since process start, so their difference is the window's
// allocations, while the difference of inuse values means nothing (the
// live heap is end's). Samples that are zero in both kept values are
// dropped. The result's TimeNanos is start's and its DurationNanos is the
// time between the two profiles; its default sample type is alloc_space.
// The inputs are not modified.
//
// AllocDelta fails when either profile is not a heap profile, when their
// sample or period types differ, or when end was taken before start.
func AllocDelta(start, end *profile.Profile) (*profile.Profile, error) {
	if start == nil || end == nil {
		return nil, errors.New("compute allocation delta: nil profile")
	}
	if err := checkHeap(start); err != nil {
		return nil, fmt.Errorf("compute allocation delta: start profile: %w", err)
	}
	if err := checkHeap(end); err != nil {
		return nil, fmt.Errorf("compute allocation delta: end profile: %w", err)
	}
	if err := compatible(start, end); err != nil {
		return nil, fmt.Errorf("compute allocation delta: %w", err)
	}
	if start.TimeNanos != 0 && end.TimeNanos != 0 && end.TimeNanos < start.TimeNanos {
		return nil, fmt.Errorf("compute allocation delta: end profile (time %d) is older than start profile (time %d)", end.TimeNanos, start.TimeNanos)
	}

	base, err := allocOnly(start)
	if err != nil {
		return nil, fmt.Errorf("compute allocation delta: start profile: %w", err)
	}
	base.Scale(-1)
	last, err := allocOnly(end)
	if err != nil {
		return nil, fmt.Errorf("compute allocation delta: end profile: %w", err)
	}
	// Merge drops the samples that cancel out and compacts the tables.
	d, err := profile.Merge([]*profile.Profile{base, last})
	if err != nil {
		return nil, fmt.Errorf("compute allocation delta: merge: %w", err)
	}
	d.TimeNanos = start.TimeNanos
	d.DurationNanos = 0
	if start.TimeNanos != 0 && end.TimeNanos != 0 {
		d.DurationNanos = end.TimeNanos - start.TimeNanos
	}
	d.DefaultSampleType = AllocSpace
	return d, nil
}

// checkHeap reports whether p has the alloc sample types of a heap
// profile.
func checkHeap(p *profile.Profile) error {
	if indexOf(p, AllocObjects) < 0 || indexOf(p, AllocSpace) < 0 {
		return fmt.Errorf("not a heap profile: sample types are %s, want %s and %s", describeTypes(p), AllocObjects, AllocSpace)
	}
	return nil
}

func describeTypes(p *profile.Profile) string {
	if len(p.SampleType) == 0 {
		return "none"
	}
	parts := make([]string, len(p.SampleType))
	for i, st := range p.SampleType {
		parts[i] = st.Type + "/" + st.Unit
	}
	return strings.Join(parts, ", ")
}

// compatible checks what profile.Merge checks, without its nil
// dereference on a missing period type.
func compatible(a, b *profile.Profile) error {
	if (a.PeriodType == nil) != (b.PeriodType == nil) ||
		a.PeriodType != nil && (a.PeriodType.Type != b.PeriodType.Type || a.PeriodType.Unit != b.PeriodType.Unit) {
		return fmt.Errorf("incompatible period types %s and %s", describeValueType(a.PeriodType), describeValueType(b.PeriodType))
	}
	if describeTypes(a) != describeTypes(b) {
		return fmt.Errorf("incompatible sample types %s and %s", describeTypes(a), describeTypes(b))
	}
	return nil
}

func describeValueType(vt *profile.ValueType) string {
	if vt == nil {
		return "none"
	}
	return vt.Type + "/" + vt.Unit
}

// allocOnly returns a copy of the heap profile p holding only the
// alloc_objects and alloc_space columns, in that order.
func allocOnly(p *profile.Profile) (*profile.Profile, error) {
	objects, space := indexOf(p, AllocObjects), indexOf(p, AllocSpace)
	for i, s := range p.Sample {
		if len(s.Value) != len(p.SampleType) {
			return nil, fmt.Errorf("sample %d has %d values for %d sample types", i, len(s.Value), len(p.SampleType))
		}
	}
	// A shallow copy: new samples with the two values, sharing p's
	// locations, functions, mappings and labels, which Merge only reads.
	// (p.Copy serialises and parses the whole profile again.)
	c := &profile.Profile{
		SampleType:        []*profile.ValueType{copyValueType(p.SampleType[objects]), copyValueType(p.SampleType[space])},
		DefaultSampleType: p.DefaultSampleType,
		Sample:            make([]*profile.Sample, len(p.Sample)),
		Mapping:           p.Mapping,
		Location:          p.Location,
		Function:          p.Function,
		Comments:          p.Comments,
		DocURL:            p.DocURL,
		DropFrames:        p.DropFrames,
		KeepFrames:        p.KeepFrames,
		TimeNanos:         p.TimeNanos,
		DurationNanos:     p.DurationNanos,
		PeriodType:        p.PeriodType,
		Period:            p.Period,
	}
	values := make([]int64, 2*len(p.Sample))
	samples := make([]profile.Sample, len(p.Sample))
	for i, s := range p.Sample {
		v := values[2*i : 2*i+2 : 2*i+2]
		v[0], v[1] = s.Value[objects], s.Value[space]
		samples[i] = profile.Sample{Location: s.Location, Value: v, Label: s.Label, NumLabel: s.NumLabel, NumUnit: s.NumUnit}
		c.Sample[i] = &samples[i]
	}
	if c.PeriodType != nil {
		c.PeriodType = copyValueType(c.PeriodType)
	}
	if c.PeriodType == nil {
		// A profile without a period type cannot be merged; heap profiles
		// are sampled by space.
		c.PeriodType = &profile.ValueType{Type: "space", Unit: "bytes"}
	}
	return c, nil
}

func copyValueType(v *profile.ValueType) *profile.ValueType {
	c := *v
	return &c
}
