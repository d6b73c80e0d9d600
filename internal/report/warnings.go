package report

import (
	"fmt"
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
)

// writeWarnings lists warnings for a terminal, a "warning: …" line each.
func writeWarnings(b *strings.Builder, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(b, "warning: %s\n", w)
	}
}

// writeMarkdownWarnings lists warnings as a Markdown section under
// heading ("## Warnings"); nothing when there are none.
func writeMarkdownWarnings(b *strings.Builder, heading string, warnings []string) {
	if len(warnings) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s\n\n", heading)
	for _, w := range warnings {
		fmt.Fprintf(b, "- %s\n", humanize.MarkdownText(w))
	}
}
