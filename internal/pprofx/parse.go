package pprofx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"
)

// DefaultMaxDecompressed is the decompressed size Parse callers should
// allow unless they know better: 256 MiB, far above real profiles and far
// below what a gzip bomb expands to.
const DefaultMaxDecompressed int64 = 256 << 20

// DefaultMaxDecoded is the memory Parse lets a decoded profile take
// unless told otherwise: 256 MiB, what profile.Parse allocates for about
// 10 MB of heap profile protobuf with deep stacks (3 MB of gzip), more
// than services' heap profiles at the default sampling rate come near,
// and far below what it makes of a profile that repeats one sample up to
// the decompressed limit.
const DefaultMaxDecoded int64 = 256 << 20

// Limits bound what parsing one profile may cost.
type Limits struct {
	// MaxDecompressed caps the profile's size after gzip decompression;
	// a value ≤ 0 means DefaultMaxDecompressed.
	MaxDecompressed int64
	// MaxDecoded caps the memory of the decoded profile, as estimated by
	// a pass over the protobuf before it is decoded; a value ≤ 0 means
	// DefaultMaxDecoded.
	MaxDecoded int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxDecompressed <= 0 {
		l.MaxDecompressed = DefaultMaxDecompressed
	}
	if l.MaxDecoded <= 0 {
		l.MaxDecoded = DefaultMaxDecoded
	}
	return l
}

// ErrNotProfile is wrapped by the errors of Parse for input that does not
// decode as a profile: empty, HTML, JSON, text, or bytes that are not a
// valid pprof protobuf.
var ErrNotProfile = errors.New("not a pprof profile")

// TooLargeError is the error of Parse and ReadStacks for input over one
// of their limits: gzip input that decompresses to more than Limit
// bytes, or, when Decoded is set, a profile that would take more than
// Limit bytes of memory to decode (about Estimate, when known).
type TooLargeError struct {
	Limit    int64
	Decoded  bool
	Estimate int64
}

// Error implements error.
func (e *TooLargeError) Error() string {
	switch {
	case e.Decoded && e.Estimate > 0:
		return fmt.Sprintf("profile would take about %d bytes of memory to decode, more than the limit of %d", e.Estimate, e.Limit)
	case e.Decoded:
		return fmt.Sprintf("profile would take more than %d bytes of memory to decode", e.Limit)
	}
	return fmt.Sprintf("profile decompresses to more than %d bytes", e.Limit)
}

// Parse decodes a pprof profile, gzip-compressed or not, within the
// Limits of a decompressed size of maxDecompressed bytes (a value ≤ 0
// means DefaultMaxDecompressed) and of DefaultMaxDecoded bytes of
// memory for the decoded profile. See ParseWithin.
func Parse(data []byte, maxDecompressed int64) (*profile.Profile, error) {
	p, _, err := ParseWithin(data, Limits{MaxDecompressed: maxDecompressed})
	return p, err
}

// ParseWithin decodes a pprof profile, gzip-compressed or not, within
// lim. Before anything is decoded, one pass streams the profile,
// decompressing it if need be, through an estimate of what decoding it
// will take, holding nothing of it: beyond either limit ParseWithin
// returns a *TooLargeError, having held no more than the input and a
// read buffer. Compressed input is then decompressed into a buffer of
// its exact size. With the profile, ParseWithin returns the estimate
// its limit was checked against, decoded: about what decoding took.
//
// Input that is not a profile gives an error wrapping ErrNotProfile
// with a short reason; gzip input cut short gives an error saying the
// stream is truncated; a profile whose values add up beyond an int64
// gives ErrOverflow. The legacy text formats that profile.ParseData
// understands are accepted as well, estimated at 32 bytes of memory a
// byte.
//
// ParseWithin does not recover from panics: FuzzParse has not found an
// input that makes profile.ParseData panic.
func ParseWithin(data []byte, lim Limits) (p *profile.Profile, decoded int64, err error) {
	lim = lim.withDefaults()
	if len(data) == 0 {
		return nil, 0, fmt.Errorf("%w: empty input", ErrNotProfile)
	}
	if isGzip(data) {
		data, decoded, err = gunzip(data, lim)
		if err != nil {
			return nil, 0, err
		}
	} else {
		var partial bool
		if _, decoded, partial, _ = sizeOf(bytes.NewReader(data), len(data), lim.MaxDecoded); decoded > lim.MaxDecoded {
			return nil, 0, tooCostly(lim.MaxDecoded, decoded, partial)
		}
	}
	p, err = profile.ParseData(data)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotProfile, reason(data, err))
	}
	if err := checkMagnitudes(p); err != nil {
		return nil, 0, err
	}
	return p, decoded, nil
}

func isGzip(data []byte) bool {
	return len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b
}

// gunzip decompresses data within lim in two passes: the first streams
// it through sizeOf, holding nothing but buffers, so that a gzip bomb or
// a profile too costly to decode is refused without being expanded; the
// second decompresses it into a buffer of the size the first found. It
// returns the decompressed bytes and the decoding cost.
func gunzip(data []byte, lim Limits) ([]byte, int64, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, 0, fmt.Errorf("decompress profile: %w", gzipErr(err))
	}
	h := &headReader{r: &limitedReader{r: zr, left: lim.MaxDecompressed, limit: lim.MaxDecompressed, gzipped: true}}
	size, cost, partial, err := sizeOf(h, 0, lim.MaxDecoded)
	zr.Close()
	switch {
	case err != nil:
		return nil, 0, err
	case isGzip(h.head):
		// profile.ParseData would decompress this layer without a limit.
		return nil, 0, fmt.Errorf("%w: gzip inside gzip", ErrNotProfile)
	case size == 0:
		return nil, 0, fmt.Errorf("%w: empty after decompression", ErrNotProfile)
	case cost > lim.MaxDecoded:
		return nil, 0, tooCostly(lim.MaxDecoded, cost, partial)
	}
	if err := zr.Reset(bytes.NewReader(data)); err != nil {
		return nil, 0, fmt.Errorf("decompress profile: %w", gzipErr(err))
	}
	defer zr.Close()
	raw := make([]byte, size)
	if _, err := io.ReadFull(zr, raw); err != nil {
		return nil, 0, fmt.Errorf("decompress profile: %w", gzipErr(err))
	}
	return raw, cost, nil
}

// tooCostly is the error for a profile whose decoding would cost more
// than limit: about cost, unless the estimate stopped early (partial)
// and cost is only where it stopped.
func tooCostly(limit, cost int64, partial bool) *TooLargeError {
	if partial {
		cost = 0
	}
	return &TooLargeError{Limit: limit, Decoded: true, Estimate: cost}
}

// headReader keeps the first two bytes read through it.
type headReader struct {
	r    io.Reader
	head []byte
}

func (h *headReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if len(h.head) < 2 {
		h.head = append(h.head, p[:min(n, 2-len(h.head))]...)
	}
	return n, err
}

// truncatedGzipError says the gzip stream ended early; it wraps the
// reader's error.
type truncatedGzipError struct{ err error }

func (e truncatedGzipError) Error() string { return "gzip stream is truncated" }
func (e truncatedGzipError) Unwrap() error { return e.err }

func gzipErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return truncatedGzipError{err}
	}
	return err
}

// reason says in a few words why data is not a profile.
func reason(data []byte, err error) string {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	switch {
	case len(trimmed) == 0:
		return "input is blank"
	case trimmed[0] == '<':
		return "input looks like HTML or XML"
	case trimmed[0] == '{' || trimmed[0] == '[':
		if utf8.Valid(head(trimmed)) {
			return "input looks like JSON"
		}
	}
	if looksLikeText(data) {
		return fmt.Sprintf("input looks like text starting %q", firstLine(data))
	}
	return strings.TrimPrefix(err.Error(), "parsing profile: ")
}

func head(b []byte) []byte { return b[:min(len(b), 512)] }

// looksLikeText reports whether the first bytes of data are printable
// UTF-8.
func looksLikeText(data []byte) bool {
	h := head(data)
	for len(h) > 0 {
		r, size := utf8.DecodeRune(h)
		if r == utf8.RuneError {
			// A rune cut at the end of head is fine.
			return size == 1 && len(h) < utf8.UTFMax && len(h) < len(data)
		}
		if r < ' ' && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
		h = h[size:]
	}
	return true
}

func firstLine(data []byte) string {
	line, _, _ := bytes.Cut(head(data), []byte("\n"))
	line = bytes.TrimSpace(line)
	const max = 40
	if len(line) > max {
		return string(line[:max]) + "…"
	}
	return string(line)
}
