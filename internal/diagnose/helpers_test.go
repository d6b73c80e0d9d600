package diagnose

import (
	"time"

	"github.com/google/pprof/profile"
)

// fn is a function of a synthetic profile.
type fn struct {
	name, file string
	line       int64
}

// heapBuilder makes synthetic heap profiles: samples are stacks of fn,
// innermost first, with the four heap values.
type heapBuilder struct {
	funcs map[string]*profile.Function
	locs  map[fn]*profile.Location
	p     *profile.Profile
}

func newHeap(at time.Time, period int64) *heapBuilder {
	return &heapBuilder{
		funcs: map[string]*profile.Function{},
		locs:  map[fn]*profile.Location{},
		p: &profile.Profile{
			SampleType: []*profile.ValueType{
				{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
				{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
			},
			PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
			Period:            period,
			TimeNanos:         at.UnixNano(),
			DefaultSampleType: "inuse_space",
		},
	}
}

func (h *heapBuilder) loc(f fn) *profile.Location {
	if l := h.locs[f]; l != nil {
		return l
	}
	pf := h.funcs[f.name]
	if pf == nil {
		pf = &profile.Function{ID: uint64(len(h.funcs) + 1), Name: f.name, SystemName: f.name, Filename: f.file}
		h.funcs[f.name] = pf
		h.p.Function = append(h.p.Function, pf)
	}
	l := &profile.Location{ID: uint64(len(h.locs) + 1), Address: uint64(0x1000 + len(h.locs)), Line: []profile.Line{{Function: pf, Line: f.line}}}
	h.locs[f] = l
	h.p.Location = append(h.p.Location, l)
	return l
}

// sample adds a sample with values alloc objects, alloc bytes, inuse
// objects, inuse bytes.
func (h *heapBuilder) sample(values [4]int64, stack ...fn) *heapBuilder {
	s := &profile.Sample{Value: values[:]}
	for _, f := range stack {
		s.Location = append(s.Location, h.loc(f))
	}
	h.p.Sample = append(h.p.Sample, s)
	return h
}

// sampleWithSize adds a sample whose objects are size bytes each.
func (h *heapBuilder) sampleWithSize(size int64, values [4]int64, stack ...fn) *heapBuilder {
	h.sample(values, stack...)
	h.p.Sample[len(h.p.Sample)-1].NumLabel = map[string][]int64{"bytes": {size}}
	return h
}

func (h *heapBuilder) build() *profile.Profile { return h.p }

// countProfile makes a profile of one count sample type (goroutine) or
// the contention pair, with stacks innermost first.
func countProfile(types []string, at time.Time, duration time.Duration, samples []countSample) *profile.Profile {
	hb := newHeap(at, 1)
	hb.p.SampleType = nil
	for _, t := range types {
		unit := "count"
		if t == "delay" || t == "cpu" {
			unit = "nanoseconds"
		}
		hb.p.SampleType = append(hb.p.SampleType, &profile.ValueType{Type: t, Unit: unit})
	}
	hb.p.DefaultSampleType = ""
	hb.p.PeriodType = &profile.ValueType{Type: types[0], Unit: "count"}
	hb.p.DurationNanos = duration.Nanoseconds()
	for _, s := range samples {
		ps := &profile.Sample{Value: s.values}
		for _, f := range s.stack {
			ps.Location = append(ps.Location, hb.loc(f))
		}
		hb.p.Sample = append(hb.p.Sample, ps)
	}
	return hb.p
}

type countSample struct {
	values []int64
	stack  []fn
}

// mapSource is a SourceReader over a map of "file:line" to text.
type mapSource map[fn]string

func (m mapSource) Line(file string, line int64) (string, bool) {
	s, ok := m[fn{file: file, line: line}]
	return s, ok
}
