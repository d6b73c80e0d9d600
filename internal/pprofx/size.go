package pprofx

import (
	"bufio"
	"errors"
	"io"
)

// What profile.Parse costs, estimated before it runs.
//
// profile.Parse holds the whole decoded profile: per sample a Sample
// struct, its location ids twice over (as ids, then as pointers), its
// values and, when it has labels, three maps; per location, line,
// function, mapping and string a struct of its own. That is 10 to 25
// times the protobuf's size on real profiles, and more on made-up ones:
// 50 KB of gzip hold a valid heap profile of 20 MiB, one sample
// repeated, that profile.Parse allocates 270 MB for. decodeCost walks the
// protobuf once, as a stream, holding nothing but a buffer, and adds up
// what profile.Parse would allocate for it, so that ParseWithin refuses
// a profile over its limit before it holds any of it.

// Bytes profile.Parse allocates per element of a profile (pprof at the
// version in go.mod, 64-bit): the structs, the pointers to them in the
// profile's slices with their growth, the maps postDecode builds by id,
// rounded up to the allocator's size classes. Measured against
// runtime.MemStats on real and made-up profiles (TestDecodeCost): the
// estimate is at least the live heap of the decoded profile and at most
// about what decoding allocates in all.
const (
	costSample    = 176 // Sample, its pointer, the slack of its small slices
	costLocRef    = 16  // the location id, then the *Location
	costValue     = 8
	costLabelMaps = 150 // the three label maps of a sample with labels
	costLabel     = 400 // the label, its entries in the maps, their growth
	costLocation  = 136 // Location, its pointer, its entries by id
	costLine      = 32
	costFunction  = 160
	costMapping   = 200
	costValueType = 72
	costString    = 40 // the string header in the table, with growth
	costComment   = 48
	// costLegacy is charged per byte of input that is not a protobuf:
	// the legacy formats profile.ParseData falls back to are text (or
	// 8-byte words), of 8 bytes a sample at the least.
	costLegacy = 32
	// costBigSample and costBigLocation are charged per byte of a sample
	// or location too large to look into (beyond the read buffer, which
	// no real one is): the most each byte can cost, an empty label of
	// two bytes or a line of two.
	costBigSample   = costLabel / 2
	costBigLocation = costLine / 2
)

// costBuffer is the read buffer of decodeCost: messages up to this size
// are looked into, larger ones charged by the byte.
const costBuffer = 64 << 10

// decodeCost reads a protobuf profile from r to its end and returns what
// profile.Parse would allocate to decode it. A *formatError says the
// input stops being a protobuf there; the cost is then what decoding
// spends up to that point (profile.Parse allocates as it goes), and r is
// left where the error was found. Other errors are r's.
//
// It follows the wire types profile.Parse accepts field by field, like
// the streamDecoder, but checks nothing about ids or string indices.
func decodeCost(r *bufio.Reader) (int64, error) {
	d := &streamDecoder{r: r}
	var cost int64
	for {
		tag, err := d.readVarint()
		if err == io.EOF {
			return cost, nil
		}
		if err != nil {
			return cost, err
		}
		field, wire := tag>>3, int(tag&7)
		if err := checkWire(field, wire); err != nil {
			return cost, err
		}
		switch wire {
		case 0:
			if _, err := d.readVarint(); err != nil {
				return cost, eofIsTruncation(err)
			}
			if field == 13 {
				cost += costComment
			}
			continue
		case 1:
			if _, err := d.readFixed(8); err != nil {
				return cost, err
			}
			continue
		case 5:
			if _, err := d.readFixed(4); err != nil {
				return cost, err
			}
			continue
		}
		n, err := d.readVarint()
		if err != nil {
			return cost, eofIsTruncation(err)
		}
		if n > uint64(r.Size()) {
			c, err := skipCounting(r, n, field)
			cost += c
			if err != nil {
				return cost, err
			}
			continue
		}
		p, err := r.Peek(int(n))
		if uint64(len(p)) < n {
			if err == nil || err == io.EOF {
				err = errTruncated
			}
			return cost, err
		}
		c, err := messageCost(field, p)
		cost += c
		if err != nil {
			return cost, err
		}
		if _, err := r.Discard(int(n)); err != nil {
			return cost, err
		}
	}
}

// checkWire checks the wire type of a Profile's field as profile.Parse
// does: messages and strings (1 to 6, 11) are length-delimited, the
// int64s (7 to 10, 12, 14, 15) varints, the comments (13) either; other
// fields are skipped whatever their type, of those protobuf knows. Field
// 0, which no encoder writes, profile.Parse skips too, but decodeCost
// takes it for what it is, input that is not a protobuf: a stream of
// zeros is then charged by the byte, not as nothing, and a gzip bomb of
// zeros is refused from a thirty-second of its decompressed limit.
func checkWire(field uint64, wire int) error {
	switch {
	case wire != 0 && wire != 1 && wire != 2 && wire != 5:
		return formatErr("unknown wire type: %d", wire)
	case field == 0:
		return formatErr("field number 0")
	case field >= 1 && field <= 6 || field == 11:
		if wire != 2 {
			return errTypeMismatch
		}
	case field == 13:
		if wire != 0 && wire != 2 {
			return errTypeMismatch
		}
	case field >= 7 && field <= 15:
		if wire != 0 {
			return errTypeMismatch
		}
	}
	return nil
}

// messageCost is the cost of one field of a Profile whose payload is p.
func messageCost(field uint64, p []byte) (int64, error) {
	switch field {
	case 1, 11:
		return costValueType, checkFields(p)
	case 2:
		return sampleCost(p)
	case 3:
		return costMapping, checkFields(p)
	case 4:
		return locationCost(p)
	case 5:
		return costFunction, checkFields(p)
	case 6:
		return costString + int64(len(p)), nil
	case 13:
		return costComment * int64(varints(p)), nil
	}
	return 0, nil
}

func sampleCost(p []byte) (int64, error) {
	var refs, vals, labels int64
	for len(p) > 0 {
		f, err := nextField(p)
		if err != nil {
			return 0, err
		}
		p = f.rest
		n := int64(1)
		if f.wire == 2 {
			n = int64(varints(f.data))
		}
		switch f.num {
		case 1:
			refs += n
		case 2:
			vals += n
		case 3:
			n, err := labelCount(f.data)
			if err != nil {
				return 0, err
			}
			labels += n
		}
	}
	cost := costSample + refs*costLocRef + vals*costValue
	if labels > 0 {
		cost += costLabelMaps + labels*costLabel
	}
	return cost, nil
}

// labelCount counts a label once, twice when it has a unit: numeric
// labels with units fill a third map, padded.
func labelCount(p []byte) (int64, error) {
	n := int64(1)
	for len(p) > 0 {
		f, err := nextField(p)
		if err != nil {
			return 0, err
		}
		p = f.rest
		if f.num == 4 && f.v != 0 {
			n = 2
		}
	}
	return n, nil
}

func locationCost(p []byte) (int64, error) {
	cost := int64(costLocation)
	for len(p) > 0 {
		f, err := nextField(p)
		if err != nil {
			return 0, err
		}
		p = f.rest
		if f.num == 4 {
			if err := checkFields(f.data); err != nil {
				return 0, err
			}
			cost += costLine
		}
	}
	return cost, nil
}

// checkFields checks that p is a sequence of protobuf fields, as
// profile.Parse's decoding of any message requires.
func checkFields(p []byte) error {
	for len(p) > 0 {
		f, err := nextField(p)
		if err != nil {
			return err
		}
		p = f.rest
	}
	return nil
}

// varints counts the varints of a packed field: the bytes that end one.
func varints(p []byte) int {
	n := 0
	for _, b := range p {
		if b < 0x80 {
			n++
		}
	}
	return n
}

// skipCounting skips a payload of n bytes of a Profile's field, too
// large for r's buffer, and returns its cost: by the byte for the
// messages it does not look into, by the varint for packed comments.
func skipCounting(r *bufio.Reader, n uint64, field uint64) (int64, error) {
	var cost, perByte int64
	switch field {
	case 1, 3, 5, 11:
		cost = costMapping // a message of a few scalars, however long
	case 2:
		cost, perByte = costSample, costBigSample
	case 4:
		cost, perByte = costLocation, costBigLocation
	case 6:
		cost, perByte = costString, 1
	}
	for left := n; left > 0; {
		p, err := r.Peek(int(min(left, uint64(r.Size()))))
		if len(p) == 0 {
			if err == nil || err == io.EOF {
				err = errTruncated
			}
			return cost, err
		}
		cost += int64(len(p)) * perByte
		if field == 13 {
			cost += costComment * int64(varints(p))
		}
		_, _ = r.Discard(len(p))
		left -= uint64(len(p))
	}
	return cost, nil
}

// sizeOf reads a profile's protobuf from r to its end and returns its
// size and decoding cost. Input that is not a protobuf is read on, for
// its size, and costs what the decoding spent before it found so, or
// costLegacy per byte, whichever is more; once that passes maxCost,
// sizeOf stops reading and says so with partial: the cost is then only
// a lower bound, and a stream of zeros inflating to the decompressed
// limit is refused after a thirty-second of it. A size hint above 0
// says r holds no more than so many bytes: the read buffer need not be
// larger.
func sizeOf(r io.Reader, hint int, maxCost int64) (size, cost int64, partial bool, err error) {
	cr := &countingReader{r: r}
	buf := costBuffer
	if hint > 0 {
		buf = min(buf, hint)
	}
	br := bufio.NewReaderSize(cr, buf)
	cost, err = decodeCost(br)
	var format *formatError
	if !errors.As(err, &format) {
		return cr.n, cost, false, err
	}
	for {
		_, err := br.Discard(br.Size())
		cost = max(cost, cr.n*costLegacy)
		switch {
		case err == io.EOF:
			return cr.n, cost, false, nil
		case err != nil:
			return cr.n, cost, false, err
		case cost > maxCost:
			return cr.n, cost, true, nil
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
