// Package humanize writes figures for people: bytes with IEC units,
// counts with SI suffixes, rates, durations, shares, tallies, the short
// forms of Go function names and source paths, and text made safe inside
// Markdown.
// Reports, findings and comparisons all speak with these words, so the same
// figure reads the same everywhere.
package humanize

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bytes formats n bytes with IEC units: 512 B, 1.5 KiB, 12.3 MiB.
func Bytes(n float64) string {
	neg := n < 0
	if neg {
		n = -n
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	var s string
	switch {
	case i == 0:
		s = fmt.Sprintf("%.0f %s", n, units[i])
	case n >= 100:
		s = fmt.Sprintf("%.0f %s", n, units[i])
	default:
		s = fmt.Sprintf("%.1f %s", n, units[i])
	}
	if neg {
		return "-" + s
	}
	return s
}

// Number formats a quantity without a unit of its own, such as a ratio
// or a chart's tick: four significant digits, never an exponent — Count's
// suffixes past ten thousand, and as many decimals as it takes below a
// ten-thousandth: 0.1235, 1235, 12.3k, 0.0000123.
func Number(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case a >= 1e4:
		return Count(v)
	case a == 0:
		return "0"
	case a < 1e-4:
		return strings.TrimRight(strconv.FormatFloat(v, 'f', 2-int(math.Floor(math.Log10(a))), 64), "0")
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// Count formats a count with an SI suffix past ten thousand: 950, 12.3k, 4.5M.
func Count(n float64) string {
	a := math.Abs(n)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.1fG", n/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.1fM", n/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.1fk", n/1e3)
	case a == math.Trunc(a):
		return fmt.Sprintf("%.0f", n)
	default:
		return fmt.Sprintf("%.1f", n)
	}
}

// Seconds formats a duration given in seconds with a unit that suits it.
func Seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d == 0:
		return "0"
	case d < time.Microsecond:
		return d.String()
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return d.Round(time.Millisecond).String()
	}
}

// Rate formats a rate per second: two decimals below 100 unless it is
// whole (0.25/s, 12.50/s), otherwise as a Count (950/s, 12.3k/s).
func Rate(perSecond float64) string {
	if math.Abs(perSecond) < 100 && perSecond != math.Trunc(perSecond) {
		return fmt.Sprintf("%.2f/s", perSecond)
	}
	return Count(perSecond) + "/s"
}

// Hours formats a long span given in hours, such as the time left before
// a limit: as Seconds below an hour, in hours below two days (36.0 hours),
// in days beyond (3.5 days).
func Hours(h float64) string {
	switch {
	case h < 1:
		return Seconds(math.Round(h * 3600))
	case h < 48:
		return fmt.Sprintf("%.1f hours", h)
	default:
		return fmt.Sprintf("%.1f days", h/24)
	}
}

// Tally lists counts by name, largest first and ties by name, each name
// and count joined by sep: with " × ", "200 × 44975, 503 × 15". It is
// "none" when there is nothing to count.
func Tally(counts map[string]uint64, sep string) string {
	if len(counts) == 0 {
		return "none"
	}
	names := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s%s%d", k, sep, counts[k])
	}
	return strings.Join(parts, ", ")
}

// Percent formats a share between 0 and 1 as a percentage, with two
// decimals below 1% so that a small share does not read as zero.
func Percent(share float64) string {
	if share != 0 && math.Abs(share) < 0.01 {
		return fmt.Sprintf("%.2f%%", share*100)
	}
	return fmt.Sprintf("%.1f%%", share*100)
}

// Value formats a sample value in its unit.
func Value(v int64, unit string) string {
	switch unit {
	case "bytes":
		return Bytes(float64(v))
	case "nanoseconds":
		return Seconds(float64(v) / 1e9)
	default:
		return Count(float64(v))
	}
}

// ShortFunction drops the import path of a function name, keeping the
// package's last element: github.com/a/b/cache.(*W).Process becomes
// cache.(*W).Process.
func ShortFunction(name string) string {
	slash := strings.LastIndexByte(name, '/')
	if slash < 0 {
		return name
	}
	return name[slash+1:]
}

// ShortFile keeps the last two elements of a source path, enough to find
// the file in a repository: /src/app/cache/cache.go becomes cache/cache.go.
func ShortFile(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return path
	}
	j := strings.LastIndexByte(path[:i], '/')
	return path[j+1:]
}

// Location formats file:line in its short form, or "?" when unknown.
func Location(file string, line int64) string {
	if file == "" {
		return "?"
	}
	if line <= 0 {
		return ShortFile(file)
	}
	return fmt.Sprintf("%s:%d", ShortFile(file), line)
}

// MarkdownText keeps text from breaking a Markdown table or turning into
// formatting.
func MarkdownText(s string) string {
	return markdownEscaper.Replace(s)
}

var markdownEscaper = strings.NewReplacer("|", `\|`, "*", `\*`, "`", "\\`", "<", "&lt;", ">", "&gt;", "\n", " ")

// MarkdownCode writes s as inline code, inside a table cell too: a fence
// longer than any run of backquotes in s, and no bar or line break.
func MarkdownCode(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", `\|`)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
