package report

import (
	"strings"

	"github.com/heapscope/heapscope/internal/gate"
)

// outcomeLabel is how people read a gate's outcome, in bench's reports and
// compare's alike: PASS, WARN or FAIL, the JSON's word in capitals.
func outcomeLabel(o gate.Outcome) string { return strings.ToUpper(string(o)) }

// outcomeMark is outcomeLabel with a sign that colours a Markdown table
// or a page: ✅ PASS, ⚠️ WARN, ❌ FAIL.
func outcomeMark(o gate.Outcome) string {
	switch o {
	case gate.Fail:
		return "❌ " + outcomeLabel(o)
	case gate.Warn:
		return "⚠️ " + outcomeLabel(o)
	}
	return "✅ " + outcomeLabel(o)
}
