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

// ErrNotProfile is wrapped by the errors of Parse for input that does not
// decode as a profile: empty, HTML, JSON, text, or bytes that are not a
// valid pprof protobuf.
var ErrNotProfile = errors.New("not a pprof profile")

// TooLargeError is the error of Parse for gzip input that decompresses to
// more than Limit bytes.
type TooLargeError struct {
	Limit int64
}

// Error implements error.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("profile decompresses to more than %d bytes", e.Limit)
}

// Parse decodes a pprof profile, gzip-compressed or not. Compressed input
// is decompressed here through a limit of maxDecompressed bytes (a value
// ≤ 0 means DefaultMaxDecompressed); beyond it Parse returns a
// *TooLargeError. Input that is not a profile gives an error wrapping
// ErrNotProfile with a short reason; gzip input cut short gives an error
// saying the stream is truncated; a profile whose values add up beyond
// an int64 gives ErrOverflow. The legacy text formats that
// profile.ParseData understands are accepted as well.
//
// Parse does not recover from panics: FuzzParse has not found an input
// that makes profile.ParseData panic.
func Parse(data []byte, maxDecompressed int64) (*profile.Profile, error) {
	if maxDecompressed <= 0 {
		maxDecompressed = DefaultMaxDecompressed
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty input", ErrNotProfile)
	}
	if isGzip(data) {
		raw, err := gunzip(data, maxDecompressed)
		if err != nil {
			return nil, err
		}
		if isGzip(raw) {
			// profile.ParseData would decompress this layer without a limit.
			return nil, fmt.Errorf("%w: gzip inside gzip", ErrNotProfile)
		}
		if len(raw) == 0 {
			return nil, fmt.Errorf("%w: empty after decompression", ErrNotProfile)
		}
		data = raw
	}
	p, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotProfile, reason(data, err))
	}
	if err := checkMagnitudes(p); err != nil {
		return nil, err
	}
	return p, nil
}

func isGzip(data []byte) bool {
	return len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b
}

// gunzip decompresses data, reading at most limit+1 bytes of output so a
// bomb is detected without being expanded.
func gunzip(data []byte, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decompress profile: %w", gzipErr(err))
	}
	defer zr.Close()
	// Profiles compress several-fold: start with a buffer that usually
	// fits, without committing much memory to a would-be bomb.
	size := min(int64(len(data))*8, limit+1, 64<<20)
	buf := bytes.NewBuffer(make([]byte, 0, size))
	n, err := buf.ReadFrom(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("decompress profile: %w", gzipErr(err))
	}
	if n > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return buf.Bytes(), nil
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
