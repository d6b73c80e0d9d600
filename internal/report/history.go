package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/store"
)

// History is what a watch store holds (heapscope history): scheduled
// runs, trigger bundles and findings, newest first, in text, Markdown or
// JSON ({"runs": […], "bundles": […], "findings": […]}, paths relative to
// Dir).
type History struct {
	History store.History
	// Dir is the store's directory, named in the text heading.
	Dir string
}

// Formats lists History's formats.
func (History) Formats() []Format { return textFormats }

func (d History) data() any { return d.History }

func (d History) render(w io.Writer, f Format) error {
	h := d.History
	var b bytes.Buffer
	md := f == FormatMarkdown
	heading := func(s string) {
		if md {
			fmt.Fprintf(&b, "## %s\n\n", s)
		} else {
			fmt.Fprintf(&b, "%s\n", s)
		}
	}
	emit := func(t table.Writer) {
		if md {
			fmt.Fprintf(&b, "%s\n\n", t.RenderMarkdown())
			return
		}
		for _, line := range strings.Split(t.Render(), "\n") {
			fmt.Fprintf(&b, "%s\n", strings.TrimRight(line, " "))
		}
		b.WriteString("\n")
	}
	if d.Dir != "" && !md {
		fmt.Fprintf(&b, "Store %s (paths below are under it)\n\n", d.Dir)
	}
	heading(fmt.Sprintf("Bundles (%d)", len(h.Bundles)))
	if len(h.Bundles) > 0 {
		t := plainTable()
		t.AppendHeader(table.Row{"time", "target", "trigger", "value", "capture", "path"})
		for _, e := range h.Bundles {
			trig, value := "", ""
			if e.Trigger != nil {
				trig, value = e.Trigger.Expr, triggerValue(e.Trigger)
			}
			if e.BeforeOOM {
				trig += " (before an OOM kill)"
			}
			t.AppendRow(table.Row{historyTime(e.Time), e.Target, trig, value, humanize.Seconds(e.CaptureSeconds), e.Path})
		}
		emit(t)
	} else if !md {
		b.WriteString("\n")
	}
	heading(fmt.Sprintf("Runs (%d)", len(h.Runs)))
	if len(h.Runs) > 0 {
		t := plainTable()
		t.AppendHeader(table.Row{"time", "target", "status", "size", "path"})
		for _, e := range h.Runs {
			t.AppendRow(table.Row{historyTime(e.Time), e.Target, e.Status, humanize.Bytes(float64(e.Bytes)), e.Path})
		}
		emit(t)
	} else if !md {
		b.WriteString("\n")
	}
	heading(fmt.Sprintf("Findings (%d)", len(h.Findings)))
	if len(h.Findings) > 0 {
		t := plainTable()
		t.AppendHeader(table.Row{"time", "target", "severity", "finding", "where"})
		for _, fd := range h.Findings {
			t.AppendRow(table.Row{historyTime(fd.Time), fd.Target, fd.Severity, fd.Title, fd.Where})
		}
		emit(t)
	}
	_, err := w.Write(bytes.TrimRight(b.Bytes(), "\n"))
	if err == nil {
		_, err = io.WriteString(w, "\n")
	}
	return err
}

// triggerValue shows the value that crossed in the expression's unit.
func triggerValue(t *store.Trigger) string {
	switch t.Unit {
	case "%":
		return humanize.Percent(t.Value / 100)
	case "B":
		return humanize.Bytes(t.Value)
	case "s":
		return humanize.Seconds(t.Value)
	}
	return humanize.Count(t.Value)
}

func historyTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }
