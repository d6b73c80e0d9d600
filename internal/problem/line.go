package problem

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Line is the problem in one line of at most width characters: its
// state and severity, then its headline and, before the title, how many captures showed it over
// what span, as in
//
//	open     high   leak.inuse-growth at leakycache/leakycache.go:38, +4.4 MiB/min, 3 captures 2026-03-01 12:00Z–12:20Z: the live heap …
//
// A longer line is cut with "…" (Fit).
func (p Problem) Line(width int) string {
	n := "captures"
	if p.Captures == 1 {
		n = "capture"
	}
	h := p
	h.Title = ""
	line := fmt.Sprintf("%-8s %-6s %s, %d %s %s", p.State, p.Severity, h.Headline(), p.Captures, n, Span(p.FirstSeen, p.LastSeen))
	if title := strings.Join(strings.Fields(p.Title), " "); title != "" {
		line += ": " + title
	}
	return Fit(line, width)
}

// Span is the time from first to last in UTC, to the minute: the date
// once when both fall on the same day ("2026-03-01 12:00Z–12:20Z"), the
// time alone when they are the same minute.
func Span(first, last time.Time) string {
	const day, minute = "2006-01-02 ", "15:04Z"
	first, last = first.UTC(), last.UTC()
	a := first.Format(day + minute)
	switch {
	case first.Format(day+minute) == last.Format(day+minute):
		return a
	case first.Format(day) == last.Format(day):
		return a + "–" + last.Format(minute)
	}
	return a + "–" + last.Format(day+minute)
}

// ShortWhere shortens a site to its last two path elements:
// github.com/org/mod/pkg/file.go:38 is pkg/file.go:38.
func ShortWhere(where string) string {
	parts := strings.Split(where, "/")
	if len(parts) <= 2 {
		return where
	}
	return strings.Join(parts[len(parts)-2:], "/")
}

// Fit cuts s to at most width characters, ending a cut line with "…";
// a width under 2 leaves s whole.
func Fit(s string, width int) string {
	if width < 2 || utf8.RuneCountInString(s) <= width {
		return s
	}
	i, n := 0, 0
	for i = range s {
		if n == width-1 {
			break
		}
		n++
	}
	return strings.TrimRight(s[:i], " ") + "…"
}
