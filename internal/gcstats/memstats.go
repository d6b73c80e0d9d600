package gcstats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// PauseRingSize is the number of entries of the PauseNs and PauseEnd
// rings of runtime.MemStats.
const PauseRingSize = 256

// MemStats is the runtime.MemStats of a Go process as printed at the end
// of its /debug/pprof/heap?debug=1 output. Fields mean what the runtime's
// fields of the same names mean; StackInuse/StackSys, MSpanInuse/MSpanSys
// and MCacheInuse/MCacheSys come from the "a / b" lines of that output.
type MemStats struct {
	Alloc        uint64 `json:"alloc"`
	TotalAlloc   uint64 `json:"total_alloc"`
	Sys          uint64 `json:"sys"`
	Lookups      uint64 `json:"lookups"`
	Mallocs      uint64 `json:"mallocs"`
	Frees        uint64 `json:"frees"`
	HeapAlloc    uint64 `json:"heap_alloc"`
	HeapSys      uint64 `json:"heap_sys"`
	HeapIdle     uint64 `json:"heap_idle"`
	HeapInuse    uint64 `json:"heap_inuse"`
	HeapReleased uint64 `json:"heap_released"`
	HeapObjects  uint64 `json:"heap_objects"`
	StackInuse   uint64 `json:"stack_inuse"`
	StackSys     uint64 `json:"stack_sys"`
	MSpanInuse   uint64 `json:"mspan_inuse"`
	MSpanSys     uint64 `json:"mspan_sys"`
	MCacheInuse  uint64 `json:"mcache_inuse"`
	MCacheSys    uint64 `json:"mcache_sys"`
	BuckHashSys  uint64 `json:"buck_hash_sys"`
	GCSys        uint64 `json:"gc_sys"`
	OtherSys     uint64 `json:"other_sys"`
	NextGC       uint64 `json:"next_gc"`
	// LastGC is when the last collection finished, in nanoseconds since
	// the Unix epoch.
	LastGC uint64 `json:"last_gc"`
	// PauseNs and PauseEnd are rings of the last PauseRingSize
	// collections: cycle n (counting from 1) is at index (n-1)%256.
	PauseNs       [PauseRingSize]uint64 `json:"-"`
	PauseEnd      [PauseRingSize]uint64 `json:"-"`
	NumGC         uint32                `json:"num_gc"`
	NumForcedGC   uint32                `json:"num_forced_gc"`
	GCCPUFraction float64               `json:"gc_cpu_fraction"`
	// MaxRSS is the process's peak resident set size in bytes; 0 when the
	// output does not carry it (the platform lacks getrusage).
	MaxRSS uint64 `json:"max_rss"`
}

// ErrNoMemStats is the error of ParseHeapDebug for output without a
// runtime.MemStats section.
var ErrNoMemStats = errors.New("no runtime.MemStats section in heap?debug=1 output")

const memStatsHeader = "# runtime.MemStats"

// field identifies a line of the MemStats section.
type field uint32

const (
	fAlloc field = 1 << iota
	fTotalAlloc
	fSys
	fLookups
	fMallocs
	fFrees
	fHeapAlloc
	fHeapSys
	fHeapIdle
	fHeapInuse
	fHeapReleased
	fHeapObjects
	fStack
	fMSpan
	fMCache
	fBuckHashSys
	fGCSys
	fOtherSys
	fNextGC
	fLastGC
	fPauseNs
	fPauseEnd
	fNumGC
	fNumForcedGC
	fGCCPUFraction
	fMaxRSS
	fieldCount = iota
)

// required are the lines every Go release since 1.8 prints; MaxRSS
// depends on the platform.
const required = (1<<fieldCount - 1) &^ fMaxRSS

var fieldNames = [fieldCount]string{
	"Alloc", "TotalAlloc", "Sys", "Lookups", "Mallocs", "Frees",
	"HeapAlloc", "HeapSys", "HeapIdle", "HeapInuse", "HeapReleased", "HeapObjects",
	"Stack", "MSpan", "MCache", "BuckHashSys", "GCSys", "OtherSys",
	"NextGC", "LastGC", "PauseNs", "PauseEnd", "NumGC", "NumForcedGC", "GCCPUFraction", "MaxRSS",
}

// ParseHeapDebug reads the output of /debug/pprof/heap?debug=1 and returns
// its runtime.MemStats section. The profile records before the section are
// skipped line by line without being kept, so the body can be large. Lines
// of the section with unknown keys are ignored; a missing known line (other
// than MaxRSS) or a malformed value is an error, and output without the
// section gives ErrNoMemStats.
func ParseHeapDebug(r io.Reader) (MemStats, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if err := skipToSection(br); err != nil {
		return MemStats{}, err
	}
	var m MemStats
	var seen field
	for n := 1; ; n++ {
		line, err := readLine(br)
		if err != nil && err != io.EOF {
			return MemStats{}, fmt.Errorf("read heap?debug=1 output: %w", err)
		}
		if len(line) > 0 {
			f, perr := parseLine(&m, line)
			if perr != nil {
				return MemStats{}, fmt.Errorf("parse runtime.MemStats line %d: %w", n, perr)
			}
			seen |= f
		}
		if err == io.EOF {
			break
		}
	}
	if missing := required &^ seen; missing != 0 {
		return MemStats{}, fmt.Errorf("parse runtime.MemStats: missing %s (truncated output?)", names(missing))
	}
	return m, nil
}

// skipToSection reads br up to and including the section header line.
func skipToSection(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer is no header; drop the rest.
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			line = nil
		}
		if bytes.Equal(bytes.TrimRight(line, "\r\n \t"), []byte(memStatsHeader)) {
			return nil
		}
		if err == io.EOF {
			return ErrNoMemStats
		}
		if err != nil {
			return fmt.Errorf("read heap?debug=1 output: %w", err)
		}
	}
}

// readLine returns the next line without its line ending. Lines of the
// section are short, but PauseNs and PauseEnd run to a few kilobytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// Lines beyond the buffer are copied; the section has none in
		// practice (its longest line is about 5 KB).
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = br.ReadSlice('\n')
			buf = append(buf, line...)
		}
		line = buf
	}
	return bytes.TrimRight(line, "\r\n"), err
}

// parseLine stores the value of one "# Key = value" line in m and says
// which field it was; unknown keys and other lines give 0.
func parseLine(m *MemStats, line []byte) (field, error) {
	rest, ok := bytes.CutPrefix(line, []byte("# "))
	if !ok {
		return 0, nil
	}
	key, val, ok := bytes.Cut(rest, []byte(" = "))
	if !ok {
		return 0, nil
	}
	val = bytes.TrimSpace(val)
	var f field
	var dst *uint64
	switch string(key) {
	case "Alloc":
		f, dst = fAlloc, &m.Alloc
	case "TotalAlloc":
		f, dst = fTotalAlloc, &m.TotalAlloc
	case "Sys":
		f, dst = fSys, &m.Sys
	case "Lookups":
		f, dst = fLookups, &m.Lookups
	case "Mallocs":
		f, dst = fMallocs, &m.Mallocs
	case "Frees":
		f, dst = fFrees, &m.Frees
	case "HeapAlloc":
		f, dst = fHeapAlloc, &m.HeapAlloc
	case "HeapSys":
		f, dst = fHeapSys, &m.HeapSys
	case "HeapIdle":
		f, dst = fHeapIdle, &m.HeapIdle
	case "HeapInuse":
		f, dst = fHeapInuse, &m.HeapInuse
	case "HeapReleased":
		f, dst = fHeapReleased, &m.HeapReleased
	case "HeapObjects":
		f, dst = fHeapObjects, &m.HeapObjects
	case "BuckHashSys":
		f, dst = fBuckHashSys, &m.BuckHashSys
	case "GCSys":
		f, dst = fGCSys, &m.GCSys
	case "OtherSys":
		f, dst = fOtherSys, &m.OtherSys
	case "NextGC":
		f, dst = fNextGC, &m.NextGC
	case "LastGC":
		f, dst = fLastGC, &m.LastGC
	case "MaxRSS":
		f, dst = fMaxRSS, &m.MaxRSS
	case "Stack":
		return fStack, parsePair("Stack", val, &m.StackInuse, &m.StackSys)
	case "MSpan":
		return fMSpan, parsePair("MSpan", val, &m.MSpanInuse, &m.MSpanSys)
	case "MCache":
		return fMCache, parsePair("MCache", val, &m.MCacheInuse, &m.MCacheSys)
	case "PauseNs":
		return fPauseNs, parseRing("PauseNs", val, &m.PauseNs)
	case "PauseEnd":
		return fPauseEnd, parseRing("PauseEnd", val, &m.PauseEnd)
	case "NumGC":
		v, err := parseUint32("NumGC", val)
		m.NumGC = v
		return fNumGC, err
	case "NumForcedGC":
		v, err := parseUint32("NumForcedGC", val)
		m.NumForcedGC = v
		return fNumForcedGC, err
	case "GCCPUFraction":
		v, err := strconv.ParseFloat(string(val), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, fmt.Errorf("GCCPUFraction: invalid value %q", truncate(val))
		}
		m.GCCPUFraction = v
		return fGCCPUFraction, nil
	default:
		return 0, nil
	}
	v, ok := parseUint(val)
	if !ok {
		return 0, fmt.Errorf("%s: invalid value %q", key, truncate(val))
	}
	*dst = v
	return f, nil
}

// parseUint parses a decimal uint64 without allocating.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		hi, lo := bits.Mul64(v, 10)
		if hi != 0 {
			return 0, false
		}
		lo, carry := bits.Add64(lo, uint64(c-'0'), 0)
		if carry != 0 {
			return 0, false
		}
		v = lo
	}
	return v, true
}

func parseUint32(key string, val []byte) (uint32, error) {
	v, ok := parseUint(val)
	if !ok || v > math.MaxUint32 {
		return 0, fmt.Errorf("%s: invalid value %q", key, truncate(val))
	}
	return uint32(v), nil
}

// parsePair parses "inuse / sys".
func parsePair(key string, val []byte, inuse, sys *uint64) error {
	a, b, ok := bytes.Cut(val, []byte(" / "))
	var okA, okB bool
	if ok {
		*inuse, okA = parseUint(bytes.TrimSpace(a))
		*sys, okB = parseUint(bytes.TrimSpace(b))
	}
	if !okA || !okB {
		return fmt.Errorf("%s: invalid value %q, want \"inuse / sys\"", key, truncate(val))
	}
	return nil
}

// parseRing parses "[v0 v1 … v255]", fmt's rendering of a [256]uint64.
func parseRing(key string, val []byte, ring *[PauseRingSize]uint64) error {
	inner, ok := bytes.CutPrefix(val, []byte("["))
	if ok {
		inner, ok = bytes.CutSuffix(inner, []byte("]"))
	}
	if !ok {
		return fmt.Errorf("%s: invalid value: want [v0 … v%d]", key, PauseRingSize-1)
	}
	n := 0
	for len(inner) > 0 {
		var tok []byte
		i := bytes.IndexByte(inner, ' ')
		if i < 0 {
			tok, inner = inner, nil
		} else {
			tok, inner = inner[:i], inner[i+1:]
		}
		if len(tok) == 0 {
			continue
		}
		v, ok := parseUint(tok)
		if !ok {
			return fmt.Errorf("%s: invalid value %q at index %d", key, truncate(tok), n)
		}
		if n == PauseRingSize {
			return fmt.Errorf("%s: more than %d values", key, PauseRingSize)
		}
		ring[n] = v
		n++
	}
	if n != PauseRingSize {
		return fmt.Errorf("%s: %d values, want %d", key, n, PauseRingSize)
	}
	return nil
}

// truncate shortens a value quoted in an error.
func truncate(b []byte) []byte {
	const max = 40
	if len(b) > max {
		return b[:max]
	}
	return b
}

// names lists the names of the fields in set.
func names(set field) string {
	var out []string
	for i := range fieldCount {
		if set&(1<<i) != 0 {
			out = append(out, fieldNames[i])
		}
	}
	return strings.Join(out, ", ")
}
