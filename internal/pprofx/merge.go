package pprofx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// MergeOptions bound what each profile given to a Merger may cost. The
// aggregate itself grows with the distinct stacks of all the profiles,
// not with their number.
type MergeOptions struct {
	// MaxDecompressed caps one profile's protobuf, after decompression
	// when it is gzipped; a value ≤ 0 means DefaultMaxDecompressed.
	// Beyond it Add fails with a *TooLargeError: a gzip bomb is refused
	// after reading this much, holding none of it.
	MaxDecompressed int64
	// MaxDecoded caps what decoding one profile may take, estimated as
	// Limits.MaxDecoded estimates it; a value ≤ 0 means
	// DefaultMaxDecoded. The profile is decoded one sample at a time into
	// its distinct samples, a fraction of the estimate.
	MaxDecoded int64
}

// ErrIncompatible is wrapped by the error of Merger.Add for a profile
// whose sample types or period type differ from the first profile's.
var ErrIncompatible = errors.New("profiles of different types cannot be merged")

// InputError is the error of Merger.Add: which input failed (its
// position among the calls to Add, from 0, and the name given to Add)
// and why.
type InputError struct {
	Index int
	Name  string
	Err   error
}

// Error implements error.
func (e *InputError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("merge profile %d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("merge profile %d (%s): %v", e.Index, e.Name, e.Err)
}

// Unwrap returns the cause.
func (e *InputError) Unwrap() error { return e.Err }

// Merger merges pprof profiles of one type into one, as
// github.com/google/pprof/profile.Merge (and go tool pprof -proto a b c)
// does, one profile at a time: Add decodes a profile and folds it into
// the aggregate, which is all the Merger holds, so its memory grows with
// the distinct samples of the profiles merged, not with their number.
//
// The result is Merge's, sample for sample: samples with the same stack
// (locations equal by mapping, address within it, function, line, column
// and folding) and the same labels are summed; samples whose values are
// all zero are dropped; locations, functions and mappings are numbered
// in the order samples first reach them; the period is the largest, the
// durations add up, the time is the earliest (Merge's rule: the first
// profile's, then any earlier one), the comments are those of every
// profile once, and the drop and keep patterns are the first profile's.
//
// A Merger is not safe for concurrent use. Its zero value is not ready:
// use NewMerger.
type Merger struct {
	opts  MergeOptions
	calls int // calls to Add
	n     int // profiles merged
	first string

	sampleTypes       []ValueType
	periodType        ValueType
	period            int64
	timeNanos         int64
	durationNanos     int64
	defaultSampleType string
	docURL            string
	dropFrames        string
	keepFrames        string
	comments          []string
	seenComments      map[string]bool

	agg        *aggregator
	mappings   []mergedMapping
	mappingIdx map[mappingKey]int32
	funcs      []mergedFunction
	funcIdx    map[string]int32
	locs       []mergedLocation
	lines      []mergedLine
	locIdx     map[string]int32
	labelSets  []labelSet // [0] is the empty set
	labelIdx   map[string]int32
	labels     labelSet // mapLabels's scratch space

	// decode is the decoder and its buffers, reused from one profile to
	// the next.
	decode decodeState
	// Per-profile tables, reused: the merged number + 1 of each of the
	// profile's mappings, functions, used locations and label sets, 0
	// until it is looked up.
	mapRef   []mappingRef
	funcRef  []int32
	locRef   []int32
	labelRef []int32
	key      []byte
	stack    []int32
	newLines []mergedLine
}

type mergedMapping struct {
	start, limit, offset uint64
	file, buildID        string
	hasFunctions         bool
	hasFilenames         bool
	hasLineNumbers       bool
	hasInlineFrames      bool
}

// mappingKey tells mappings apart as profile.Merge does: by size (rounded
// up to 4 KiB), file offset, and build ID or else file name.
type mappingKey struct {
	size, offset  uint64
	buildIDOrFile string
}

// mappingRef is a profile's mapping in the merged profile: its number +
// 1, and what to add to addresses within it.
type mappingRef struct {
	id     int32
	offset int64
}

type mergedFunction struct {
	name, systemName, file string
	startLine              int64
}

type mergedLocation struct {
	mapping    int32 // number + 1; 0 for none
	address    uint64
	start, end int32 // range in Merger.lines
	folded     bool
}

type mergedLine struct {
	function     int32 // number + 1; 0 for none
	line, column int64
}

// labelSet is a sample's labels as profile.Sample holds them: string
// labels and numeric labels (with their units) by key, keys sorted.
type labelSet struct {
	str []strLabel
	num []numLabel
}

type strLabel struct {
	key    string
	values []string
}

type numLabel struct {
	key    string
	values []int64
	units  []string
}

// NewMerger returns an empty Merger.
func NewMerger(opts MergeOptions) *Merger {
	if opts.MaxDecompressed <= 0 {
		opts.MaxDecompressed = DefaultMaxDecompressed
	}
	if opts.MaxDecoded <= 0 {
		opts.MaxDecoded = DefaultMaxDecoded
	}
	return &Merger{
		opts:         opts,
		seenComments: map[string]bool{},
		mappingIdx:   map[mappingKey]int32{},
		funcIdx:      map[string]int32{},
		locIdx:       map[string]int32{},
		labelSets:    []labelSet{{}},
		labelIdx:     map[string]int32{},
	}
}

// Len returns the number of profiles merged so far.
func (m *Merger) Len() int { return m.n }

// SampleTypes returns the sample types of the profiles merged, nil
// before the first.
func (m *Merger) SampleTypes() []ValueType { return slices.Clone(m.sampleTypes) }

// SampleIndex returns the index of the sample type called name, with
// the rules of the package-level SampleIndex (empty means the default).
func (m *Merger) SampleIndex(name string) (int, error) {
	return sampleIndex(m.sampleTypes, m.defaultSampleType, name)
}

// Add decodes a profile from r, gzipped or not, in the formats ReadStacks
// reads, and merges it into the aggregate; name says which profile it is
// in errors (a file name, a store key), and may be empty.
//
// Its errors are *InputError values naming the input by name and by its
// position among the calls to Add, wrapping the reason: ErrNotProfile,
// *TooLargeError, a truncated gzip stream, ErrOverflow (values that
// would add up beyond an int64, within the profile or in the
// aggregate), or ErrIncompatible (sample or period types that differ
// from the first profile's). A profile that fails leaves the aggregate
// as it was, so the caller may go on with the next one.
func (m *Merger) Add(name string, r io.Reader) error {
	index := m.calls
	m.calls++
	if err := m.add(r); err != nil {
		return &InputError{Index: index, Name: name, Err: err}
	}
	if m.n == 0 {
		m.first = fmt.Sprintf("profile %d", index)
		if name != "" {
			m.first += " (" + name + ")"
		}
	}
	m.n++
	return nil
}

func (m *Merger) add(r io.Reader) error {
	opts := ReadOptions{MaxDecompressed: m.opts.MaxDecompressed, MaxDecoded: m.opts.MaxDecoded, Unmerged: true}
	d, legacy, err := decodeStream(r, opts, true, &m.decode)
	if err != nil {
		return err
	}
	if legacy != nil {
		// A legacy text profile, small by the time Parse accepted it:
		// decode its protobuf form, so one path merges every profile.
		var buf bytes.Buffer
		if err := legacy.WriteUncompressed(&buf); err != nil {
			return fmt.Errorf("encode legacy profile: %w", err)
		}
		if d, _, err = decodeStream(&buf, ReadOptions{Unmerged: true}, true, &m.decode); err != nil {
			return fmt.Errorf("decode legacy profile: %w", err)
		}
	}
	if err := m.compatible(d); err != nil {
		return err
	}
	if err := m.room(d); err != nil {
		return err
	}
	m.combineHeader(d)
	m.fold(d)
	return nil
}

// compatible checks d's sample and period types against the first
// profile's.
func (m *Merger) compatible(d *streamDecoder) error {
	if m.n == 0 {
		return nil
	}
	str := func(i int64) string { return d.strs[i] }
	types := make([]ValueType, len(d.sampleTypes))
	same := len(types) == len(m.sampleTypes)
	for i, vt := range d.sampleTypes {
		types[i] = ValueType{Type: str(vt.typ), Unit: str(vt.unit)}
		same = same && types[i] == m.sampleTypes[i]
	}
	if !same {
		return fmt.Errorf("%w: sample types %s, but %s has %s", ErrIncompatible, typeList(types), m.first, typeList(m.sampleTypes))
	}
	if pt := (ValueType{Type: str(d.periodType.typ), Unit: str(d.periodType.unit)}); pt != m.periodType {
		return fmt.Errorf("%w: period type %s, but %s has %s", ErrIncompatible, typeList([]ValueType{pt}), m.first, typeList([]ValueType{m.periodType}))
	}
	return nil
}

func typeList(types []ValueType) string {
	if len(types) == 0 {
		return "(none)"
	}
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = t.Type + "/" + t.Unit
	}
	return strings.Join(parts, ", ")
}

// room checks that folding d cannot fail: its values added to the
// aggregate's stay within an int64, and the tables within their 32-bit
// numbering. Checked first, so that a profile is merged whole or not at
// all.
func (m *Merger) room(d *streamDecoder) error {
	if m.agg != nil {
		for i, v := range d.agg.magnitude {
			if mag := m.agg.magnitude[i]; mag > math.MaxInt64-v {
				return fmt.Errorf("%w (sample type %d, with the profiles merged before it)", ErrOverflow, i+1)
			}
		}
	}
	const most = 1<<31 - 2
	switch {
	case m.agg != nil && m.agg.values.n+d.agg.values.n > most,
		len(m.locs)+len(d.usedIDs) > most,
		len(m.lines)+len(d.lines) > most,
		len(m.funcs)+len(d.funcs) > most,
		len(m.mappings)+int(d.nMappings) > most,
		len(m.labelSets)+d.detail.sets() > most:
		return errors.New("merged profile would have too many samples, locations, functions, mappings or label sets")
	}
	return nil
}

// combineHeader combines d's header fields with the aggregate's, as
// profile.Merge combines its profiles'.
func (m *Merger) combineHeader(d *streamDecoder) {
	str := func(i int64) string { return d.strs[i] }
	if m.n == 0 {
		m.sampleTypes = make([]ValueType, len(d.sampleTypes))
		for i, vt := range d.sampleTypes {
			m.sampleTypes[i] = ValueType{Type: str(vt.typ), Unit: str(vt.unit)}
		}
		m.periodType = ValueType{Type: str(d.periodType.typ), Unit: str(d.periodType.unit)}
		m.dropFrames, m.keepFrames = str(d.dropFrames), str(d.keepFrames)
		m.agg = newAggregator(len(d.sampleTypes), d.agg.values.n)
		m.agg.labeled = true
	}
	if m.timeNanos == 0 || d.timeNanos < m.timeNanos {
		m.timeNanos = d.timeNanos
	}
	m.durationNanos += d.duration
	if m.period == 0 || m.period < d.period {
		m.period = d.period
	}
	for _, i := range d.detail.comments {
		if c := str(i); !m.seenComments[c] {
			m.comments = append(m.comments, c)
			m.seenComments[c] = true
		}
	}
	if m.defaultSampleType == "" {
		m.defaultSampleType = str(d.defaultSampleType)
	}
	if m.docURL == "" {
		m.docURL = str(d.docURL)
	}
}

// fold adds d's samples to the aggregate. The profile's mappings,
// locations, functions and label sets are looked up in the merged ones
// when a sample first reaches them, so that they are numbered as
// profile.Merge numbers them.
func (m *Merger) fold(d *streamDecoder) {
	m.mapRef = resetRefs(m.mapRef, int(d.nMappings))
	m.funcRef = resetRefs(m.funcRef, len(d.funcs))
	m.locRef = resetRefs(m.locRef, len(d.usedIDs))
	m.labelRef = resetRefs(m.labelRef, d.detail.sets())
	if len(m.mappings) == 0 && len(d.detail.mappings) > 0 {
		// Merge's rule: the first mapping of the first profile that has
		// any comes first (the main binary, by convention).
		m.mapMapping(d, 0)
	}
	agg := d.agg
	guess := -1
	for i := range agg.values.n {
		vals := agg.values.at(i)
		if isZero(vals) {
			continue
		}
		stack := m.stack[:0]
		for _, li := range agg.store.stack(i) {
			g := m.locRef[li]
			if g == 0 {
				g = m.mapLocation(d, li)
				m.locRef[li] = g
			}
			stack = append(stack, g-1)
		}
		m.stack = stack
		set := agg.labels.at(i)[0]
		g := m.labelRef[set]
		if g == 0 {
			g = m.mapLabels(d, set) + 1
			m.labelRef[set] = g
		}
		// Cannot fail: room checked the values and the sizes. Profiles of
		// one process list their samples in much the same order (the Go
		// runtime's newest first), so the next sample is likely the
		// merged sample after this one's.
		guess, _ = m.agg.addGuess(stack, g-1, vals, guess+1)
	}
}

func resetRefs[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func isZero(vals []int64) bool {
	for _, v := range vals {
		if v != 0 {
			return false
		}
	}
	return true
}

// mapMapping returns the merged mapping of d's mapping number i (in
// profile order), adding it when no merged mapping has its key.
func (m *Merger) mapMapping(d *streamDecoder, i int32) mappingRef {
	if r := m.mapRef[i]; r.id != 0 {
		return r
	}
	src := &d.detail.mappings[i]
	file, buildID := d.strs[src.file], d.strs[src.buildID]
	const rounding = 0x1000
	size := src.limit - src.start
	size = size + rounding - 1
	size -= size % rounding
	k := mappingKey{size: size, offset: src.offset, buildIDOrFile: buildID}
	if buildID == "" {
		k.buildIDOrFile = file
	}
	var r mappingRef
	if g, ok := m.mappingIdx[k]; ok {
		r = mappingRef{id: g + 1, offset: int64(m.mappings[g].start) - int64(src.start)}
	} else {
		g := int32(len(m.mappings))
		m.mappings = append(m.mappings, mergedMapping{
			start: src.start, limit: src.limit, offset: src.offset,
			file: file, buildID: buildID,
			hasFunctions: src.hasFunctions, hasFilenames: src.hasFilenames,
			hasLineNumbers: src.hasLineNumbers, hasInlineFrames: src.hasInlineFrames,
		})
		m.mappingIdx[k] = g
		r = mappingRef{id: g + 1}
	}
	m.mapRef[i] = r
	return r
}

// mapFunction returns the merged number + 1 of d's function of id,
// adding it when no merged function has its name, system name, file and
// start line.
func (m *Merger) mapFunction(d *streamDecoder, id uint64) int32 {
	i, ok := d.funcByID.get(id)
	if !ok {
		return 0 // check refuses lines without a function
	}
	if g := m.funcRef[i]; g != 0 {
		return g
	}
	f := &d.funcs[i]
	name, system, file := d.strs[f.name], d.strs[f.systemName], d.strs[f.filename]
	k := binary.AppendVarint(m.key[:0], f.startLine)
	k = appendString(k, name)
	k = appendString(k, system)
	k = appendString(k, file)
	m.key = k
	g, ok := m.funcIdx[string(k)]
	if !ok {
		g = int32(len(m.funcs))
		m.funcs = append(m.funcs, mergedFunction{name: name, systemName: system, file: file, startLine: f.startLine})
		m.funcIdx[string(k)] = g
	}
	m.funcRef[i] = g + 1
	return g + 1
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// mapLocation returns the merged number + 1 of d's used location li,
// adding it when no merged location has its key: its mapping, its
// address relative to the mapping's start, its lines and folding.
func (m *Merger) mapLocation(d *streamDecoder, li int32) int32 {
	di, _ := d.locByID.get(d.usedIDs[li]) // check made sure it is there
	src := &d.locs[di]
	var mapping mappingRef
	if mi, ok := d.mappings.get(src.mapping); ok && src.mapping != 0 {
		mapping = m.mapMapping(d, mi)
	}
	address := uint64(int64(src.address) + mapping.offset)
	keyAddress := address
	if mapping.id != 0 {
		keyAddress -= m.mappings[mapping.id-1].start
	}
	lines := m.newLines[:0]
	for _, ln := range d.lines[src.start:src.end] {
		lines = append(lines, mergedLine{function: m.mapFunction(d, ln.function), line: ln.line, column: ln.column})
	}
	m.newLines = lines
	k := binary.AppendUvarint(m.key[:0], uint64(mapping.id))
	k = binary.AppendUvarint(k, keyAddress)
	if src.folded {
		k = append(k, 1)
	} else {
		k = append(k, 0)
	}
	k = binary.AppendUvarint(k, uint64(len(lines)))
	for _, ln := range lines {
		k = binary.AppendUvarint(k, uint64(ln.function))
		k = binary.AppendVarint(k, ln.line)
		k = binary.AppendVarint(k, ln.column)
	}
	m.key = k
	if g, ok := m.locIdx[string(k)]; ok {
		return g + 1
	}
	g := int32(len(m.locs))
	start := int32(len(m.lines))
	m.lines = append(m.lines, lines...)
	m.locs = append(m.locs, mergedLocation{mapping: mapping.id, address: address, start: start, end: int32(len(m.lines)), folded: src.folded})
	m.locIdx[string(k)] = g
	return g + 1
}

// mapLabels returns the merged number of d's label set i, adding it when
// no merged set is equal. Labels are resolved as profile.Parse resolves
// them (a label with a string value is a string label, one with a number
// or unit a numeric label, one with neither is dropped; units padded to
// the values) and keyed as profile.Merge keys them, so samples merge
// exactly when Merge merges them.
func (m *Merger) mapLabels(d *streamDecoder, i int32) int32 {
	raw := d.detail.set(i)
	if len(raw) == 0 {
		return 0
	}
	str := func(i int64) string { return d.strs[i] }
	// Built in scratch space, copied only when new.
	ls := &m.labels
	ls.str, ls.num = ls.str[:0], ls.num[:0]
	for _, l := range raw {
		key := str(l.key)
		switch {
		case l.str != 0:
			j := slices.IndexFunc(ls.str, func(s strLabel) bool { return s.key == key })
			if j < 0 {
				j = len(ls.str)
				ls.str = growOne(ls.str)
				ls.str[j].key, ls.str[j].values = key, ls.str[j].values[:0]
			}
			ls.str[j].values = append(ls.str[j].values, str(l.str))
		case l.num != 0 || l.unit != 0:
			j := slices.IndexFunc(ls.num, func(n numLabel) bool { return n.key == key })
			if j < 0 {
				j = len(ls.num)
				ls.num = growOne(ls.num)
				n := &ls.num[j]
				n.key, n.values, n.units = key, n.values[:0], n.units[:0]
			}
			n := &ls.num[j]
			if l.unit != 0 {
				n.units = padUnits(n.units, len(n.values))
				n.units = append(n.units, str(l.unit))
			}
			n.values = append(n.values, l.num)
		}
	}
	for j := range ls.num {
		if n := &ls.num[j]; len(n.units) > 0 {
			n.units = padUnits(n.units, len(n.values))
		}
	}
	slices.SortFunc(ls.str, func(a, b strLabel) int { return strings.Compare(a.key, b.key) })
	slices.SortFunc(ls.num, func(a, b numLabel) int { return strings.Compare(a.key, b.key) })

	// The labels part of profile.Merge's sample key.
	k := m.key[:0]
	for _, s := range ls.str {
		k = appendString(k, s.key)
		k = binary.AppendUvarint(k, uint64(len(s.values)))
		for _, v := range s.values {
			k = appendString(k, v)
		}
	}
	for _, n := range ls.num {
		k = appendString(k, n.key)
		k = binary.AppendUvarint(k, uint64(len(n.values)))
		for _, v := range n.values {
			k = binary.AppendUvarint(k, uint64(v))
		}
		k = binary.AppendUvarint(k, uint64(len(n.units)))
		for _, u := range n.units {
			k = appendString(k, u)
		}
	}
	m.key = k
	if len(k) == 0 {
		return 0 // only labels that decode to nothing
	}
	if g, ok := m.labelIdx[string(k)]; ok {
		return g
	}
	g := int32(len(m.labelSets))
	m.labelSets = append(m.labelSets, ls.clone())
	m.labelIdx[string(k)] = g
	return g
}

// growOne returns s one element longer, reusing what its capacity holds.
func growOne[T any](s []T) []T {
	if len(s) < cap(s) {
		return s[:len(s)+1]
	}
	var zero T
	return append(s, zero)
}

// clone returns a copy of ls that shares no memory with it.
func (ls *labelSet) clone() labelSet {
	out := labelSet{str: make([]strLabel, len(ls.str)), num: make([]numLabel, len(ls.num))}
	for j, s := range ls.str {
		out.str[j] = strLabel{key: s.key, values: slices.Clone(s.values)}
	}
	for j, n := range ls.num {
		out.num[j] = numLabel{key: n.key, values: slices.Clone(n.values), units: slices.Clone(n.units)}
	}
	return out
}

// padUnits pads units with empty strings to n, as profile.Parse does.
func padUnits(units []string, n int) []string {
	for len(units) < n {
		units = append(units, "")
	}
	return units
}

// sampleIndex finds a sample type by name with SampleIndex's rules.
func sampleIndex(types []ValueType, defaultType, name string) (int, error) {
	if len(types) == 0 {
		return 0, errors.New("profile has no sample types")
	}
	find := func(name string) int {
		return slices.IndexFunc(types, func(t ValueType) bool { return t.Type == name })
	}
	if name == "" {
		if i := find(defaultType); defaultType != "" && i >= 0 {
			return i, nil
		}
		return len(types) - 1, nil
	}
	if i := find(name); i >= 0 {
		return i, nil
	}
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = t.Type
	}
	return 0, fmt.Errorf("sample type %q not in profile; it has %s", name, strings.Join(names, ", "))
}
