package diagnose

import (
	"strings"

	"github.com/heapscope/heapscope/internal/result"
)

// oneFindingPerCause folds an alloc.hot-spot into a pattern finding at
// the same line: one cause, one finding, with the pattern's specific fix,
// the higher severity of the two, and the hot spot's cost figures added
// to the pattern's evidence.
func oneFindingPerCause(findings []result.Finding) []result.Finding {
	type line struct {
		function, file string
		line           int64
	}
	patterns := map[line]int{}
	for i, f := range findings {
		if isPattern(f.ID) && f.Line > 0 {
			if _, seen := patterns[line{f.Function, f.File, f.Line}]; !seen {
				patterns[line{f.Function, f.File, f.Line}] = i
			}
		}
	}
	out := findings[:0]
	for _, f := range findings {
		if f.ID != "alloc.hot-spot" {
			out = append(out, f)
			continue
		}
		i, ok := patterns[line{f.Function, f.File, f.Line}]
		if !ok {
			out = append(out, f)
			continue
		}
		p := &findings[i]
		if SeverityOf(f) > SeverityOf(*p) {
			p.Severity = f.Severity
		}
		if p.Evidence == nil {
			p.Evidence = map[string]float64{}
		}
		for k, v := range f.Evidence {
			if _, has := p.Evidence[k]; !has {
				p.Evidence[k] = v
			}
		}
		p.Confidence = max(p.Confidence, f.Confidence)
	}
	return out
}

func isPattern(id string) bool { return len(id) > 8 && id[:8] == "pattern." }

// hideSmallHotSpots removes the hot spots too small to matter by default:
// those rated info (their absolute cost is below every low threshold) or
// resting on fewer than MinSamples samples. It returns the findings kept
// and how many it hid.
func hideSmallHotSpots(findings []result.Finding, minSamples float64) ([]result.Finding, int) {
	out := findings[:0]
	hidden := 0
	for _, f := range findings {
		if f.ID == "alloc.hot-spot" && (SeverityOf(f) <= Info || f.Evidence["samples"] < minSamples) {
			hidden++
			continue
		}
		out = append(out, f)
	}
	return out, hidden
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// setCauses gives every finding its cause key (result.Finding.Cause):
// its kind, the catalogue entry a check put in Cause (a misuse or a
// known bug) and the line it names.
func setCauses(findings []result.Finding) {
	for i := range findings {
		findings[i].Cause = CauseKey(findings[i])
	}
}

// CauseKey is f's cause key: the first word of its id, the catalogue
// entry f.Cause holds when a check set one, and its site, as in
// "leak/http-response-body-not-closed at main.fetch (main.go:42)".
func CauseKey(f result.Finding) string {
	kind, _, _ := strings.Cut(f.ID, ".")
	key := kind
	if f.Cause != "" {
		key += "/" + f.Cause
	} else if kind == "regression" || kind == "gc" || kind == "rss" {
		key = f.ID
	}
	if f.Function == "" {
		return key
	}
	return key + " at " + site{f.Function, f.File, f.Line}.where()
}
