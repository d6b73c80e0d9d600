package pprofx

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// ValueType names a sample type (or the period type) and its unit.
type ValueType struct {
	Type string `json:"type"`
	Unit string `json:"unit"`
}

// Function is a function of a profile: its name and source file.
type Function struct {
	Name      string
	File      string
	StartLine int64
}

// Line is one source line of a location: the index of its function in
// Stacks.Functions (-1 when the profile gives none) and the line number.
type Line struct {
	Function int32
	Line     int64
}

// Location is one program counter of a profile with its source lines,
// innermost first: a location holds several lines when calls were inlined
// there.
type Location struct {
	Address uint64
	Lines   []Line
}

// Stacks is a profile aggregated by stack: every distinct sequence of
// locations once, with the sum of the values of the samples that share it.
// It holds what top tables and flame graphs need and nothing else (no
// labels, mappings or comments), so it is much smaller than a parsed
// *profile.Profile: ReadStacks builds one while decoding, StacksOf from a
// parsed profile, and both give the same result for the same profile.
//
// Locations and Functions are numbered densely in the order samples first
// reach them. A Stacks is read-only once built.
type Stacks struct {
	SampleTypes       []ValueType
	DefaultSampleType string
	PeriodType        ValueType
	Period            int64
	TimeNanos         int64
	DurationNanos     int64

	Functions []Function
	Locations []Location

	store  stackStore
	values records[int64] // len(SampleTypes) per stack
	total  []int64        // per sample type
}

// Len returns the number of distinct stacks.
func (s *Stacks) Len() int { return s.store.refs.n }

// Stack returns the location indices of stack i, innermost (the leaf)
// first. The slice must not be modified.
func (s *Stacks) Stack(i int) []int32 { return s.store.stack(i) }

// Values returns the values of stack i, one per sample type. The slice
// must not be modified.
func (s *Stacks) Values(i int) []int64 { return s.values.at(i) }

// Total returns the sum of the values of sample type i over all samples.
func (s *Stacks) Total(i int) int64 { return s.total[i] }

// Types returns the names of the sample types, in profile order.
func (s *Stacks) Types() []string {
	names := make([]string, len(s.SampleTypes))
	for i, st := range s.SampleTypes {
		names[i] = st.Type
	}
	return names
}

// SampleIndex returns the index of the sample type called name, with the
// rules of the package-level SampleIndex: an empty name means the default
// sample type, else the last; an unknown name gives an error listing the
// types the profile has.
func (s *Stacks) SampleIndex(name string) (int, error) {
	if len(s.SampleTypes) == 0 {
		return 0, errors.New("profile has no sample types")
	}
	find := func(name string) int {
		for i, st := range s.SampleTypes {
			if st.Type == name {
				return i
			}
		}
		return -1
	}
	if name == "" {
		if i := find(s.DefaultSampleType); s.DefaultSampleType != "" && i >= 0 {
			return i, nil
		}
		return len(s.SampleTypes) - 1, nil
	}
	if i := find(name); i >= 0 {
		return i, nil
	}
	return 0, fmt.Errorf("sample type %q not in profile; it has %s", name, strings.Join(s.Types(), ", "))
}

// FunctionName returns the name of line ln of location loc: its
// function's, or the location's address in hex when the line has no
// function or the location no lines (ln is then ignored).
func (s *Stacks) FunctionName(loc int32, ln int) string {
	l := &s.Locations[loc]
	if ln < len(l.Lines) {
		if f := l.Lines[ln].Function; f >= 0 {
			return s.Functions[f].Name
		}
	}
	return addressName(l.Address)
}

// StacksOf aggregates a parsed profile. It fails when a sample has not
// one value per sample type. Locations and functions are told apart by
// pointer, as the profile package links them.
func StacksOf(p *profile.Profile) (*Stacks, error) {
	if p == nil {
		return nil, errors.New("aggregate stacks: nil profile")
	}
	nt := len(p.SampleType)
	s := &Stacks{
		SampleTypes:       make([]ValueType, nt),
		DefaultSampleType: p.DefaultSampleType,
		Period:            p.Period,
		TimeNanos:         p.TimeNanos,
		DurationNanos:     p.DurationNanos,
		total:             make([]int64, nt),
	}
	for i, st := range p.SampleType {
		s.SampleTypes[i] = ValueType{Type: st.Type, Unit: st.Unit}
	}
	if p.PeriodType != nil {
		s.PeriodType = ValueType{Type: p.PeriodType.Type, Unit: p.PeriodType.Unit}
	}
	agg := newAggregator(nt, len(p.Sample))
	frames := 0
	for _, smp := range p.Sample {
		frames += len(smp.Location)
	}
	agg.reserve(len(p.Sample), frames)
	locIdx := make(map[*profile.Location]int32, len(p.Location))
	var locs []*profile.Location
	scratch := make([]int32, 0, 64)
	for i, smp := range p.Sample {
		if len(smp.Value) != nt {
			return nil, fmt.Errorf("sample %d has %d values, want %d", i, len(smp.Value), nt)
		}
		scratch = scratch[:0]
		for _, l := range smp.Location {
			li, ok := locIdx[l]
			if !ok {
				li = int32(len(locs))
				locIdx[l] = li
				locs = append(locs, l)
			}
			scratch = append(scratch, li)
		}
		if err := agg.add(scratch, smp.Value); err != nil {
			return nil, err
		}
	}
	agg.finish(s)

	funcIdx := make(map[*profile.Function]int32, len(p.Function))
	s.Locations = make([]Location, len(locs))
	lines := make([]Line, 0, len(locs)+len(locs)/4)
	for i, l := range locs {
		start := len(lines)
		for _, ln := range l.Line {
			fi := int32(-1)
			if f := ln.Function; f != nil {
				var ok bool
				if fi, ok = funcIdx[f]; !ok {
					fi = int32(len(s.Functions))
					funcIdx[f] = fi
					s.Functions = append(s.Functions, Function{Name: f.Name, File: f.Filename, StartLine: f.StartLine})
				}
			}
			lines = append(lines, Line{Function: fi, Line: ln.Line})
		}
		s.Locations[i] = Location{Address: l.Address, Lines: lines[start:len(lines):len(lines)]}
	}
	return s, nil
}

// ErrOverflow is wrapped by the errors of Parse, ReadStacks and StacksOf
// for a profile whose sample values add up beyond what an int64 holds:
// its totals cannot be represented, and summing them anyway would wrap
// around to nonsense such as a negative total.
var ErrOverflow = errors.New("sample values add up beyond the range of int64, so the profile's totals cannot be represented")

// addMagnitude adds |v| to *m and reports whether the sum still fits in
// an int64 (*m is left unchanged when it does not).
func addMagnitude(m *int64, v int64) bool {
	if v < 0 {
		if v == math.MinInt64 {
			return false
		}
		v = -v
	}
	if *m > math.MaxInt64-v {
		return false
	}
	*m += v
	return true
}

// checkMagnitudes reports ErrOverflow when the absolute sample values of
// p add up beyond an int64 for some sample type.
func checkMagnitudes(p *profile.Profile) error {
	mags := make([]int64, len(p.SampleType))
	for _, s := range p.Sample {
		for i, v := range s.Value {
			if i < len(mags) && !addMagnitude(&mags[i], v) {
				return fmt.Errorf("%w (sample type %d)", ErrOverflow, i+1)
			}
		}
	}
	return nil
}

// aggregator collects samples into distinct stacks.
type aggregator struct {
	nt     int
	store  stackStore
	values records[int64]
	total  []int64
	// magnitude is the sum of the absolute values per sample type: while
	// it fits in an int64, so does every sum of any subset of the values
	// (a stack's, a function's, the total), whatever their signs.
	magnitude []int64
	// unmerged adds every sample as a stack of its own, without looking
	// for an equal one (ReadOptions.Unmerged).
	unmerged bool
	// labeled keeps a label set per stack (labels), part of its identity:
	// samples merge when their stacks and label sets are equal.
	labeled bool
	labels  records[int32]
	// table is an open-addressing hash set of stacks: each entry holds a
	// stack's index + 1 in its low 32 bits (0 is an empty slot) and 32
	// bits of its hash in the high ones, which place it, tell most other
	// stacks apart without reading them, and let the table grow without
	// rehashing stacks.
	table []uint64
}

func newAggregator(nt, sizeHint int) *aggregator {
	size := 1024
	for size < 2*sizeHint {
		size *= 2
	}
	return &aggregator{
		nt:        nt,
		total:     make([]int64, nt),
		magnitude: make([]int64, nt),
		table:     make([]uint64, size),
		values:    records[int64]{width: nt},
		labels:    records[int32]{width: 1},
		store:     stackStore{refs: records[stackRef]{width: 1}},
	}
}

// reset empties an unmerged aggregator for another profile, keeping the
// memory of its stacks and values.
func (a *aggregator) reset() {
	clear(a.total)
	clear(a.magnitude)
	a.values.reset()
	a.labels.reset()
	a.store.reset()
}

// reserve sizes the first chunks for this many stacks and frames, when
// they are known in advance.
func (a *aggregator) reserve(stacks, frames int) {
	a.values.reserve(stacks)
	a.store.refs.reserve(stacks)
	if len(a.store.chunks) == 0 && frames > 0 {
		a.store.chunks = append(a.store.chunks, make([]int32, 0, min(frames, chunkLen)))
	}
}

// maxStacks bounds the number of distinct stacks (the hash table holds
// 32-bit indices).
const maxStacks = 1 << 31

// add adds a sample's values to its stack.
func (a *aggregator) add(stack []int32, values []int64) error {
	return a.addLabeled(stack, 0, values)
}

// addLabeled adds a sample's values to its stack and label set (ignored
// unless the aggregator is labeled).
func (a *aggregator) addLabeled(stack []int32, set int32, values []int64) error {
	_, err := a.addGuess(stack, set, values, -1)
	return err
}

// addGuess is addLabeled for a caller that guesses the index the stack
// and label set have, if any (-1 for no guess): a right guess costs a
// comparison instead of a hash table's lookup. It returns the index of
// the stack added to.
func (a *aggregator) addGuess(stack []int32, set int32, values []int64, guess int) (int, error) {
	for i, v := range values {
		if !addMagnitude(&a.magnitude[i], v) {
			return 0, fmt.Errorf("%w (sample type %d)", ErrOverflow, i+1)
		}
		a.total[i] += v
	}
	n := a.values.n
	if a.unmerged {
		if n >= maxStacks-1 {
			return 0, errors.New("aggregate stacks: too many distinct stacks")
		}
		if err := a.store.add(stack); err != nil {
			return 0, err
		}
		a.values.add(values...)
		if a.labeled {
			a.labels.add(set)
		}
		return n, nil
	}
	if guess >= 0 && guess < n && slices.Equal(a.store.stack(guess), stack) && (!a.labeled || a.labels.at(guess)[0] == set) {
		vs := a.values.at(guess)
		for k, v := range values {
			vs[k] += v
		}
		return guess, nil
	}
	h := hashStack(stack)
	if a.labeled {
		h = (h ^ uint64(uint32(set))) * 0x9e3779b97f4a7c15
		h ^= h >> 32
	}
	h32 := uint64(uint32(h))
	mask := uint64(len(a.table) - 1)
	for j := h32 & mask; ; j = (j + 1) & mask {
		e := a.table[j]
		if e == 0 {
			break
		}
		if e>>32 != h32 {
			continue
		}
		i := int(uint32(e) - 1)
		if slices.Equal(a.store.stack(i), stack) && (!a.labeled || a.labels.at(i)[0] == set) {
			vs := a.values.at(i)
			for k, v := range values {
				vs[k] += v
			}
			return i, nil
		}
	}
	if n >= maxStacks-1 {
		return 0, errors.New("aggregate stacks: too many distinct stacks")
	}
	if err := a.store.add(stack); err != nil {
		return 0, err
	}
	a.values.add(values...)
	if a.labeled {
		a.labels.add(set)
	}
	if 2*(n+1) > len(a.table) {
		a.grow()
	}
	a.insert(h32<<32 | uint64(n+1))
	return n, nil
}

// insert puts entry e (index + 1 and hash bits) in the table.
func (a *aggregator) insert(e uint64) {
	mask := uint64(len(a.table) - 1)
	j := e >> 32 & mask
	for a.table[j] != 0 {
		j = (j + 1) & mask
	}
	a.table[j] = e
}

func (a *aggregator) grow() {
	old := a.table
	a.table = make([]uint64, 2*len(old))
	for _, e := range old {
		if e != 0 {
			a.insert(e)
		}
	}
}

// finish moves the stacks into s and releases the hash table.
func (a *aggregator) finish(s *Stacks) {
	s.store = a.store
	s.values = a.values
	s.total = a.total
	a.table = nil
}

func hashStack(stack []int32) uint64 {
	h := uint64(len(stack))*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	for _, x := range stack {
		h ^= uint64(uint32(x))
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 29
	}
	return h ^ h>>32
}

// stackStore keeps stacks in fixed-size chunks, so that growing it never
// copies what it holds and its peak memory is what it stores.
type stackStore struct {
	chunks [][]int32
	refs   records[stackRef]
	spare  [][]int32 // emptied chunks, to reuse
}

// reset empties the store, keeping its chunks to fill again.
func (st *stackStore) reset() {
	for _, c := range st.chunks {
		st.spare = append(st.spare, c[:0])
	}
	clear(st.chunks)
	st.chunks = st.chunks[:0]
	st.refs.reset()
}

type stackRef struct {
	chunk, off, n int32
}

const chunkLen = 1 << 20

func (st *stackStore) add(stack []int32) error {
	n := len(stack)
	if n > chunkLen {
		return fmt.Errorf("aggregate stacks: a stack of %d frames is too deep", n)
	}
	last := len(st.chunks) - 1
	if last < 0 || len(st.chunks[last])+n > cap(st.chunks[last]) {
		size := chunkLen
		if last < 0 {
			size = 4096 // most profiles are small
		} else if c := 2 * cap(st.chunks[last]); c < chunkLen && c >= n {
			size = c
		}
		size = max(size, n)
		var c []int32
		if k := len(st.spare) - 1; k >= 0 && cap(st.spare[k]) >= n {
			c, st.spare = st.spare[k], st.spare[:k]
		} else {
			c = make([]int32, 0, size)
		}
		st.chunks = append(st.chunks, c)
		last++
		if len(st.chunks) > 1<<30 {
			return errors.New("aggregate stacks: too many frames")
		}
	}
	c := st.chunks[last]
	st.refs.add(stackRef{chunk: int32(last), off: int32(len(c)), n: int32(n)})
	st.chunks[last] = append(c, stack...)
	return nil
}

func (st *stackStore) stack(i int) []int32 {
	r := st.refs.at(i)[0]
	return st.chunks[r.chunk][r.off : r.off+r.n : r.off+r.n]
}

// records is an append-only list of fixed-width records in chunks of
// 1<<16 records: growing never copies more than the first chunk, so peak
// memory stays close to what is stored.
type records[T any] struct {
	width  int
	n      int
	chunks [][]T
	spare  [][]T // emptied chunks, to reuse
}

// reset empties r, keeping its chunks to fill again.
func (r *records[T]) reset() {
	for i := len(r.chunks) - 1; i >= 0; i-- {
		r.spare = append(r.spare, r.chunks[i][:0])
	}
	clear(r.chunks)
	r.chunks, r.n = r.chunks[:0], 0
}

const recordShift = 16

func (r *records[T]) add(v ...T) {
	c := r.n >> recordShift
	if c == len(r.chunks) {
		size := 256 // the first chunk grows by appending, for small profiles
		if c > 0 {
			size = 1 << recordShift
		}
		if k := len(r.spare) - 1; k >= 0 {
			r.chunks, r.spare = append(r.chunks, r.spare[k]), r.spare[:k]
		} else {
			r.chunks = append(r.chunks, make([]T, 0, size*r.width))
		}
	}
	r.chunks[c] = append(r.chunks[c], v...)
	r.n++
}

// reserve sizes the first chunk for n records, before the first add.
func (r *records[T]) reserve(n int) {
	if len(r.chunks) == 0 && n > 0 {
		r.chunks = append(r.chunks, make([]T, 0, min(n, 1<<recordShift)*r.width))
	}
}

func (r *records[T]) at(i int) []T {
	c := r.chunks[i>>recordShift]
	o := (i & (1<<recordShift - 1)) * r.width
	return c[o : o+r.width : o+r.width]
}

// Profile rebuilds a profile from the stacks: one sample per stack, with
// the stacks' locations and functions (no mappings, labels or comments).
// Heap profiles' samples also get the "bytes" label the runtime gives
// them, their objects' size, as alloc_space / alloc_objects: exact for
// stacks read with ReadOptions.Unmerged, where every sample of the
// runtime (one per stack and size) is a stack of its own.
func (s *Stacks) Profile() *profile.Profile {
	p := &profile.Profile{
		DefaultSampleType: s.DefaultSampleType,
		Period:            s.Period,
		TimeNanos:         s.TimeNanos,
		DurationNanos:     s.DurationNanos,
	}
	for _, st := range s.SampleTypes {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: st.Type, Unit: st.Unit})
	}
	if s.PeriodType != (ValueType{}) {
		p.PeriodType = &profile.ValueType{Type: s.PeriodType.Type, Unit: s.PeriodType.Unit}
	}
	p.Function = make([]*profile.Function, len(s.Functions))
	for i, f := range s.Functions {
		p.Function[i] = &profile.Function{ID: uint64(i + 1), Name: f.Name, SystemName: f.Name, Filename: f.File, StartLine: f.StartLine}
	}
	p.Location = make([]*profile.Location, len(s.Locations))
	for i, l := range s.Locations {
		loc := &profile.Location{ID: uint64(i + 1), Address: l.Address}
		for _, ln := range l.Lines {
			pl := profile.Line{Line: ln.Line}
			if ln.Function >= 0 {
				pl.Function = p.Function[ln.Function]
			}
			loc.Line = append(loc.Line, pl)
		}
		p.Location[i] = loc
	}
	objects, space := -1, -1
	for i, st := range s.SampleTypes {
		switch st.Type {
		case AllocObjects:
			objects = i
		case AllocSpace:
			space = i
		}
	}
	p.Sample = make([]*profile.Sample, s.Len())
	samples := make([]profile.Sample, s.Len())
	for i := range s.Len() {
		stack := s.Stack(i)
		smp := &samples[i]
		smp.Location = make([]*profile.Location, len(stack))
		for j, l := range stack {
			smp.Location[j] = p.Location[l]
		}
		smp.Value = slices.Clone(s.Values(i))
		if objects >= 0 && space >= 0 && smp.Value[objects] > 0 {
			smp.NumLabel = map[string][]int64{"bytes": {smp.Value[space] / smp.Value[objects]}}
		}
		p.Sample[i] = smp
	}
	return p
}
