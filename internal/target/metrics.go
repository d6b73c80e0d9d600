package target

import (
	"bytes"
	"math"
	"strconv"
)

// ResidentMemory finds process_resident_memory_bytes, the resident set size
// that Prometheus' process collector exports, in a text exposition body. It
// reports false when the metric is absent or unreadable.
//
// It reads lines in place, however long, and allocates nothing.
func ResidentMemory(metrics []byte) (uint64, bool) {
	v, ok := MetricValue(metrics, "process_resident_memory_bytes")
	if !ok || v < 0 || v >= 1<<64 {
		return 0, false
	}
	return uint64(v), true
}

// MetricValue finds the value of metric name in a Prometheus text
// exposition body: that of its first line, labels skipped (the gauges of
// client_golang's Go and process collectors have none). It reports false
// when the metric is absent, when its first line is unreadable, and for
// NaN.
//
// It reads lines in place, however long, and allocates nothing.
func MetricValue(metrics []byte, name string) (float64, bool) {
	for len(metrics) > 0 {
		line := metrics
		if i := bytes.IndexByte(metrics, '\n'); i >= 0 {
			line, metrics = metrics[:i], metrics[i+1:]
		} else {
			metrics = nil
		}
		line = bytes.TrimLeft(line, " \t")
		if name == "" || !bytes.HasPrefix(line, []byte(name)) {
			continue
		}
		rest := line[len(name):]
		if len(rest) > 0 && isNameByte(rest[0]) {
			continue // a longer name with the same prefix
		}
		rest = bytes.TrimLeft(rest, " \t")
		if len(rest) > 0 && rest[0] == '{' {
			end := labelsEnd(rest)
			if end < 0 {
				return 0, false
			}
			rest = bytes.TrimLeft(rest[end+1:], " \t")
		}
		if end := bytes.IndexAny(rest, " \t\r"); end >= 0 {
			rest = rest[:end]
		}
		if len(rest) == 0 {
			return 0, false
		}
		v, err := strconv.ParseFloat(string(rest), 64)
		if err != nil || math.IsNaN(v) {
			return 0, false
		}
		return v, true
	}
	return 0, false
}

// labelsEnd returns the index of the '}' that closes the label set opening
// b, skipping quoted label values and their escapes, or -1.
func labelsEnd(b []byte) int {
	quoted := false
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == '}':
			return i
		}
	}
	return -1
}

// isNameByte reports whether c may continue a metric name.
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == ':'
}
