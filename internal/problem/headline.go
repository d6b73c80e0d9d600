package problem

import (
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
)

// Headline is the problem in one line: its kind, where, how fast it
// grows and how soon it reaches the limit, then what it is (Gist of its
// title), as in "leak.inuse-growth at cache/cache.go:42, +1.2 MiB/min,
// limit in 3.0 hours: a map that only grows holds the leak". The site is
// shortened (ShortWhere), figures are humanized; the whole title is the
// evidence's.
func (p Problem) Headline() string {
	var b strings.Builder
	b.WriteString(p.Kind)
	if p.Where != "" {
		b.WriteString(" at ")
		b.WriteString(ShortWhere(p.Where))
	}
	if t := p.Trend; t != nil {
		b.WriteString(", ")
		b.WriteString(t.Speed())
		if t.SecondsToLimit > 0 {
			b.WriteString(", limit in ")
			b.WriteString(humanize.Hours(t.SecondsToLimit / 3600))
		}
	}
	if g := Gist(p.Title); g != "" {
		b.WriteString(": ")
		b.WriteString(g)
	}
	return b.String()
}

// gistWidth bounds a title's gist.
const gistWidth = 100

// Gist is what a finding's title says the problem is, in a few words:
// the catalogue's name of the misuse when the title ends with one ("… —
// a sync.Map used as a cache that nothing evicts"), else the title's
// first clause, before its figures and sites ("a map that only grows
// holds the leak (the line inserts …): at …" is "a map that only grows
// holds the leak").
func Gist(title string) string {
	t := strings.Join(strings.Fields(title), " ")
	// A bundle's finding of a known problem leads with its age ("known
	// since 2026-12-03T19:03:31Z (2 captures): …"): the problem's own
	// first seen says that.
	if rest, ok := strings.CutPrefix(t, "known since "); ok {
		if _, after, ok := strings.Cut(rest, ": "); ok {
			t = after
		}
	}
	if i := strings.LastIndex(t, " — "); i >= 0 {
		return Fit(t[i+len(" — "):], gistWidth)
	}
	cut := len(t)
	for _, sep := range []string{": ", " (", "; "} {
		if i := strings.Index(t, sep); i > 0 && i < cut {
			cut = i
		}
	}
	return Fit(t[:cut], gistWidth)
}

// Speed is the trend's rate for people: "+1.2 MiB/min", "+3.5 goroutines/min".
func (t Trend) Speed() string {
	if t.Unit == "bytes" {
		return "+" + humanize.Bytes(t.PerMinute) + "/min"
	}
	return "+" + humanize.Count(t.PerMinute) + " " + t.Unit + "/min"
}
