package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
)

// Load is the result of driving load (heapscope load): the figures, the
// latency and, when there is one, the per-second series, in text,
// Markdown or JSON.
type Load struct {
	Load *result.Load
}

// Formats lists Load's formats.
func (Load) Formats() []Format { return textFormats }

func (d Load) data() any { return d.Load }

func (d Load) render(w io.Writer, f Format) error {
	l := d.Load
	switch f {
	case FormatMarkdown:
		var b bytes.Buffer
		fmt.Fprintf(&b, "## Load: %s\n\n", loadHeading(l))
		for _, t := range loadTables(l, true) {
			fmt.Fprintf(&b, "%s\n\n", t.RenderMarkdown())
		}
		_, err := w.Write(b.Bytes())
		return err
	default:
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s\n", loadHeading(l))
		for _, t := range loadTables(l, false) {
			b.WriteString("\n")
			for _, line := range strings.Split(t.Render(), "\n") {
				fmt.Fprintf(&b, "%s\n", strings.TrimRight(line, " "))
			}
		}
		_, err := w.Write(b.Bytes())
		return err
	}
}

func loadHeading(l *result.Load) string {
	target := l.Method + " " + l.URL
	if l.Targets > 1 {
		target = fmt.Sprintf("%d requests round-robin, first %s", l.Targets, target)
	}
	model := fmt.Sprintf("closed model, %d connections", l.Connections)
	if l.Model == result.LoadModelOpen {
		model = fmt.Sprintf("open model, %s asked", humanize.Rate(l.RequestedRate))
		if l.RampSeconds > 0 {
			model += fmt.Sprintf(" after a %s ramp", humanize.Seconds(l.RampSeconds))
		}
	}
	s := fmt.Sprintf("%s: %s, %s", target, model, humanize.Seconds(l.DurationSeconds))
	if l.Protocol != "" {
		s += ", " + l.Protocol
	}
	if l.NoKeepAlive {
		s += ", no keep-alive"
	}
	if l.Interrupted {
		s += " (interrupted)"
	}
	return s
}

// loadTables lays out a load result: the figures, the latency, and the
// per-second series when there is one. Markdown tables need a header row.
func loadTables(l *result.Load, markdown bool) []table.Writer {
	sum := plainTable()
	if markdown {
		sum.AppendHeader(table.Row{"figure", "value"})
	}
	sent := fmt.Sprintf("%d sent, %d completed", l.Requests, l.Completed)
	if l.Dropped > 0 {
		sent += fmt.Sprintf(", %d dropped", l.Dropped)
	}
	sum.AppendRow(table.Row{"requests", sent})
	rate := humanize.Rate(l.AchievedRate)
	if l.Model == result.LoadModelOpen {
		rate += fmt.Sprintf(" (asked %s)", humanize.Rate(l.RequestedRate))
	}
	sum.AppendRow(table.Row{"rate", rate})
	if l.Model == result.LoadModelOpen {
		sum.AppendRow(table.Row{"concurrency", fmt.Sprintf("%s, at most %d requests in flight (bound %d)", workersLine(l), l.PeakInFlight, l.MaxInFlight)})
	} else if l.Opened > uint64(l.Connections) {
		sum.AppendRow(table.Row{"connections", workersLine(l)})
	}
	sum.AppendRow(table.Row{"throughput", fmt.Sprintf("%s/s in, %s/s out", humanize.Bytes(l.BytesInPerSecond), humanize.Bytes(l.BytesOutPerSecond))})
	sum.AppendRow(table.Row{"success", fmt.Sprintf("%.2f %%", 100*l.SuccessRatio)})
	sum.AppendRow(table.Row{"status codes", humanize.Tally(l.StatusCodes, " × ")})
	errs := "none"
	if l.Errors > 0 {
		errs = fmt.Sprintf("%d: %s", l.Errors, humanize.Tally(l.ErrorKinds, " "))
	}
	sum.AppendRow(table.Row{"errors", errs})
	if lag := l.Lag; lag != nil {
		var sched string
		switch {
		case lag.HeldBack == result.LoadHeldByMaxInFlight:
			sched = fmt.Sprintf("HELD BACK by --max-in-flight %d: the service did not answer fast enough to free a slot; %s sent of %s asked",
				l.MaxInFlight, humanize.Rate(l.AchievedRate), humanize.Rate(l.RequestedRate))
			if l.Dropped > 0 {
				sched += fmt.Sprintf(", %d requests dropped", l.Dropped)
			}
			sched += fmt.Sprintf(", lag p99 %s, max %s; latency counts the wait", humanize.Seconds(lag.P99Seconds), humanize.Seconds(lag.MaxSeconds))
		case l.Dropped > 0:
			sched = fmt.Sprintf("FELL BEHIND: %s sent of %s asked, %d requests dropped, lag p99 %s, max %s; latency counts the lag",
				humanize.Rate(l.AchievedRate), humanize.Rate(l.RequestedRate), l.Dropped, humanize.Seconds(lag.P99Seconds), humanize.Seconds(lag.MaxSeconds))
		case lag.FellBehind:
			sched = fmt.Sprintf("LATE: the rate was kept, but 1 %% of the requests left %s or more late (p99 %s, max %s), waiting for the pacer or a free connection; latency counts the lag",
				humanize.Seconds(result.LoadBehindLag.Seconds()), humanize.Seconds(lag.P99Seconds), humanize.Seconds(lag.MaxSeconds))
		default:
			sched = fmt.Sprintf("kept: lag p99 %s, max %s", humanize.Seconds(lag.P99Seconds), humanize.Seconds(lag.MaxSeconds))
		}
		sum.AppendRow(table.Row{"schedule", sched})
	}

	lat := plainTable()
	lat.AppendHeader(table.Row{"latency", "min", "mean", "p50", "p90", "p99", "p99.9", "max"})
	ls := l.LatencySeconds
	lat.AppendRow(table.Row{"", humanize.Seconds(ls.Min), humanize.Seconds(ls.Mean), humanize.Seconds(ls.P50), humanize.Seconds(ls.P90),
		humanize.Seconds(ls.P99), humanize.Seconds(ls.P999), humanize.Seconds(ls.Max)})
	rightAlign(lat, 2, 8)
	tables := []table.Writer{sum, lat}

	if len(l.Series) > 0 {
		ser := plainTable()
		header := table.Row{"second", "sent", "done", "errors", "p50", "p90", "p99", "max"}
		if l.Lag != nil {
			header = append(header, "max lag")
		}
		ser.AppendHeader(header)
		for _, s := range l.Series {
			row := table.Row{s.Second, s.Sent, s.Done, s.Errors, humanize.Seconds(s.LatencyP50Seconds), humanize.Seconds(s.LatencyP90Seconds),
				humanize.Seconds(s.LatencyP99Seconds), humanize.Seconds(s.LatencyMaxSeconds)}
			if l.Lag != nil {
				row = append(row, humanize.Seconds(s.MaxLagSeconds))
			}
			ser.AppendRow(row)
		}
		rightAlign(ser, 1, len(header))
		tables = append(tables, ser)
	}
	return tables
}

// workersLine says how many connections carried the load: the open
// model's workers (or the closed model's connections), and how many
// connections they had to open when the server closed them.
func workersLine(l *result.Load) string {
	if l.Opened <= uint64(l.Connections) {
		return fmt.Sprintf("%d connections", l.Connections)
	}
	who := "workers"
	if l.Model != result.LoadModelOpen {
		who = "senders"
	}
	why := "reopened after the server closed them or a request timed out"
	if l.NoKeepAlive {
		why = "--no-keepalive"
	}
	return fmt.Sprintf("%d %s over %d connections (%s)", l.Connections, who, l.Opened, why)
}
