package pprofx

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
)

// ReadOptions tune ReadStacks.
type ReadOptions struct {
	// MaxDecompressed caps the size of the profile's protobuf, after
	// decompression when the input is gzipped; a value ≤ 0 means
	// DefaultMaxDecompressed. Beyond it ReadStacks returns a
	// *TooLargeError. ReadStacks keeps aggregated stacks, not the decoded
	// bytes, so its memory does not grow with this limit: the limit bounds
	// the time a gzip bomb can take.
	MaxDecompressed int64
	// Unmerged keeps every sample as a stack of its own, even when
	// another has the same locations: faster, for a caller that merges
	// stacks itself (a series of snapshots matched across profiles).
	// Totals are the same; Len counts samples.
	Unmerged bool
	// MaxDecoded, when above 0, caps what profile.Parse would take to
	// decode the profile, estimated sample by sample as Parse estimates
	// it (Limits.MaxDecoded): for a caller that turns the stacks into a
	// profile (Stacks.Profile), which costs as much, as unmerged stacks
	// do. Beyond it ReadStacks returns a *TooLargeError.
	MaxDecoded int64
}

// ReadStacks decodes a pprof profile from r, gzipped or not, and
// aggregates its samples by stack as it reads: the decoded profile is never
// held in memory, only the distinct stacks (as location indices), their
// values and the location and function tables. Samples come before the
// locations, functions and strings they refer to in the Go runtime's
// output, so ids are resolved at the end.
//
// It accepts what Parse accepts and returns the same result as StacksOf
// of Parse's profile: the same checks of ids, string indices and value
// counts apply, and input that is not a protobuf (the legacy text
// formats) is handed to Parse when the decoder stops within its first
// megabytes. Errors are those of Parse: ErrNotProfile with a reason,
// *TooLargeError, a truncated gzip stream, or ErrOverflow.
//
// Gzip decompression runs in a goroutine of its own, overlapping the
// decoding; it has ended when ReadStacks returns.
func ReadStacks(r io.Reader, opts ReadOptions) (*Stacks, error) {
	d, legacy, err := decodeStream(r, opts, false, nil)
	if err != nil {
		return nil, err
	}
	if legacy != nil {
		return StacksOf(legacy)
	}
	return d.finish(), nil
}

// decodeState is what decoding one profile after another reuses: the
// read buffers, the gzip reader, and the decoder with its tables.
type decodeState struct {
	in, br *bufio.Reader
	zr     *gzip.Reader
	chunks [][]byte // the asyncReader's
	prefix []byte
	d      *streamDecoder
}

// maxKeptPrefix is the largest prefix buffer decodeState keeps.
const maxKeptPrefix = 1 << 20

// decodeStream decodes a profile from r, gzipped or not, as ReadStacks
// describes, and returns the decoder having read and checked the whole
// protobuf, or, for input in one of the legacy formats, the profile Parse
// made of it. With detail, the decoder keeps what merging needs beyond
// the stacks (Merger). st, when not nil, holds what an earlier call
// allocated, for this one to reuse: the decoder it returned is then
// reset.
func decodeStream(r io.Reader, opts ReadOptions, detailed bool, st *decodeState) (*streamDecoder, *profile.Profile, error) {
	limit := opts.MaxDecompressed
	if limit <= 0 {
		limit = DefaultMaxDecompressed
	}
	if st == nil {
		st = &decodeState{}
	}
	in := resetReader(&st.in, r, 64<<10)
	head, err := in.Peek(2)
	if len(head) == 0 {
		if err != nil && err != io.EOF {
			return nil, nil, fmt.Errorf("read profile: %w", err)
		}
		return nil, nil, fmt.Errorf("%w: empty input", ErrNotProfile)
	}
	var src io.Reader = in
	gzipped := isGzip(head)
	if gzipped {
		if st.zr == nil {
			st.zr, err = gzip.NewReader(in)
		} else {
			err = st.zr.Reset(in)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("decompress profile: %w", gzipErr(err))
		}
		zr := st.zr
		defer zr.Close()
		ar := newAsyncReader(zr, 256<<10, st.chunks)
		st.chunks = ar.bufs
		defer ar.close()
		src = ar
	}
	lim := &limitedReader{r: src, left: limit, limit: limit, gzipped: gzipped}
	rec := &prefixRecorder{r: lim, max: 4 << 20, buf: st.prefix[:0]}
	defer func() {
		if cap(rec.buf) <= maxKeptPrefix {
			st.prefix = rec.buf[:0]
		}
	}()
	br := resetReader(&st.br, rec, 256<<10)

	head, err = br.Peek(2)
	switch {
	case len(head) == 0:
		if err != nil && err != io.EOF {
			return nil, nil, err
		}
		if gzipped {
			return nil, nil, fmt.Errorf("%w: empty after decompression", ErrNotProfile)
		}
		return nil, nil, fmt.Errorf("%w: empty input", ErrNotProfile)
	case gzipped && isGzip(head):
		return nil, nil, fmt.Errorf("%w: gzip inside gzip", ErrNotProfile)
	}

	if st.d == nil {
		st.d = newStreamDecoder(br)
	} else {
		st.d.reset(br)
	}
	d := st.d
	d.unmerged = opts.Unmerged
	d.maxCost = opts.MaxDecoded
	if detailed {
		if d.detail == nil {
			d.detail, d.strings = &detail{}, map[string]string{}
		}
		d.detail.reset()
	} else {
		d.detail, d.strings = nil, nil
	}
	// Once a sample has decoded, the input is a protobuf profile: no
	// legacy format would need the prefix handed to Parse.
	d.isProtobuf = rec.stop
	err = d.decode()
	if err == nil {
		return d, nil, nil
	}
	var format *formatError
	if !errors.As(err, &format) {
		// I/O: a truncated or oversized stream.
		return nil, nil, err
	}
	if rec.overflowed {
		return nil, nil, fmt.Errorf("%w: %v", ErrNotProfile, format.err)
	}
	// Not a protobuf profile as far as the decoder got: let Parse decide,
	// with the legacy formats it knows, on the whole input, when it is
	// small enough for Parse to decode it (costLegacy a byte). Beyond,
	// the rest is only counted, so junk costs no memory.
	maxLegacy := DefaultMaxDecoded / costLegacy
	rest, err := io.ReadAll(io.LimitReader(lim, maxLegacy+1-int64(len(rec.buf))))
	if err != nil {
		return nil, nil, err
	}
	data := append(rec.buf, rest...)
	rec.buf = nil // data goes to Parse, which may keep it
	if size := int64(len(data)); size > maxLegacy {
		n, err := io.Copy(io.Discard, lim)
		if err != nil {
			return nil, nil, err
		}
		return nil, nil, &TooLargeError{Limit: DefaultMaxDecoded, Decoded: true, Estimate: (size + n) * costLegacy}
	}
	p, err := Parse(data, DefaultMaxDecompressed)
	if err != nil {
		return nil, nil, err
	}
	return nil, p, nil
}

// resetReader returns *b reset to read from r, making it first.
func resetReader(b **bufio.Reader, r io.Reader, size int) *bufio.Reader {
	if *b == nil {
		*b = bufio.NewReaderSize(r, size)
	} else {
		(*b).Reset(r)
	}
	return *b
}

// formatError is a protobuf or validity error of the decoder, as opposed
// to an I/O error of the stream.
type formatError struct{ err error }

func (e *formatError) Error() string { return e.err.Error() }
func (e *formatError) Unwrap() error { return e.err }

func formatErr(format string, args ...any) error {
	return &formatError{err: fmt.Errorf(format, args...)}
}

var (
	errBadVarint    = &formatError{err: errors.New("bad varint")}
	errTypeMismatch = &formatError{err: errors.New("type mismatch")}
	errTruncated    = &formatError{err: errors.New("protobuf is truncated")}
)

// limitedReader fails with a *TooLargeError past limit bytes.
type limitedReader struct {
	r           io.Reader
	left, limit int64
	gzipped     bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, &TooLargeError{Limit: l.limit}
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, &TooLargeError{Limit: l.limit}
	}
	if err != nil && err != io.EOF && l.gzipped {
		err = fmt.Errorf("decompress profile: %w", gzipErr(err))
	}
	return n, err
}

// prefixRecorder keeps the first max bytes read through it.
type prefixRecorder struct {
	r          io.Reader
	buf        []byte
	max        int
	overflowed bool
}

// stop ends the recording: the decoder knows the input is a protobuf.
func (p *prefixRecorder) stop() { p.overflowed, p.buf = true, p.buf[:0] }

func (p *prefixRecorder) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if !p.overflowed {
		if len(p.buf)+n > p.max {
			p.overflowed, p.buf = true, p.buf[:0]
		} else {
			p.buf = append(p.buf, b[:n]...)
		}
	}
	return n, err
}

// asyncReader reads its source in a goroutine, a chunk ahead of its
// reader.
type asyncReader struct {
	bufs       [][]byte // every chunk, to reuse once closed
	full, free chan []byte
	stop       chan struct{}
	wg         sync.WaitGroup
	err        error // the source's error, set before full is closed
	cur, chunk []byte
	once       sync.Once
}

// newAsyncReader starts reading src in chunks of size bytes, four at a
// time, reusing bufs when they are the chunks of a closed asyncReader.
func newAsyncReader(src io.Reader, size int, bufs [][]byte) *asyncReader {
	a := &asyncReader{
		bufs: bufs,
		full: make(chan []byte, 2),
		free: make(chan []byte, 4),
		stop: make(chan struct{}),
	}
	if len(a.bufs) != 4 || len(a.bufs[0]) != size {
		a.bufs = make([][]byte, 4)
		for i := range a.bufs {
			a.bufs[i] = make([]byte, size)
		}
	}
	for _, b := range a.bufs {
		a.free <- b
	}
	a.wg.Add(1)
	go a.fill(src)
	return a
}

func (a *asyncReader) fill(src io.Reader) {
	defer a.wg.Done()
	defer close(a.full)
	for {
		var buf []byte
		select {
		case buf = <-a.free:
		case <-a.stop:
			return
		}
		// Fill the chunk; a source error (io.EOF at the end) is passed on
		// after the bytes read before it.
		n := 0
		var err error
		for n < len(buf) && err == nil {
			var m int
			m, err = src.Read(buf[n:])
			n += m
		}
		if n > 0 {
			select {
			case a.full <- buf[:n]:
			case <-a.stop:
				return
			}
		}
		if err != nil {
			a.err = err
			return
		}
	}
}

func (a *asyncReader) Read(p []byte) (int, error) {
	for len(a.cur) == 0 {
		if a.chunk != nil {
			a.free <- a.chunk[:cap(a.chunk)]
			a.chunk = nil
		}
		c, ok := <-a.full
		if !ok {
			return 0, a.err
		}
		a.chunk, a.cur = c, c
	}
	n := copy(p, a.cur)
	a.cur = a.cur[n:]
	return n, nil
}

// close stops the goroutine and waits for it.
func (a *asyncReader) close() {
	a.once.Do(func() { close(a.stop) })
	a.wg.Wait()
}

// idIndex maps profile ids to dense indices: a slice for the small ids
// the Go runtime writes, a map for the others.
type idIndex struct {
	dense  []int32 // index + 1
	sparse map[uint64]int32
}

const maxDenseID = 1 << 22

func (x *idIndex) get(id uint64) (int32, bool) {
	if id < maxDenseID {
		if id < uint64(len(x.dense)) && x.dense[id] != 0 {
			return x.dense[id] - 1, true
		}
		return 0, false
	}
	v, ok := x.sparse[id]
	return v, ok
}

// reset empties x, keeping its dense table.
func (x idIndex) reset() idIndex {
	clear(x.dense)
	return idIndex{dense: x.dense}
}

func (x *idIndex) put(id uint64, v int32) {
	if id < maxDenseID {
		if id >= uint64(len(x.dense)) {
			n := max(2*len(x.dense), int(id)+1, 256)
			x.dense = append(x.dense, make([]int32, min(n, maxDenseID)-len(x.dense))...)
		}
		x.dense[id] = v + 1
		return
	}
	if x.sparse == nil {
		x.sparse = map[uint64]int32{}
	}
	x.sparse[id] = v
}

type valueTypeDef struct{ typ, unit int64 }

type locationDef struct {
	id, mapping, address uint64
	start, end           int32 // range in lineDefs
	folded               bool
}

type lineDef struct {
	function     uint64
	line, column int64
}

type functionDef struct {
	id                         uint64
	name, systemName, filename int64
	startLine                  int64
}

// detail is what the decoder keeps for merging beyond the stacks: the
// label sets of the samples (interned per profile, as string indices),
// the mappings in profile order, and the comments.
type detail struct {
	cur      []rawLabel // the labels of the sample being decoded
	flat     []rawLabel // the label sets, one after another
	setStart []int32    // set i is flat[setStart[i]:setStart[i+1]]; set 0 is empty
	setIndex map[string]int32
	single   map[rawLabel]int32 // the sets of one label, most of them
	key      []byte
	mappings []mappingDef
	comments []int64
}

// rawLabel is a sample label as the protobuf gives it: string indices
// and a number.
type rawLabel struct{ key, str, num, unit int64 }

type mappingDef struct {
	id, start, limit, offset uint64
	file, buildID            int64
	hasFunctions             bool
	hasFilenames             bool
	hasLineNumbers           bool
	hasInlineFrames          bool
}

// intern returns the number of the current sample's label set, the same
// for the same labels in the same order; 0 is the empty set.
func (x *detail) intern() int32 {
	if len(x.cur) == 0 {
		return 0
	}
	if x.setStart == nil {
		x.setStart, x.setIndex, x.single = []int32{0, 0}, map[string]int32{}, map[rawLabel]int32{}
	}
	if len(x.cur) == 1 {
		if id, ok := x.single[x.cur[0]]; ok {
			return id
		}
		id := x.newSet()
		x.single[x.cur[0]] = id
		return id
	}
	k := x.key[:0]
	for _, l := range x.cur {
		k = binary.AppendUvarint(k, uint64(l.key))
		k = binary.AppendUvarint(k, uint64(l.str))
		k = binary.AppendUvarint(k, uint64(l.num))
		k = binary.AppendUvarint(k, uint64(l.unit))
	}
	x.key = k
	if id, ok := x.setIndex[string(k)]; ok {
		return id
	}
	id := x.newSet()
	x.setIndex[string(k)] = id
	return id
}

// newSet adds the current sample's labels as a set and returns its
// number.
func (x *detail) newSet() int32 {
	x.flat = append(x.flat, x.cur...)
	x.setStart = append(x.setStart, int32(len(x.flat)))
	return int32(len(x.setStart) - 2)
}

// reset empties x for another profile, keeping its memory.
func (x *detail) reset() {
	x.cur, x.flat, x.key = x.cur[:0], x.flat[:0], x.key[:0]
	x.mappings, x.comments = x.mappings[:0], x.comments[:0]
	if x.setStart != nil {
		x.setStart = x.setStart[:2]
		clear(x.setIndex)
		clear(x.single)
	}
}

// sets returns the number of label sets, the empty one included.
func (x *detail) sets() int { return max(len(x.setStart)-1, 1) }

// set returns the labels of set i.
func (x *detail) set(i int32) []rawLabel {
	if i == 0 {
		return nil
	}
	return x.flat[x.setStart[i]:x.setStart[i+1]]
}

// streamDecoder decodes a profile's protobuf from a stream. It follows
// the decoding of github.com/google/pprof/profile field by field, wire
// types and validity checks included, so that both accept the same input.
type streamDecoder struct {
	// unmerged is ReadOptions.Unmerged.
	unmerged bool
	// cost adds up what profile.Parse would take for what was decoded
	// so far (see decodeCost), up to maxCost when maxCost > 0; labels
	// counts the labels of the sample being decoded.
	cost, maxCost int64
	labels        int64
	// isProtobuf, when set, is called once the first sample has decoded.
	isProtobuf func()
	r          *bufio.Reader
	big        []byte // payloads larger than r's buffer
	// detail, when set, keeps what merging needs beyond stacks.
	detail *detail
	// strings, when set, interns the strings of the string table.
	strings map[string]string

	agg     *aggregator
	spare   *aggregator // an earlier profile's, unmerged, to reuse
	nt      int
	samples int
	vals    []int64
	stack   []int32

	used      idIndex // location id → dense index, in order of first use
	usedIDs   []uint64
	locByID   idIndex
	locs      []locationDef
	lines     []lineDef
	funcByID  idIndex
	funcs     []functionDef
	mappings  idIndex
	nMappings int32

	strs []string
	// maxStr is the largest string index referenced, as unsigned so that a
	// negative index counts as out of range.
	maxStr uint64

	sampleTypes                  []valueTypeDef
	periodType                   valueTypeDef
	period, timeNanos, duration  int64
	defaultSampleType, docURL    int64
	dropFrames, keepFrames       int64
	comments                     int
	sawTimeNanos                 bool
	sampleTypesSeen, stringsSeen bool
}

func newStreamDecoder(r *bufio.Reader) *streamDecoder {
	return &streamDecoder{r: r, nt: -1}
}

// reset readies d to decode another profile from r, keeping the memory
// of its tables, and of its aggregator when unmerged (a merged one has
// moved into the Stacks finish returned).
func (d *streamDecoder) reset(r *bufio.Reader) {
	old := *d
	*d = streamDecoder{
		r:           r,
		nt:          -1,
		big:         old.big[:0],
		detail:      old.detail,
		strings:     old.strings,
		vals:        old.vals[:0],
		stack:       old.stack[:0],
		used:        old.used.reset(),
		usedIDs:     old.usedIDs[:0],
		locByID:     old.locByID.reset(),
		locs:        old.locs[:0],
		lines:       old.lines[:0],
		funcByID:    old.funcByID.reset(),
		funcs:       old.funcs[:0],
		mappings:    old.mappings.reset(),
		strs:        old.strs[:0],
		sampleTypes: old.sampleTypes[:0],
	}
	clear(old.strs) // let the strings go
	if old.agg != nil && old.agg.unmerged {
		d.spare = old.agg
	} else {
		d.spare = old.spare
	}
}

// newAggregator returns the decoder's aggregator for nt sample types: the
// spare one of an earlier profile, reset, when it fits.
func (d *streamDecoder) newAggregator(nt int) *aggregator {
	if a := d.spare; a != nil && a.nt == nt && d.unmerged {
		d.spare = nil
		a.reset()
		a.labeled = d.detail != nil
		return a
	}
	a := newAggregator(nt, 1024)
	a.unmerged = d.unmerged
	a.labeled = d.detail != nil
	return a
}

// ref records a string index for the final range check.
func (d *streamDecoder) ref(i int64) {
	d.maxStr = max(d.maxStr, uint64(i))
}

// decode reads the protobuf to its end, then checks it as
// profile.Parse does.
func (d *streamDecoder) decode() error {
	for {
		tag, err := d.readVarint()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		field, wire := tag>>3, int(tag&7)
		var v uint64
		var payload []byte
		switch wire {
		case 0:
			if v, err = d.readVarint(); err != nil {
				return eofIsTruncation(err)
			}
		case 1:
			if _, err = d.readFixed(8); err != nil {
				return err
			}
		case 5:
			if _, err = d.readFixed(4); err != nil {
				return err
			}
		case 2:
			n, err := d.readVarint()
			if err != nil {
				return eofIsTruncation(err)
			}
			if payload, err = d.readPayload(n); err != nil {
				return err
			}
		default:
			return formatErr("unknown wire type: %d", wire)
		}
		if err := d.field(field, wire, v, payload); err != nil {
			return err
		}
		if wire == 2 {
			if err := d.release(len(payload)); err != nil {
				return err
			}
		}
	}
	return d.check()
}

// field handles one field of the Profile message.
func (d *streamDecoder) field(field uint64, wire int, v uint64, payload []byte) error {
	need := func(w int) error {
		if wire != w {
			return errTypeMismatch
		}
		return nil
	}
	switch field {
	case 1: // sample_type
		if err := need(2); err != nil {
			return err
		}
		vt, err := decodeValueType(payload)
		if err != nil {
			return err
		}
		d.sampleTypes = append(d.sampleTypes, vt)
	case 2: // sample
		if err := need(2); err != nil {
			return err
		}
		return d.sample(payload)
	case 3: // mapping
		if err := need(2); err != nil {
			return err
		}
		return d.mapping(payload)
	case 4: // location
		if err := need(2); err != nil {
			return err
		}
		return d.location(payload)
	case 5: // function
		if err := need(2); err != nil {
			return err
		}
		return d.function(payload)
	case 6: // string_table
		if err := need(2); err != nil {
			return err
		}
		if err := d.charge(costString + int64(len(payload))); err != nil {
			return err
		}
		d.strs = append(d.strs, d.str(payload))
		if d.strs[0] != "" {
			return formatErr("string_table[0] must be ''")
		}
	case 7, 8, 9, 10, 12, 14, 15:
		if field == 9 && d.timeNanos != 0 {
			return formatErr("concatenated profiles detected")
		}
		if err := need(0); err != nil {
			return err
		}
		x := int64(v)
		switch field {
		case 7:
			d.dropFrames = x
		case 8:
			d.keepFrames = x
		case 9:
			d.timeNanos = x
		case 10:
			d.duration = x
		case 12:
			d.period = x
		case 14:
			d.defaultSampleType = x
		case 15:
			d.docURL = x
		}
	case 11: // period_type
		if err := need(2); err != nil {
			return err
		}
		vt, err := decodeValueType(payload)
		if err != nil {
			return err
		}
		d.periodType = vt
	case 13: // comment, packed or not
		switch wire {
		case 0:
			d.comment(int64(v))
		case 2:
			for p := payload; len(p) > 0; {
				x, rest, err := varint(p)
				if err != nil {
					return err
				}
				d.comment(int64(x))
				p = rest
			}
		default:
			return errTypeMismatch
		}
	}
	return nil
}

// comment records the string index of a comment.
func (d *streamDecoder) comment(i int64) {
	d.ref(i)
	d.comments++
	if d.detail != nil {
		d.detail.comments = append(d.detail.comments, i)
	}
}

func (d *streamDecoder) sample(p []byte) error {
	d.stack, d.vals, d.labels = d.stack[:0], d.vals[:0], 0
	if d.detail != nil {
		d.detail.cur = d.detail.cur[:0]
	}
	for len(p) > 0 {
		// Fast path: the packed location ids that make up most of a
		// profile, the packed values and the labels (fields 1, 2 and 3,
		// wire type 2).
		if tag := p[0]; tag == 0x0a || tag == 0x12 || tag == 0x1a {
			n, rest, err := varint(p[1:])
			if err != nil {
				return err
			}
			if n > uint64(len(rest)) {
				return formatErr("too much data")
			}
			data := rest[:n]
			p = rest[n:]
			switch tag {
			case 0x0a:
				err = d.appendLocations(data)
			case 0x12:
				err = d.appendValues(data)
			default:
				err = d.label(data)
			}
			if err != nil {
				return err
			}
			continue
		}
		f, err := nextField(p)
		if err != nil {
			return err
		}
		p = f.rest
		switch f.num {
		case 1:
			switch f.wire {
			case 0:
				if err := d.appendLocation(f.v); err != nil {
					return err
				}
			case 2:
				if err := d.appendLocations(f.data); err != nil {
					return err
				}
			default:
				return errTypeMismatch
			}
		case 2:
			switch f.wire {
			case 0:
				d.vals = append(d.vals, int64(f.v))
			case 2:
				if err := d.appendValues(f.data); err != nil {
					return err
				}
			default:
				return errTypeMismatch
			}
		case 3:
			if f.wire != 2 {
				return errTypeMismatch
			}
			if err := d.label(f.data); err != nil {
				return err
			}
		}
	}
	d.samples++
	if d.maxCost > 0 {
		cost := costSample + int64(len(d.stack))*costLocRef + int64(len(d.vals))*costValue
		if d.labels > 0 {
			cost += costLabelMaps + d.labels*costLabel
		}
		if err := d.charge(cost); err != nil {
			return err
		}
	}
	if d.nt < 0 {
		d.nt = len(d.vals)
		d.agg = d.newAggregator(d.nt)
	} else if len(d.vals) != d.nt {
		return formatErr("malformed profile: samples have %d and %d values", d.nt, len(d.vals))
	}
	var set int32
	if d.detail != nil {
		set = d.detail.intern()
	}
	if err := d.agg.addLabeled(d.stack, set, d.vals); err != nil {
		if errors.Is(err, ErrOverflow) {
			return err // a valid profile, refused for what it says
		}
		return &formatError{err: err}
	}
	if d.samples == 1 && d.isProtobuf != nil {
		d.isProtobuf()
	}
	return nil
}

// appendValues appends a packed list of values to the current sample's.
func (d *streamDecoder) appendValues(q []byte) error {
	for len(q) > 0 {
		if q[0] < 0x80 {
			d.vals = append(d.vals, int64(q[0]))
			q = q[1:]
			continue
		}
		x, rest, err := varint(q)
		if err != nil {
			return err
		}
		d.vals = append(d.vals, int64(x))
		q = rest
	}
	return nil
}

// str returns payload as a string: the one seen before when the decoder
// interns strings (as it does for a Merger, whose profiles repeat their
// function and file names), else a new one.
func (d *streamDecoder) str(payload []byte) string {
	if d.strings == nil {
		return string(payload)
	}
	if s, ok := d.strings[string(payload)]; ok {
		return s
	}
	s := string(payload)
	if len(d.strings) < maxInterned {
		d.strings[s] = s
	}
	return s
}

// maxInterned bounds the strings a decoder interns, so that junk strings
// cannot grow it without end.
const maxInterned = 1 << 16

// charge adds cost to what decoding would take, failing beyond maxCost.
func (d *streamDecoder) charge(cost int64) error {
	if d.maxCost <= 0 {
		return nil
	}
	d.cost += cost
	if d.cost > d.maxCost {
		return &TooLargeError{Limit: d.maxCost, Decoded: true}
	}
	return nil
}

// appendLocations appends the dense indices of a packed list of location
// ids to the current stack, with fast paths for one- and two-byte ids
// already seen.
func (d *streamDecoder) appendLocations(q []byte) error {
	dense := d.used.dense
	for len(q) > 0 {
		var id uint64
		switch {
		case q[0] < 0x80:
			id, q = uint64(q[0]), q[1:]
		case len(q) >= 2 && q[1] < 0x80:
			id, q = uint64(q[0]&0x7f)|uint64(q[1])<<7, q[2:]
		default:
			x, rest, err := varint(q)
			if err != nil {
				return err
			}
			id, q = x, rest
		}
		if id < uint64(len(dense)) && dense[id] != 0 {
			d.stack = append(d.stack, dense[id]-1)
			continue
		}
		if err := d.appendLocation(id); err != nil {
			return err
		}
		dense = d.used.dense
	}
	return nil
}

// appendLocation appends the dense index of location id to the current
// stack, numbering the id on first use.
func (d *streamDecoder) appendLocation(id uint64) error {
	i, ok := d.used.get(id)
	if !ok {
		i = int32(len(d.usedIDs))
		if i == 1<<31-1 {
			return formatErr("too many locations")
		}
		d.used.put(id, i)
		d.usedIDs = append(d.usedIDs, id)
	}
	d.stack = append(d.stack, i)
	return nil
}

// label checks a sample label's string indices, as profile.postDecode
// resolves them: the key always, the unit only for numeric labels.
func (d *streamDecoder) label(p []byte) error {
	var key, str, num, unit int64
	for len(p) > 0 {
		// Fast path: fields 1 to 4 as varints, as they always are.
		if tag := p[0]; tag&7 == 0 && tag >= 0x08 && tag <= 0x20 {
			v, rest, err := varint(p[1:])
			if err != nil {
				return err
			}
			p = rest
			switch tag >> 3 {
			case 1:
				key = int64(v)
			case 2:
				str = int64(v)
			case 3:
				num = int64(v)
			case 4:
				unit = int64(v)
			}
			continue
		}
		f, err := nextField(p)
		if err != nil {
			return err
		}
		p = f.rest
		if f.num >= 1 && f.num <= 4 {
			if f.wire != 0 {
				return errTypeMismatch
			}
			switch f.num {
			case 1:
				key = int64(f.v)
			case 2:
				str = int64(f.v)
			case 3:
				num = int64(f.v)
			case 4:
				unit = int64(f.v)
			}
		}
	}
	if d.detail != nil {
		d.detail.cur = append(d.detail.cur, rawLabel{key: key, str: str, num: num, unit: unit})
	}
	d.labels++
	if unit != 0 {
		d.labels++ // see labelCount
	}
	d.ref(key)
	if str != 0 {
		d.ref(str)
	} else if unit != 0 {
		d.ref(unit)
	}
	return nil
}

func (d *streamDecoder) mapping(p []byte) error {
	var m mappingDef
	for len(p) > 0 {
		f, err := nextField(p)
		if err != nil {
			return err
		}
		p = f.rest
		if f.num >= 1 && f.num <= 10 {
			if f.wire != 0 {
				return errTypeMismatch
			}
			switch f.num {
			case 1:
				m.id = f.v
			case 2:
				m.start = f.v
			case 3:
				m.limit = f.v
			case 4:
				m.offset = f.v
			case 5:
				m.file = int64(f.v)
			case 6:
				m.buildID = int64(f.v)
			case 7:
				m.hasFunctions = f.v != 0
			case 8:
				m.hasFilenames = f.v != 0
			case 9:
				m.hasLineNumbers = f.v != 0
			case 10:
				m.hasInlineFrames = f.v != 0
			}
		}
	}
	d.ref(m.file)
	d.ref(m.buildID)
	if err := d.charge(costMapping); err != nil {
		return err
	}
	if m.id == 0 {
		return formatErr("malformed profile: found mapping with reserved ID=0")
	}
	if _, dup := d.mappings.get(m.id); dup {
		return formatErr("malformed profile: multiple mappings with same id: %d", m.id)
	}
	if d.nMappings == 1<<31-1 {
		return formatErr("too many mappings")
	}
	d.mappings.put(m.id, d.nMappings)
	d.nMappings++
	if d.detail != nil {
		d.detail.mappings = append(d.detail.mappings, m)
	}
	return nil
}

func (d *streamDecoder) location(p []byte) error {
	l := locationDef{start: int32(len(d.lines))}
	for len(p) > 0 {
		f, err := nextField(p)
		if err != nil {
			return err
		}
		p = f.rest
		switch f.num {
		case 1, 2, 3, 5:
			if f.wire != 0 {
				return errTypeMismatch
			}
			switch f.num {
			case 1:
				l.id = f.v
			case 2:
				l.mapping = f.v
			case 3:
				l.address = f.v
			case 5:
				l.folded = f.v != 0
			}
		case 4:
			if f.wire != 2 {
				return errTypeMismatch
			}
			ln, err := decodeLine(f.data)
			if err != nil {
				return err
			}
			d.lines = append(d.lines, ln)
		}
	}
	l.end = int32(len(d.lines))
	if err := d.charge(costLocation + int64(l.end-l.start)*costLine); err != nil {
		return err
	}
	if l.id == 0 {
		return formatErr("malformed profile: found location with reserved id=0")
	}
	if _, dup := d.locByID.get(l.id); dup {
		return formatErr("malformed profile: multiple locations with same id: %d", l.id)
	}
	if len(d.locs) == 1<<31-1 {
		return formatErr("too many locations")
	}
	d.locByID.put(l.id, int32(len(d.locs)))
	d.locs = append(d.locs, l)
	return nil
}

func decodeLine(p []byte) (lineDef, error) {
	var ln lineDef
	for len(p) > 0 {
		f, err := nextField(p)
		if err != nil {
			return ln, err
		}
		p = f.rest
		if f.num >= 1 && f.num <= 3 {
			if f.wire != 0 {
				return ln, errTypeMismatch
			}
			switch f.num {
			case 1:
				ln.function = f.v
			case 2:
				ln.line = int64(f.v)
			case 3:
				ln.column = int64(f.v)
			}
		}
	}
	return ln, nil
}

func (d *streamDecoder) function(p []byte) error {
	var fn functionDef
	for len(p) > 0 {
		f, err := nextField(p)
		if err != nil {
			return err
		}
		p = f.rest
		if f.num >= 1 && f.num <= 5 {
			if f.wire != 0 {
				return errTypeMismatch
			}
			switch f.num {
			case 1:
				fn.id = f.v
			case 2:
				fn.name = int64(f.v)
			case 3:
				fn.systemName = int64(f.v)
			case 4:
				fn.filename = int64(f.v)
			case 5:
				fn.startLine = int64(f.v)
			}
		}
	}
	d.ref(fn.name)
	d.ref(fn.systemName)
	d.ref(fn.filename)
	if err := d.charge(costFunction); err != nil {
		return err
	}
	if fn.id == 0 {
		return formatErr("malformed profile: found function with reserved ID=0")
	}
	if _, dup := d.funcByID.get(fn.id); dup {
		return formatErr("malformed profile: multiple functions with same id: %d", fn.id)
	}
	if len(d.funcs) == 1<<31-1 {
		return formatErr("too many functions")
	}
	d.funcByID.put(fn.id, int32(len(d.funcs)))
	d.funcs = append(d.funcs, fn)
	return nil
}

func decodeValueType(p []byte) (valueTypeDef, error) {
	var vt valueTypeDef
	for len(p) > 0 {
		f, err := nextField(p)
		if err != nil {
			return vt, err
		}
		p = f.rest
		if f.num == 1 || f.num == 2 {
			if f.wire != 0 {
				return vt, errTypeMismatch
			}
			if f.num == 1 {
				vt.typ = int64(f.v)
			} else {
				vt.unit = int64(f.v)
			}
		}
	}
	return vt, nil
}

// check checks what profile.postDecode and CheckValid check.
func (d *streamDecoder) check() error {
	for _, vt := range d.sampleTypes {
		d.ref(vt.typ)
		d.ref(vt.unit)
	}
	d.ref(d.periodType.typ)
	d.ref(d.periodType.unit)
	d.ref(d.dropFrames)
	d.ref(d.keepFrames)
	d.ref(d.defaultSampleType)
	d.ref(d.docURL)
	if d.maxStr >= uint64(len(d.strs)) {
		return formatErr("malformed profile format")
	}
	nt := len(d.sampleTypes)
	if d.samples > 0 && nt == 0 {
		return formatErr("malformed profile: missing sample type information")
	}
	if d.samples > 0 && d.nt != nt {
		return formatErr("malformed profile: mismatch: sample has %d values vs. %d types", d.nt, nt)
	}
	for _, l := range d.locs {
		for _, ln := range d.lines[l.start:l.end] {
			if _, ok := d.funcByID.get(ln.function); !ok || ln.function == 0 {
				return formatErr("malformed profile: location id: %d has a line with nil function", l.id)
			}
		}
	}
	for _, id := range d.usedIDs {
		if _, ok := d.locByID.get(id); !ok {
			return formatErr("malformed profile: sample has nil location")
		}
	}
	if d.agg == nil {
		d.agg = d.newAggregator(nt)
	}
	return nil
}

// finish resolves the ids and strings of a checked profile into Stacks.
func (d *streamDecoder) finish() *Stacks {
	nt := len(d.sampleTypes)
	str := func(i int64) string { return d.strs[i] }
	s := &Stacks{
		SampleTypes:       make([]ValueType, nt),
		DefaultSampleType: str(d.defaultSampleType),
		PeriodType:        ValueType{Type: str(d.periodType.typ), Unit: str(d.periodType.unit)},
		Period:            d.period,
		TimeNanos:         d.timeNanos,
		DurationNanos:     d.duration,
	}
	for i, vt := range d.sampleTypes {
		s.SampleTypes[i] = ValueType{Type: str(vt.typ), Unit: str(vt.unit)}
	}
	d.agg.finish(s)

	s.Locations = make([]Location, len(d.usedIDs))
	lines := make([]Line, 0, len(d.usedIDs)+len(d.usedIDs)/4)
	var funcIdx idIndex
	for i, id := range d.usedIDs {
		li, _ := d.locByID.get(id)
		l := d.locs[li]
		start := len(lines)
		for _, ln := range d.lines[l.start:l.end] {
			fi, ok := funcIdx.get(ln.function)
			if !ok {
				fi = int32(len(s.Functions))
				funcIdx.put(ln.function, fi)
				di, _ := d.funcByID.get(ln.function)
				fn := d.funcs[di]
				s.Functions = append(s.Functions, Function{Name: str(fn.name), File: str(fn.filename), StartLine: fn.startLine})
			}
			lines = append(lines, Line{Function: fi, Line: ln.line})
		}
		s.Locations[i] = Location{Address: l.address, Lines: lines[start:len(lines):len(lines)]}
	}
	return s
}

// readVarint reads a varint from the stream; io.EOF only when the stream
// ends before its first byte.
func (d *streamDecoder) readVarint() (uint64, error) {
	var u uint64
	for i := 0; i < 10; i++ {
		b, err := d.r.ReadByte()
		if err != nil {
			if err == io.EOF && i > 0 {
				return 0, errTruncated
			}
			return 0, err
		}
		u |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return u, nil
		}
	}
	return 0, errBadVarint
}

func eofIsTruncation(err error) error {
	if err == io.EOF {
		return errTruncated
	}
	return err
}

func (d *streamDecoder) readFixed(n int) ([]byte, error) {
	b, err := d.r.Peek(n)
	if len(b) < n {
		if err == nil || err == io.EOF || err == bufio.ErrBufferFull {
			return nil, errTruncated
		}
		return nil, err
	}
	_, _ = d.r.Discard(n)
	return b, nil
}

// readPayload returns the next n bytes: a view of the reader's buffer when
// they fit (release discards them once handled), else a copy.
func (d *streamDecoder) readPayload(n uint64) ([]byte, error) {
	if n <= uint64(d.r.Size()) {
		b, err := d.r.Peek(int(n))
		if uint64(len(b)) < n {
			if err == nil || err == io.EOF {
				return nil, errTruncated
			}
			return nil, err
		}
		return b, nil
	}
	if n > 1<<40 {
		return nil, errTruncated
	}
	// Read large payloads in steps, so a bogus length costs no more memory
	// than the stream really holds.
	d.big = d.big[:0]
	for left := n; left > 0; {
		step := min(left, 16<<20)
		start := len(d.big)
		d.big = append(d.big, make([]byte, step)...)
		if _, err := io.ReadFull(d.r, d.big[start:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil, errTruncated
			}
			return nil, err
		}
		left -= step
	}
	return d.big, nil
}

// release discards a payload returned by readPayload from the buffer.
func (d *streamDecoder) release(n int) error {
	if n > d.r.Size() {
		return nil // already consumed by readPayload
	}
	_, err := d.r.Discard(n)
	return err
}

// protoField is one decoded field of a message held in memory.
type protoField struct {
	num  uint64
	wire int
	v    uint64
	data []byte
	rest []byte
}

func nextField(p []byte) (protoField, error) {
	tag, p, err := varint(p)
	if err != nil {
		return protoField{}, err
	}
	f := protoField{num: tag >> 3, wire: int(tag & 7)}
	switch f.wire {
	case 0:
		f.v, p, err = varint(p)
		if err != nil {
			return f, err
		}
	case 1:
		if len(p) < 8 {
			return f, formatErr("not enough data")
		}
		p = p[8:]
	case 5:
		if len(p) < 4 {
			return f, formatErr("not enough data")
		}
		p = p[4:]
	case 2:
		var n uint64
		n, p, err = varint(p)
		if err != nil {
			return f, err
		}
		if n > uint64(len(p)) {
			return f, formatErr("too much data")
		}
		f.data, p = p[:n], p[n:]
	default:
		return f, formatErr("unknown wire type: %d", f.wire)
	}
	f.rest = p
	return f, nil
}

func varint(p []byte) (uint64, []byte, error) {
	var u uint64
	for i := 0; ; i++ {
		if i >= 10 || i >= len(p) {
			return 0, nil, errBadVarint
		}
		u |= uint64(p[i]&0x7f) << (7 * i)
		if p[i] < 0x80 {
			return u, p[i+1:], nil
		}
	}
}
