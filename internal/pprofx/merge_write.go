package pprofx

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// MergeLevel is the gzip level of Merger.WriteProfile: the fastest,
// as the Go runtime writes its profiles; a merged profile is written
// for a reader, not kept.
const MergeLevel = gzip.BestSpeed

// errNoProfiles is the error of the Merger's writers before any profile
// was merged.
var errNoProfiles = errors.New("no profiles to merge")

// WriteProfile writes the merged profile to w as a gzipped pprof
// protobuf, which profile.Parse reads back as what profile.Merge returns
// for the same profiles. It fails when no profile was merged.
func (m *Merger) WriteProfile(w io.Writer) error {
	if m.n == 0 {
		return fmt.Errorf("write merged profile: %w", errNoProfiles)
	}
	zw, err := gzip.NewWriterLevel(w, MergeLevel)
	if err != nil {
		return fmt.Errorf("write merged profile: %w", err)
	}
	e := &encoder{w: zw, strings: map[string]uint64{"": 0}, table: []string{""}}
	m.encode(e)
	if e.err == nil {
		e.err = zw.Close()
	}
	if e.err != nil {
		return fmt.Errorf("write merged profile: %w", e.err)
	}
	return nil
}

// numbering gives the merged samples, locations, functions and mappings
// their ids in the profile written: their own (index + 1) unless some
// samples add up to zero, which profile.Merge drops, compacting the
// tables as it does (merging its result again): the first mapping first,
// then everything in the order the remaining samples reach it.
type numbering struct {
	compact             bool
	keep                []bool  // per sample
	loc, fn, mapping    []int32 // new id per merged one (0: dropped)
	locs, fns, mappings []int32 // merged indices in new order
}

func (m *Merger) numbering() numbering {
	var nb numbering
	agg := m.agg
	for i := range agg.values.n {
		if isZero(agg.values.at(i)) {
			nb.compact = true
			break
		}
	}
	if !nb.compact {
		return nb
	}
	nb.keep = make([]bool, agg.values.n)
	nb.loc = make([]int32, len(m.locs))
	nb.fn = make([]int32, len(m.funcs))
	nb.mapping = make([]int32, len(m.mappings))
	addMapping := func(g int32) {
		if nb.mapping[g] == 0 {
			nb.mappings = append(nb.mappings, g)
			nb.mapping[g] = int32(len(nb.mappings))
		}
	}
	if len(m.mappings) > 0 {
		addMapping(0)
	}
	for i := range agg.values.n {
		if isZero(agg.values.at(i)) {
			continue
		}
		nb.keep[i] = true
		for _, l := range agg.store.stack(i) {
			if nb.loc[l] != 0 {
				continue
			}
			loc := &m.locs[l]
			if loc.mapping != 0 {
				addMapping(loc.mapping - 1)
			}
			for _, ln := range m.lines[loc.start:loc.end] {
				if f := ln.function - 1; f >= 0 && nb.fn[f] == 0 {
					nb.fns = append(nb.fns, f)
					nb.fn[f] = int32(len(nb.fns))
				}
			}
			nb.locs = append(nb.locs, l)
			nb.loc[l] = int32(len(nb.locs))
		}
	}
	return nb
}

func (nb *numbering) kept(i int) bool { return !nb.compact || nb.keep[i] }

// id returns the new id of merged entry i of a table (index + 1 unless
// compacting).
func (nb *numbering) id(table []int32, i int32) uint64 {
	if !nb.compact {
		return uint64(i + 1)
	}
	return uint64(table[i])
}

// order returns the merged indices of a table of n entries in the order
// they are written.
func (nb *numbering) order(table []int32, n int) []int32 {
	if nb.compact {
		return table
	}
	all := make([]int32, n)
	for i := range all {
		all[i] = int32(i)
	}
	return all
}

// Field numbers of profile.proto.
const (
	fieldSampleType        = 1
	fieldSample            = 2
	fieldMapping           = 3
	fieldLocation          = 4
	fieldFunction          = 5
	fieldStringTable       = 6
	fieldDropFrames        = 7
	fieldKeepFrames        = 8
	fieldTimeNanos         = 9
	fieldDurationNanos     = 10
	fieldPeriodType        = 11
	fieldPeriod            = 12
	fieldComment           = 13
	fieldDefaultSampleType = 14
	fieldDocURL            = 15
)

func (m *Merger) encode(e *encoder) {
	nb := m.numbering()
	for _, st := range m.sampleTypes {
		e.valueType(fieldSampleType, st)
	}

	// Each label set's label messages, encoded once.
	labels := make([][]byte, len(m.labelSets))
	for i, ls := range m.labelSets {
		var b []byte
		for _, s := range ls.str {
			for _, v := range s.values {
				msg := appendUintField(nil, 1, e.str(s.key))
				msg = appendUintField(msg, 2, e.str(v))
				b = appendBytesField(b, 3, msg)
			}
		}
		for _, n := range ls.num {
			for j, v := range n.values {
				msg := appendUintField(nil, 1, e.str(n.key))
				msg = appendUintField(msg, 3, uint64(v))
				if len(n.units) > 0 {
					msg = appendUintField(msg, 4, e.str(n.units[j]))
				}
				b = appendBytesField(b, 3, msg)
			}
		}
		labels[i] = b
	}

	agg := m.agg
	var msg, packed []byte
	for i := range agg.values.n {
		if !nb.kept(i) {
			continue
		}
		msg = msg[:0]
		if stack := agg.store.stack(i); len(stack) > 0 {
			packed = packed[:0]
			for _, l := range stack {
				packed = binary.AppendUvarint(packed, nb.id(nb.loc, l))
			}
			msg = appendBytesField(msg, 1, packed)
		}
		packed = packed[:0]
		for _, v := range agg.values.at(i) {
			packed = binary.AppendUvarint(packed, uint64(v))
		}
		if len(packed) > 0 {
			msg = appendBytesField(msg, 2, packed)
		}
		msg = append(msg, labels[agg.labels.at(i)[0]]...)
		e.message(fieldSample, msg)
	}

	for _, g := range nb.order(nb.mappings, len(m.mappings)) {
		mp := &m.mappings[g]
		msg = appendUintField(msg[:0], 1, nb.id(nb.mapping, g))
		msg = appendUintField(msg, 2, mp.start)
		msg = appendUintField(msg, 3, mp.limit)
		msg = appendUintField(msg, 4, mp.offset)
		msg = appendUintField(msg, 5, e.str(mp.file))
		msg = appendUintField(msg, 6, e.str(mp.buildID))
		msg = appendBoolField(msg, 7, mp.hasFunctions)
		msg = appendBoolField(msg, 8, mp.hasFilenames)
		msg = appendBoolField(msg, 9, mp.hasLineNumbers)
		msg = appendBoolField(msg, 10, mp.hasInlineFrames)
		e.message(fieldMapping, msg)
	}

	var line []byte
	for _, g := range nb.order(nb.locs, len(m.locs)) {
		loc := &m.locs[g]
		msg = appendUintField(msg[:0], 1, nb.id(nb.loc, g))
		if loc.mapping != 0 {
			msg = appendUintField(msg, 2, nb.id(nb.mapping, loc.mapping-1))
		}
		msg = appendUintField(msg, 3, loc.address)
		for _, ln := range m.lines[loc.start:loc.end] {
			line = line[:0]
			if ln.function != 0 {
				line = appendUintField(line, 1, nb.id(nb.fn, ln.function-1))
			}
			line = appendUintField(line, 2, uint64(ln.line))
			line = appendUintField(line, 3, uint64(ln.column))
			msg = appendBytesField(msg, 4, line)
		}
		msg = appendBoolField(msg, 5, loc.folded)
		e.message(fieldLocation, msg)
	}

	for _, g := range nb.order(nb.fns, len(m.funcs)) {
		f := &m.funcs[g]
		msg = appendUintField(msg[:0], 1, nb.id(nb.fn, g))
		msg = appendUintField(msg, 2, e.str(f.name))
		msg = appendUintField(msg, 3, e.str(f.systemName))
		msg = appendUintField(msg, 4, e.str(f.file))
		msg = appendUintField(msg, 5, uint64(f.startLine))
		e.message(fieldFunction, msg)
	}

	// The header's strings, then the table, which must come after every
	// use of a string has been numbered.
	dropFrames, keepFrames := e.str(m.dropFrames), e.str(m.keepFrames)
	var periodType []byte
	if m.periodType != (ValueType{}) {
		periodType = appendUintField(nil, 1, e.str(m.periodType.Type))
		periodType = appendUintField(periodType, 2, e.str(m.periodType.Unit))
	}
	comments := make([]uint64, len(m.comments))
	for i, c := range m.comments {
		comments[i] = e.str(c)
	}
	defaultType, docURL := e.str(m.defaultSampleType), e.str(m.docURL)
	for _, s := range e.table {
		e.bytes(fieldStringTable, s)
	}
	var tail []byte
	tail = appendUintField(tail, fieldDropFrames, dropFrames)
	tail = appendUintField(tail, fieldKeepFrames, keepFrames)
	tail = appendUintField(tail, fieldTimeNanos, uint64(m.timeNanos))
	tail = appendUintField(tail, fieldDurationNanos, uint64(m.durationNanos))
	if periodType != nil {
		tail = appendBytesField(tail, fieldPeriodType, periodType)
	}
	tail = appendUintField(tail, fieldPeriod, uint64(m.period))
	for _, c := range comments {
		tail = binary.AppendUvarint(tail, fieldComment<<3)
		tail = binary.AppendUvarint(tail, c)
	}
	tail = appendUintField(tail, fieldDefaultSampleType, defaultType)
	tail = appendUintField(tail, fieldDocURL, docURL)
	e.raw(tail)
	e.flush()
}

// encoder writes a profile's top-level fields through a buffer and
// numbers its strings.
type encoder struct {
	w       io.Writer
	buf     []byte
	err     error
	strings map[string]uint64
	table   []string
}

func (e *encoder) str(s string) uint64 {
	if i, ok := e.strings[s]; ok {
		return i
	}
	i := uint64(len(e.table))
	e.strings[s] = i
	e.table = append(e.table, s)
	return i
}

func (e *encoder) valueType(field int, vt ValueType) {
	msg := appendUintField(nil, 1, e.str(vt.Type))
	msg = appendUintField(msg, 2, e.str(vt.Unit))
	e.message(field, msg)
}

func (e *encoder) message(field int, msg []byte) {
	e.buf = appendBytesField(e.buf, field, msg)
	e.maybeFlush()
}

func (e *encoder) bytes(field int, s string) {
	e.buf = binary.AppendUvarint(e.buf, uint64(field)<<3|2)
	e.buf = binary.AppendUvarint(e.buf, uint64(len(s)))
	e.buf = append(e.buf, s...)
	e.maybeFlush()
}

func (e *encoder) raw(b []byte) {
	e.buf = append(e.buf, b...)
	e.maybeFlush()
}

func (e *encoder) maybeFlush() {
	if len(e.buf) >= 64<<10 {
		e.flush()
	}
}

func (e *encoder) flush() {
	if e.err == nil && len(e.buf) > 0 {
		_, e.err = e.w.Write(e.buf)
	}
	e.buf = e.buf[:0]
}

// appendUintField appends a varint field, unless v is 0 (proto3's
// default, which profile.Write leaves out as well).
func appendUintField(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = binary.AppendUvarint(b, uint64(field)<<3)
	return binary.AppendUvarint(b, v)
}

func appendBoolField(b []byte, field int, v bool) []byte {
	if !v {
		return b
	}
	return appendUintField(b, field, 1)
}

func appendBytesField(b []byte, field int, data []byte) []byte {
	b = binary.AppendUvarint(b, uint64(field)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

// WriteFolded writes the merged profile as folded stacks, the input of
// flamegraph.pl, speedscope and other flame graph tools: one line per
// distinct stack of frame names, "frame;frame;frame value", root first,
// with the values of sample type sampleIndex (see SampleIndex) summed
// over the samples whose frames have the same names (labels, addresses
// and lines set apart in the profile are not in folded stacks). Frames
// are functions, inlined ones included, named as Stacks.FunctionName
// names them (FoldedFrame keeps a name from breaking the format); a
// sample without a stack is "[no stack]". Lines are sorted, and stacks
// whose values add up to zero are left out. These are the lines that
// flame.WriteFolded writes for the same profile unpruned.
func (m *Merger) WriteFolded(w io.Writer, sampleIndex int) error {
	if m.n == 0 {
		return fmt.Errorf("write folded stacks: %w", errNoProfiles)
	}
	if sampleIndex < 0 || sampleIndex >= len(m.sampleTypes) {
		return fmt.Errorf("write folded stacks: sample index %d out of range: the profiles have %d sample types", sampleIndex, len(m.sampleTypes))
	}
	// Frame names per location, outermost first, each ending in ';'.
	names := make([]string, len(m.locs))
	var b strings.Builder
	for i, loc := range m.locs {
		b.Reset()
		lines := m.lines[loc.start:loc.end]
		if len(lines) == 0 {
			b.WriteString(FoldedFrame(addressName(loc.address)))
			b.WriteByte(';')
		}
		for j := len(lines) - 1; j >= 0; j-- {
			if f := lines[j].function; f != 0 {
				b.WriteString(FoldedFrame(m.funcs[f-1].name))
			} else {
				b.WriteString(FoldedFrame(addressName(loc.address)))
			}
			b.WriteByte(';')
		}
		names[i] = b.String()
	}
	sums := map[string]int64{}
	agg := m.agg
	var path []byte
	for i := range agg.values.n {
		v := agg.values.at(i)[sampleIndex]
		if v == 0 {
			continue
		}
		stack := agg.store.stack(i)
		path = path[:0]
		for j := len(stack) - 1; j >= 0; j-- {
			path = append(path, names[stack[j]]...)
		}
		if len(path) == 0 {
			path = append(path, "[no stack];"...)
		}
		path = path[:len(path)-1]
		if old, ok := sums[string(path)]; ok {
			sums[string(path)] = old + v
		} else {
			sums[string(path)] = v
		}
	}
	keys := make([]string, 0, len(sums))
	for k, v := range sums {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	bw := bufio.NewWriterSize(w, 64<<10)
	var line []byte
	for _, k := range keys {
		line = append(line[:0], k...)
		line = append(line, ' ')
		line = strconv.AppendInt(line, sums[k], 10)
		line = append(line, '\n')
		bw.Write(line)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write folded stacks: %w", err)
	}
	return nil
}

// FoldedFrame keeps a frame name from breaking the folded format: no
// semicolons (frame separators) or line breaks.
func FoldedFrame(name string) string {
	if !strings.ContainsAny(name, ";\n\r") {
		return name
	}
	return strings.NewReplacer(";", ":", "\n", " ", "\r", " ").Replace(name)
}
