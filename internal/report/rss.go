package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/rss"
)

// RSS is the explained resident memory of a process (heapscope rss), in
// text or JSON.
type RSS struct {
	Report *rss.Report
}

// Formats lists RSS's formats.
func (RSS) Formats() []Format { return []Format{FormatText, FormatJSON} }

func (d RSS) data() any { return d.Report }

func (d RSS) render(w io.Writer, _ Format) error {
	r := d.Report
	var b strings.Builder
	fmt.Fprintf(&b, "process %d", r.PID)
	if r.Exe != "" {
		fmt.Fprintf(&b, " (%s)", r.Exe)
	}
	fmt.Fprintf(&b, ": RSS %s, PSS %s, swap %s", humanize.Bytes(float64(r.RSSBytes)), humanize.Bytes(float64(r.PSSBytes)), humanize.Bytes(float64(r.SwapBytes)))
	if r.HWMBytes > 0 {
		fmt.Fprintf(&b, ", peak RSS %s", humanize.Bytes(float64(r.HWMBytes)))
	}
	b.WriteString("\n\n")
	b.WriteString(indent(kindsTable(r.Kinds).Render(), "  "))

	h := r.GoHeap
	b.WriteString("\nGo heap arenas (goroutine stacks included): ")
	if h.Mappings == 0 {
		b.WriteString("none found\n")
	} else {
		fmt.Fprintf(&b, "%s resident of %s mapped (%s) in %d mappings, %d arenas reserved (%s)\n",
			humanize.Bytes(float64(h.RSSBytes)), humanize.Bytes(float64(h.SizeBytes)), humanize.Percent(h.RSSShare),
			h.Mappings, h.Arenas, humanize.Bytes(float64(h.ReservedBytes)))
	}
	if h.Note != "" && h.Mappings > 0 {
		fmt.Fprintf(&b, "  note: %s\n", h.Note)
	}

	if rt := r.Runtime; rt != nil {
		b.WriteString("\nruntime (MemStats): ")
		fmt.Fprintf(&b, "HeapSys %s, HeapInuse %s, HeapIdle %s, HeapReleased %s, StackInuse %s, Sys %s\n",
			humanize.Bytes(float64(rt.HeapSysBytes)), humanize.Bytes(float64(rt.HeapInuseBytes)), humanize.Bytes(float64(rt.HeapIdleBytes)),
			humanize.Bytes(float64(rt.HeapReleasedBytes)), humanize.Bytes(float64(rt.StackInuseBytes)), humanize.Bytes(float64(rt.SysBytes)))
		switch {
		case rt.SourceURL != "" && rt.Discovered:
			fmt.Fprintf(&b, "  from %s, found on the process's listening port\n", rt.SourceURL)
		case rt.SourceURL != "":
			fmt.Fprintf(&b, "  from %s\n", rt.SourceURL)
		}
		fmt.Fprintf(&b, "  committed (Sys − HeapReleased) %s: held in the arenas (HeapSys − HeapReleased + StackInuse) %s against %s resident there, mapped outside them (Sys − HeapSys − StackInuse) %s\n",
			humanize.Bytes(float64(rt.CommittedBytes)), humanize.Bytes(float64(rt.ArenaHeldBytes)), humanize.Bytes(float64(h.RSSBytes)), humanize.Bytes(float64(rt.OffHeapBytes)))
	} else if r.RuntimeUnknown != "" {
		fmt.Fprintf(&b, "\nruntime (MemStats): unknown: %s\n", r.RuntimeUnknown)
	}

	if cg := r.Cgroup; cg != nil {
		fmt.Fprintf(&b, "\ncgroup v%d %s: ", cg.Version, cg.Path)
		if cg.Unlimited {
			b.WriteString("no limit")
		} else {
			fmt.Fprintf(&b, "limit %s", humanize.Bytes(float64(cg.LimitBytes)))
		}
		fmt.Fprintf(&b, ", usage %s (anon %s, file %s)", humanize.Bytes(float64(cg.UsageBytes)), humanize.Bytes(float64(cg.AnonBytes)), humanize.Bytes(float64(cg.FileBytes)))
		if !cg.Unlimited {
			fmt.Fprintf(&b, ", headroom %s (%s counting page cache as reclaimable)", humanize.Bytes(float64(cg.HeadroomBytes)), humanize.Bytes(float64(cg.HeadroomAnonBytes)))
		}
		b.WriteString("\n")
		for _, n := range cg.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
	}

	if len(r.Gap) > 0 {
		b.WriteString("\nhow the kernel's view squares with the runtime's:\n")
		for _, e := range r.Gap {
			fmt.Fprintf(&b, "  - %s\n", e.Text)
		}
	}
	writeWarnings(&b, r.Warnings)
	_, err := io.WriteString(w, b.String())
	return err
}

// kindsTable lays out the per-kind sums.
func kindsTable(kinds []rss.Usage) table.Writer {
	tw := plainTable()
	tw.AppendHeader(table.Row{"kind", "mappings", "size", "rss", "pss", "private dirty", "swap"})
	rightAlign(tw, 2, 7)
	for _, u := range kinds {
		tw.AppendRow(table.Row{
			kindLabel(u.Kind), u.Mappings,
			humanize.Bytes(float64(u.SizeBytes)), humanize.Bytes(float64(u.RSSBytes)), humanize.Bytes(float64(u.PSSBytes)),
			humanize.Bytes(float64(u.PrivateDirtyBytes)), humanize.Bytes(float64(u.SwapBytes)),
		})
	}
	return tw
}

// kindLabel names a kind for people.
func kindLabel(k string) string {
	switch k {
	case "go_heap":
		return "Go heap arenas"
	case "stack":
		return "main [stack]"
	case "anonymous":
		return "other anonymous"
	case "reserved":
		return "reserved (no access)"
	case "binary":
		return "binary"
	case "libraries":
		return "shared libraries"
	case "files":
		return "file-backed"
	}
	return k
}
