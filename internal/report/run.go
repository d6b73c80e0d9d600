package report

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
)

// Run is a profiling run: the terminal summary (text), report.md
// (Markdown), report.html (HTML) or result.json (JSON).
type Run struct {
	Result *result.Run
	// Dir is the run directory, which the summary names; none when empty.
	Dir string
	// Flames are the flame graphs report.html embeds.
	Flames []HTMLFlame
}

// Formats lists Run's formats.
func (Run) Formats() []Format {
	return []Format{FormatText, FormatJSON, FormatMarkdown, FormatHTML}
}

func (r Run) data() any { return r.Result }

func (r Run) render(w io.Writer, f Format) error {
	switch f {
	case FormatMarkdown:
		return Markdown(w, r.Result)
	case FormatHTML:
		return HTML(w, r.Result, r.Flames)
	}
	return Summary(w, r.Result, r.Dir)
}

// summarySites is how many sites the terminal summary shows per table.
const summarySites = 3

// Summary writes what a person needs from a run in ten seconds: the
// heaviest allocation sites, heap growth, GC, RSS against the heap, cost per
// request, and where the report is. dir is the run directory.
func Summary(w io.Writer, r *result.Run, dir string) error {
	if r.Repeat != nil {
		return repeatSummary(w, r, dir)
	}
	// Sections are separated by one blank line; empty ones are left out.
	var sections []string
	var b strings.Builder
	fmt.Fprintf(&b, "heapscope profiled %s for %s (%s)\n", r.Target.URL, humanize.Seconds(r.Window.DurationSeconds), r.Status)
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "  not collected: %s: %s\n", f.Step, f.Error)
	}
	if why := r.Window.Extended; why != "" {
		fmt.Fprintf(&b, "  window kept open: %s\n", why)
	}
	sections = append(sections, b.String())

	// The verdict first: what is wrong, where, and what to do.
	b.Reset()
	findingsBrief(&b, r.Findings, r.DiagnosisNotes, r.HiddenHotSpots, dir)
	sections = append(sections, b.String())

	b.Reset()
	if line := allocationLine(r); line != "" {
		fmt.Fprintf(&b, "Allocations over the window: %s\n", line)
	}
	if line := perRequestLine(r); line != "" {
		fmt.Fprintf(&b, "Per request: %s\n", line)
	}
	sections = append(sections, b.String())

	b.Reset()
	if t := r.TopFor("alloc_space"); t != nil && len(t.Sites) > 0 {
		fmt.Fprintf(&b, "Heaviest allocation sites (alloc_space, delta over the window):\n")
		b.WriteString(indent(sitesTable(*t, summarySites).Render(), "  "))
	}
	sections = append(sections, b.String())

	b.Reset()
	if line := growthLine(r); line != "" {
		fmt.Fprintf(&b, "Heap across the snapshots (each after a forced GC): %s\n", line)
	}
	if t := r.TopFor("inuse_space"); t != nil && len(t.Sites) > 0 {
		when := "at the end"
		if _, ok := r.UnmeasuredReason(result.FigureHeapGrowth); ok {
			when = "at the last snapshot collected"
		}
		fmt.Fprintf(&b, "Largest in use %s (inuse_space):\n", when)
		b.WriteString(indent(sitesTable(*t, summarySites).Render(), "  "))
	}
	sections = append(sections, b.String())

	b.Reset()
	fmt.Fprintf(&b, "GC: %s\n", gcLine(r))
	fmt.Fprintf(&b, "RSS: %s\n", rssLine(r))
	if line := loadLine(r); line != "" {
		fmt.Fprintf(&b, "Load: %s\n", line)
	}
	writeWarnings(&b, r.Warnings)
	sections = append(sections, b.String())

	if dir != "" && r.Files.Report != "" {
		report := filepath.Join(dir, r.Files.Report)
		if r.Files.HTMLReport != "" {
			report += ", " + filepath.Join(dir, r.Files.HTMLReport)
		}
		sections = append(sections, fmt.Sprintf("Report: %s\n", report))
	}
	sections = slices.DeleteFunc(sections, func(s string) bool { return s == "" })
	_, err := io.WriteString(w, strings.Join(sections, "\n"))
	return err
}

// Markdown writes report.md: the summary's figures as tables, every top
// table, and what each number means.
func Markdown(w io.Writer, r *result.Run) error {
	if r.Repeat != nil {
		return repeatMarkdown(w, r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# heapscope run: %s\n\n", r.Target.URL)
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| status | %s |\n", r.Status)
	fmt.Fprintf(&b, "| window | %s – %s (%s) |\n", r.Window.Start.Format("2006-01-02 15:04:05.000Z"), r.Window.End.Format("15:04:05.000Z"), humanize.Seconds(r.Window.DurationSeconds))
	if why := r.Window.Extended; why != "" {
		fmt.Fprintf(&b, "| window kept open | %s |\n", why)
	}
	if r.Target.PID > 0 {
		fmt.Fprintf(&b, "| process | pid %d |\n", r.Target.PID)
	}
	if r.Target.GoVersion != "" {
		fmt.Fprintf(&b, "| Go | %s |\n", r.Target.GoVersion)
	}
	if r.Target.MainModule != "" {
		fmt.Fprintf(&b, "| main module | `%s` |\n", r.Target.MainModule)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Target.Env)) {
		fmt.Fprintf(&b, "| %s | `%s` |\n", k, r.Target.Env[k])
	}
	fmt.Fprintf(&b, "| heapscope | %s |\n\n", r.Heapscope.Version)
	if len(r.Failures) > 0 {
		b.WriteString("## Not collected\n\n")
		for _, f := range r.Failures {
			fmt.Fprintf(&b, "- **%s**: %s\n", f.Step, f.Error)
		}
		b.WriteString("\n")
	}

	findingsMarkdown(&b, r.Findings, r.DiagnosisNotes)

	b.WriteString("## Summary\n\n| | |\n|---|---|\n")
	if line := allocationLine(r); line != "" {
		fmt.Fprintf(&b, "| allocations over the window | %s |\n", line)
	}
	if line := perRequestLine(r); line != "" {
		fmt.Fprintf(&b, "| per request | %s |\n", line)
	}
	if line := growthLine(r); line != "" {
		fmt.Fprintf(&b, "| heap in use | %s |\n", line)
	}
	fmt.Fprintf(&b, "| GC | %s |\n", gcLine(r))
	fmt.Fprintf(&b, "| RSS | %s |\n", rssLine(r))
	if line := loadLine(r); line != "" {
		fmt.Fprintf(&b, "| load | %s |\n", line)
	}
	b.WriteString("\n")

	if g := r.HeapGrowth; g != nil && len(g.Snapshots) > 0 {
		b.WriteString("## Heap snapshots\n\nEach snapshot is as of the GC heapscope forced when it fetched it (`heap?gc=1`).\n\n")
		b.WriteString("| offset | inuse_space | inuse_objects | profile |\n|---:|---:|---:|---|\n")
		for _, s := range g.Snapshots {
			fmt.Fprintf(&b, "| +%s | %s | %s | `%s` |\n", humanize.Seconds(s.OffsetSeconds), humanize.Bytes(float64(s.InuseBytes)), humanize.Count(float64(s.InuseObjects)), s.Profile)
		}
		b.WriteString("\n")
	}

	memStatsAt := "end"
	if _, ok := r.UnmeasuredReason(result.FigureWindowMemStats); ok {
		memStatsAt = "start (its end was not collected)"
	}
	fmt.Fprintf(&b, "## MemStats at the window's %s\n\n| field | value |\n|---|---:|\n", memStatsAt)
	ms := r.MemStats
	for _, row := range []struct {
		name string
		v    uint64
	}{
		{"Alloc", ms.AllocBytes}, {"TotalAlloc", ms.TotalAllocBytes}, {"Sys", ms.SysBytes},
		{"HeapSys", ms.HeapSysBytes}, {"HeapInuse", ms.HeapInuseBytes}, {"HeapIdle", ms.HeapIdleBytes},
		{"HeapReleased", ms.HeapReleasedBytes}, {"StackInuse", ms.StackInuseBytes}, {"NextGC", ms.NextGCBytes},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", row.name, humanize.Bytes(float64(row.v)))
	}
	fmt.Fprintf(&b, "| HeapObjects | %s |\n| NumGC | %d |\n\n", humanize.Count(float64(ms.HeapObjects)), ms.NumGC)

	for _, t := range r.Top {
		fmt.Fprintf(&b, "## Top %s\n\n%s.\n\n", t.SampleType, upperFirst(t.Semantics))
		fmt.Fprintf(&b, "Total %s, from `%s`.\n\n", humanize.Value(t.Total, t.Unit), t.Profile)
		b.WriteString(sitesTable(t, 0).RenderMarkdown())
		b.WriteString("\n\n")
	}

	if len(r.Profiles) > 0 {
		b.WriteString("## Profiles\n\n| kind | file | covers |\n|---|---|---|\n")
		for _, p := range r.Profiles {
			fmt.Fprintf(&b, "| %s | `%s` | %s |\n", p.Kind, p.Path, p.Semantics)
		}
		b.WriteString("\n")
	}
	if len(r.Warnings) > 0 {
		b.WriteString("## Warnings\n\n")
		for _, wmsg := range r.Warnings {
			fmt.Fprintf(&b, "- %s\n", humanize.MarkdownText(wmsg))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func allocationLine(r *result.Run) string {
	ms := r.MemStats
	if ms.AllocatedBytes == 0 && ms.Mallocs == 0 {
		return ""
	}
	line := fmt.Sprintf("%s in %s objects (%s/s, %s objects/s, from MemStats)",
		humanize.Bytes(float64(ms.AllocatedBytes)), humanize.Count(float64(ms.Mallocs)),
		humanize.Bytes(ms.AllocatedBytesPerSecond), humanize.Count(ms.MallocsPerSecond))
	// MemStats count everything the process allocated, heapscope's own
	// profiling included; the profile-based figures leave that out.
	if p := r.Window.ProfilerAllocatedBytes; p > 0 {
		line += fmt.Sprintf("; %s of it answering heapscope's profile requests", humanize.Bytes(float64(p)))
	}
	return line
}

func perRequestLine(r *result.Run) string {
	p := r.PerRequest
	if p == nil {
		if why, ok := r.UnmeasuredReason(result.FigurePerRequest); ok {
			return "not measured: " + why
		}
		return ""
	}
	line := fmt.Sprintf("%s in %s objects over %s requests (profile",
		humanize.Bytes(p.BytesPerRequest), humanize.Count(p.ObjectsPerRequest), humanize.Count(float64(p.Requests)))
	if p.MemStatsBytesPerRequest != nil && p.MemStatsObjectsPerRequest != nil {
		line += fmt.Sprintf("; MemStats counts %s in %s objects", humanize.Bytes(*p.MemStatsBytesPerRequest), humanize.Count(*p.MemStatsObjectsPerRequest))
	}
	return line + ")"
}

func growthLine(r *result.Run) string {
	g := r.HeapGrowth
	if g == nil || len(g.Snapshots) == 0 {
		return ""
	}
	sampled := make([]string, 0, len(g.Snapshots))
	live := make([]string, 0, len(g.Snapshots))
	for _, s := range g.Snapshots {
		sampled = append(sampled, humanize.Bytes(float64(s.InuseBytes)))
		if s.LiveBytes > 0 {
			live = append(live, humanize.Bytes(float64(s.LiveBytes)))
		}
	}
	line := strings.Join(sampled, " → ")
	if why, ok := r.UnmeasuredReason(result.FigureHeapGrowth); ok {
		return line + "; growth not measured: " + why
	}
	if len(g.Snapshots) < 2 {
		return line
	}
	line = "sampled inuse_space " + line + fitWords(float64(g.GrowthBytes), g.SlopeBytesPerMinute, g.R2)
	if l := g.Live; l != nil {
		line = "live heap " + strings.Join(live, " → ") + fitWords(float64(l.GrowthBytes), l.SlopeBytesPerMinute, l.R2) +
			" (exact: HeapAlloc after each forced GC); " + line
	}
	return line
}

// fitWords says how a series moved: " (+5.6 MiB, +11 MiB/min, R² 0.99)".
func fitWords(growth, slope, r2 float64) string {
	sign := "+"
	if growth < 0 {
		sign = ""
	}
	return fmt.Sprintf(" (%s%s, %s%s/min, R² %.2f)", sign, humanize.Bytes(growth), sign, humanize.Bytes(slope), r2)
}

func gcLine(r *result.Run) string {
	ms := r.MemStats
	if why, ok := r.UnmeasuredReason(result.FigureWindowMemStats); ok {
		return "unknown: " + why
	}
	if ms.GCCycles == 0 && ms.GCPausesCovered == 0 {
		return fmt.Sprintf("no GC cycle measured over the window; GC CPU %s (%s)", humanize.Percent(ms.GCCPUFraction), ms.GCCPUFractionScope)
	}
	s := fmt.Sprintf("%d cycles (%d forced by heapscope's snapshots), %s by the runtime's own pacing; pause p50 %s, p99 %s, max %s",
		ms.GCCycles, ms.GCForcedCycles, humanize.Rate(ms.GCCyclesPerSecond),
		humanize.Seconds(ms.GCPauseP50Seconds), humanize.Seconds(ms.GCPauseP99Seconds), humanize.Seconds(ms.GCPauseMaxSeconds))
	if ms.GCRingOverflowed {
		s += fmt.Sprintf(" (pauses of the last %d cycles only: the runtime keeps 256)", ms.GCPausesCovered)
	}
	scope := "of the window"
	if ms.GCCPUFractionScope != "window" {
		scope = "over the process' lifetime"
	}
	return s + fmt.Sprintf("; GC CPU %s %s", humanize.Percent(ms.GCCPUFraction), scope)
}

func rssLine(r *result.Run) string {
	rss := r.RSS
	switch rss.Source {
	case "proc":
		s := fmt.Sprintf("%s (peak %s) from /proc/%d", humanize.Bytes(float64(rss.RSSBytes)), humanize.Bytes(float64(rss.HWMBytes)), r.Target.PID)
		if hm := rss.GoHeapMappings; hm != nil && hm.Count > 0 {
			s += fmt.Sprintf("; Go heap arenas %s mapped, %s resident, runtime holds %s (HeapSys − HeapReleased + StackInuse)",
				humanize.Bytes(float64(hm.SizeBytes)), humanize.Bytes(float64(hm.RSSBytes)), humanize.Bytes(float64(hm.CommittedBytes)))
		}
		if r.MemStats.HeapInuseBytes > 0 {
			s += fmt.Sprintf("; heap in use %s", humanize.Bytes(float64(r.MemStats.HeapInuseBytes)))
		}
		if cg := rss.Cgroup; cg != nil && !cg.Unlimited && cg.LimitBytes > 0 {
			// The limit applies to the cgroup's usage (page cache and
			// other processes included), not to this process' RSS.
			s += fmt.Sprintf("; cgroup uses %s of its %s limit (%s)", humanize.Bytes(float64(cg.UsageBytes)), humanize.Bytes(float64(cg.LimitBytes)), humanize.Percent(float64(cg.UsageBytes)/float64(cg.LimitBytes)))
		}
		return s
	case "metrics":
		return fmt.Sprintf("%s from the target's /metrics; heap in use %s", humanize.Bytes(float64(rss.RSSBytes)), humanize.Bytes(float64(r.MemStats.HeapInuseBytes)))
	default:
		return "unknown: " + rss.Note
	}
}

func loadLine(r *result.Run) string {
	l := r.Load
	if l == nil {
		return ""
	}
	model := "asked " + humanize.Rate(l.RequestedRate)
	if l.Model == "closed" {
		model = fmt.Sprintf("%d connections back to back", l.Connections)
	}
	s := fmt.Sprintf("%s %s: %d requests sent at %s (%s)", l.Method, l.URL, l.Requests, humanize.Rate(l.AchievedRate), model)
	if l.Completed != l.Requests {
		s += fmt.Sprintf(", %d answered", l.Completed)
	}
	s += fmt.Sprintf(", %d errors", l.Errors)
	if l.Dropped > 0 {
		why := "the generator fell behind"
		if l.Lag != nil && l.Lag.HeldBack == "max_in_flight" {
			why = fmt.Sprintf("%d in flight, the bound", l.MaxInFlight)
		}
		s += fmt.Sprintf(", %d not sent (%s)", l.Dropped, why)
	}
	lat := l.LatencySeconds
	return s + fmt.Sprintf("; latency p50 %s, p99 %s, max %s", humanize.Seconds(lat.P50), humanize.Seconds(lat.P99), humanize.Seconds(lat.Max))
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
