package problem

import (
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
)

// Headline is the problem in one line: its kind, where, how fast it
// grows and how soon it reaches the limit, then its title, as in
// "leak.inuse-growth at cache/cache.go:42, +1.2 MiB/min, limit in 3.0
// hours: inuse_space grows …". The site is shortened (ShortWhere),
// figures are humanized.
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
	if p.Title != "" {
		b.WriteString(": ")
		b.WriteString(strings.Join(strings.Fields(p.Title), " "))
	}
	return b.String()
}

// Speed is the trend's rate for people: "+1.2 MiB/min", "+3.5 goroutines/min".
func (t Trend) Speed() string {
	if t.Unit == "bytes" {
		return "+" + humanize.Bytes(t.PerMinute) + "/min"
	}
	return "+" + humanize.Count(t.PerMinute) + " " + t.Unit + "/min"
}
