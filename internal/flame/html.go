package flame

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"regexp"
	"strconv"
)

//go:embed assets/flame.js
var widgetScript string

//go:embed assets/flame.css
var widgetStyle string

// HTMLView is one graph a widget can show, such as "changes" and
// "vanished" for a differential pair, or one per profile of a run.
type HTMLView struct {
	Name string
	Tree *Tree
}

// HTMLWidget is an interactive flame graph drawn on a canvas: zoom,
// search, tooltips, reset, a flame/icicle toggle, and a switch between its
// views and between the sample types of the shown tree.
type HTMLWidget struct {
	// ID is the widget's element id, unique in its page: letters, digits,
	// '-' and '_'.
	ID    string
	Title string
	Views []HTMLView
	// Icicle starts with the root on top.
	Icicle bool
}

var widgetID = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// pageStyle is the style of WriteHTML's page.
const pageStyle = `body { margin: 16px 20px; font: 14px system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 12px; }
`

// WriteHTML writes a standalone page holding the widgets: one file with
// inline script, style and data that makes no external request (its
// Content-Security-Policy forbids them).
func WriteHTML(w io.Writer, title string, widgets ...HTMLWidget) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := WriteHTMLHead(bw, title, pageStyle, true); err != nil {
		return err
	}
	fmt.Fprintf(bw, "<h1>%s</h1>\n", html.EscapeString(title))
	for _, wd := range widgets {
		if err := WriteHTMLWidget(bw, wd); err != nil {
			return err
		}
	}
	bw.WriteString("</body>\n</html>\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write html: %w", err)
	}
	return nil
}

// WriteHTMLHead opens a standalone page, up to and with its <body> tag:
// the title, style (CSS, ending in a newline), the widgets' assets
// (WriteHTMLAssets) when widgets is set, and a Content-Security-Policy
// that forbids every request the page could make: scripts and styles
// inline, images data: URLs. WriteHTML's pages begin with it, and so do
// heapscope's reports, which embed widgets or flame graphs' SVG.
func WriteHTMLHead(w io.Writer, title, style string, widgets bool) error {
	_, err := fmt.Fprintf(w, `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<style>
%s</style>
`, html.EscapeString(title), style)
	if err != nil {
		return fmt.Errorf("write html: %w", err)
	}
	if widgets {
		if err := WriteHTMLAssets(w); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, "</head>\n<body>\n"); err != nil {
		return fmt.Errorf("write html: %w", err)
	}
	return nil
}

// WriteHTMLAssets writes the style and script the widgets need, once per
// page, in its head or anywhere in its body: the script sets up every
// widget of the page once the document is loaded.
func WriteHTMLAssets(w io.Writer) error {
	_, err := fmt.Fprintf(w, "<style>\n%s</style>\n<script>\n%s</script>\n", widgetStyle, widgetScript)
	if err != nil {
		return fmt.Errorf("write html: %w", err)
	}
	return nil
}

// WriteHTMLWidget writes one widget: its container and its data. The page
// must also hold WriteHTMLAssets once.
func WriteHTMLWidget(w io.Writer, wd HTMLWidget) error {
	if !widgetID.MatchString(wd.ID) {
		return fmt.Errorf("write html: widget id %q: use letters, digits, - and _", wd.ID)
	}
	if len(wd.Views) == 0 {
		return errors.New("write html: widget without views")
	}
	data := widgetData{Title: wd.Title, Icicle: wd.Icicle}
	for _, v := range wd.Views {
		if v.Tree == nil {
			return fmt.Errorf("write html: view %q has no tree", v.Name)
		}
		data.Views = append(data.Views, viewData(v))
	}
	js, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("write html: %w", err)
	}
	// json.Marshal escapes <, > and &, so the data cannot close its
	// script element.
	_, err = fmt.Fprintf(w, `<div class="hsflame" id="%s">
<noscript>This flame graph needs JavaScript.</noscript>
<script type="application/json" class="hsflame-data">%s</script>
</div>
`, wd.ID, js)
	if err != nil {
		return fmt.Errorf("write html: %w", err)
	}
	return nil
}

// widgetData is the JSON the script reads. Nodes are in depth-first
// order; the script rebuilds parents and subtree ends from the depths.
type widgetData struct {
	Title  string     `json:"title,omitempty"`
	Icicle bool       `json:"icicle,omitempty"`
	Views  []viewJSON `json:"views"`
}

type viewJSON struct {
	Name    string       `json:"name"`
	Types   []SampleType `json:"types"`
	Default int          `json:"default"`
	Funcs   funcsJSON    `json:"funcs"`
	Nodes   nodesJSON    `json:"nodes"`
	// Total and Self are [typ][node].
	Total [][]int64 `json:"total"`
	Self  [][]int64 `json:"self"`
	Diff  *diffJSON `json:"diff,omitempty"`
}

type funcsJSON struct {
	Name []string `json:"name"`
	File []string `json:"file"`
	Kind []int    `json:"kind"`
}

type nodesJSON struct {
	Fn    []int32 `json:"fn"`
	Line  []int64 `json:"line"`
	Lines []int32 `json:"lines"`
	Depth []int32 `json:"depth"`
}

type diffJSON struct {
	By       string `json:"by"`
	Vanished bool   `json:"vanished"`
	PerUnit  string `json:"perUnit,omitempty"`
	// Before, After and Change are [typ][node].
	Before [][]jsonFloat `json:"before"`
	After  [][]jsonFloat `json:"after"`
	Change [][]jsonFloat `json:"change"`
}

// jsonFloat marshals with the fewest digits that read back the same, and
// finite.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

func viewData(v HTMLView) viewJSON {
	t := v.Tree
	out := viewJSON{Name: v.Name, Types: t.Types, Default: t.Default}
	for _, f := range t.Functions {
		out.Funcs.Name = append(out.Funcs.Name, f.Name)
		out.Funcs.File = append(out.Funcs.File, f.File)
		out.Funcs.Kind = append(out.Funcs.Kind, int(f.Kind))
	}
	n := len(t.Nodes)
	out.Nodes = nodesJSON{Fn: make([]int32, n), Line: make([]int64, n), Lines: make([]int32, n), Depth: make([]int32, n)}
	for i, node := range t.Nodes {
		out.Nodes.Fn[i] = node.Function
		out.Nodes.Line[i] = node.Line
		out.Nodes.Lines[i] = node.Lines
		out.Nodes.Depth[i] = node.Depth
	}
	for typ := range t.Types {
		total, self := make([]int64, n), make([]int64, n)
		for i := range n {
			total[i], self[i] = t.Total(i, typ), t.Self(i, typ)
		}
		out.Total = append(out.Total, total)
		out.Self = append(out.Self, self)
	}
	if d := t.Diff; d != nil {
		dj := &diffJSON{By: d.By.String(), Vanished: d.Vanished, PerUnit: d.PerUnit}
		for typ := range t.Types {
			before, after, change := make([]jsonFloat, n), make([]jsonFloat, n), make([]jsonFloat, n)
			for i := range n {
				before[i] = jsonFloat(t.Before(i, typ))
				after[i] = jsonFloat(t.After(i, typ))
				change[i] = jsonFloat(math.Round(t.Change(i, typ)*1000) / 1000)
			}
			dj.Before = append(dj.Before, before)
			dj.After = append(dj.After, after)
			dj.Change = append(dj.Change, change)
		}
		out.Diff = dj
	}
	return out
}
