package report

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"golang.org/x/term"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/store"
)

// History is what a watch store holds (heapscope history): the problems
// its captures show, then scheduled runs, trigger bundles and findings,
// newest first, in text, Markdown or JSON ({"runs": […], "bundles": […],
// "findings": […], "problems": […]}, paths relative to Dir). Text and
// Markdown list each problem once, in one line, and each capture's
// findings only by the numbers of their problems: the findings' full
// text is the problems', and JSON's.
type History struct {
	History store.History
	// Problems are the problems of the captures (store.Problems), as
	// problem.Sort orders them.
	Problems []problem.Problem
	// Dir is the store's directory, named in the text heading.
	Dir string
	// Width is the width a text line of a problem is fitted to;
	// DefaultWidth when 0.
	Width int
}

// ReadHistory reads what History shows of a store: the runs, bundles and
// findings q selects, and the problems of the captures of q's target,
// labels and times (store.Problems: its severities and limit are the
// findings').
func ReadHistory(s store.Store, q store.Query) (History, error) {
	h, err := s.History(q)
	if err != nil {
		return History{}, err
	}
	ps, err := store.Problems(s, q)
	if err != nil {
		return History{}, err
	}
	return History{History: h, Problems: ps, Dir: s.String()}, nil
}

// DefaultWidth is the width of a text line when the terminal's is not
// known.
const DefaultWidth = 100

// Width returns the width of the terminal w writes to, or else $COLUMNS,
// or else DefaultWidth.
func Width(w io.Writer) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	if cols, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && cols > 0 {
		return cols
	}
	return DefaultWidth
}

// Formats lists History's formats.
func (History) Formats() []Format { return textFormats }

func (d History) data() any {
	ps := d.Problems
	if ps == nil {
		ps = []problem.Problem{}
	}
	return struct {
		store.History
		Problems []problem.Problem `json:"problems"`
	}{d.History, ps}
}

// numbered are the problems as History lists them, grouped by target in
// the order of their first problem, and each one's number, from 1.
type numbered struct {
	order []problem.Problem
	// of numbers a problem by its target and cause key.
	of map[[2]string]int
}

func numberProblems(ps []problem.Problem) numbered {
	n := numbered{of: map[[2]string]int{}}
	var targets []string
	byTarget := map[string][]problem.Problem{}
	for _, p := range ps {
		if _, ok := byTarget[p.Target]; !ok {
			targets = append(targets, p.Target)
		}
		byTarget[p.Target] = append(byTarget[p.Target], p)
	}
	for _, t := range targets {
		for _, p := range byTarget[t] {
			n.order = append(n.order, p)
			n.of[[2]string{p.Target, p.Cause}] = len(n.order)
		}
	}
	return n
}

// refs lists the findings of each capture (by path) as the numbers of
// their problems, "#1 #3", then how many findings are of no problem
// listed (info findings), "+2".
func (n numbered) refs(fs []store.Finding) map[string]string {
	nums := map[string][]int{}
	others := map[string]int{}
	for _, f := range fs {
		if f.Source == store.SourceSeries {
			continue
		}
		key := problem.Finding{Cause: f.Cause, Kind: f.Kind, Where: f.Where}.Key()
		i, ok := n.of[[2]string{f.Target, key}]
		if !ok && problem.Family(key) == key {
			// A sign without a site of a problem placed since.
			for j, p := range n.order {
				if p.Target == f.Target && problem.Family(p.Cause) == key {
					i, ok = j+1, true
					break
				}
			}
		}
		if ok {
			if !slices.Contains(nums[f.Path], i) {
				nums[f.Path] = append(nums[f.Path], i)
			}
		} else {
			others[f.Path]++
		}
	}
	out := map[string]string{}
	for path, is := range nums {
		slices.Sort(is)
		var ws []string
		for _, i := range is {
			ws = append(ws, fmt.Sprintf("#%d", i))
		}
		out[path] = strings.Join(ws, " ")
	}
	for path, k := range others {
		out[path] = strings.TrimSpace(out[path] + fmt.Sprintf(" +%d", k))
	}
	return out
}

func (d History) render(w io.Writer, f Format) error {
	h := d.History
	var b bytes.Buffer
	md := f == FormatMarkdown
	width := d.Width
	if width <= 0 {
		width = DefaultWidth
	}
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
	ps := numberProblems(d.Problems)
	heading(fmt.Sprintf("Problems (%d)", len(ps.order)))
	switch {
	case md && len(ps.order) > 0:
		t := plainTable()
		t.AppendHeader(table.Row{"#", "target", "state", "severity", "captures", "seen", "problem"})
		for i, p := range ps.order {
			pw := p
			pw.Where = problem.ShortWhere(p.Where)
			t.AppendRow(table.Row{i + 1, p.Target, p.StateText(), p.Severity, p.Captures, problem.Span(p.FirstSeen, p.LastSeen), pw.Headline()})
		}
		emit(t)
	case !md:
		target := ""
		for i, p := range ps.order {
			if p.Target != target {
				target = p.Target
				fmt.Fprintf(&b, " %s\n", problem.Fit(target, width-1))
			}
			num := fmt.Sprintf("  #%-2d ", i+1)
			fmt.Fprintf(&b, "%s%s\n", num, p.Line(width-len(num)))
		}
		b.WriteString("\n")
	}
	refs := ps.refs(h.Findings)
	heading(fmt.Sprintf("Bundles (%d)", len(h.Bundles)))
	if len(h.Bundles) > 0 {
		t := plainTable()
		t.AppendHeader(table.Row{"time", "target", "trigger", "value", "capture", "findings", "path"})
		for _, e := range h.Bundles {
			trig, value := "", ""
			if e.Trigger != nil {
				trig, value = e.Trigger.Expr, triggerValue(e.Trigger)
			}
			if e.BeforeOOM {
				trig += " (before an OOM kill)"
			}
			t.AppendRow(table.Row{historyTime(e.Time), e.Target, trig, value, humanize.Seconds(e.CaptureSeconds), refs[e.Path], e.Path})
		}
		emit(t)
	} else if !md {
		b.WriteString("\n")
	}
	heading(fmt.Sprintf("Runs (%d)", len(h.Runs)))
	if len(h.Runs) > 0 {
		t := plainTable()
		t.AppendHeader(table.Row{"time", "target", "status", "size", "findings", "path"})
		for _, e := range h.Runs {
			t.AppendRow(table.Row{historyTime(e.Time), e.Target, e.Status, humanize.Bytes(float64(e.Bytes)), refs[e.Path], e.Path})
		}
		emit(t)
	} else if !md {
		b.WriteString("\n")
	}
	series := 0
	for _, fd := range h.Findings {
		if fd.Source == store.SourceSeries {
			series++
		}
	}
	heading(fmt.Sprintf("Findings (%d)", len(h.Findings)))
	fmt.Fprintf(&b, "%d of runs and bundles, by problem number (+N: of none); %d of the series' diagnosis. In full: --format json.\n",
		len(h.Findings)-series, series)
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
