package flame

import (
	"bytes"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"
)

// widgetJSON returns the data of the widgets of a page, in order.
func widgetJSON(t *testing.T, page []byte) []widgetData {
	t.Helper()
	re := regexp.MustCompile(`<script type="application/json" class="hsflame-data">([^<]*)</script>`)
	var out []widgetData
	for _, m := range re.FindAllSubmatch(page, -1) {
		var d widgetData
		if err := json.Unmarshal(m[1], &d); err != nil {
			t.Fatalf("widget data is not JSON: %v", err)
		}
		out = append(out, d)
	}
	return out
}

func TestWriteHTML(t *testing.T) {
	tree := build(t, loadStacks(t, "heap-before.pb.gz"), Options{AllTypes: true})
	var buf bytes.Buffer
	if err := WriteHTML(&buf, `Flame <graph> & "more"`, HTMLWidget{ID: "heap", Title: "heap", Views: []HTMLView{{Name: "profile", Tree: tree}}}); err != nil {
		t.Fatal(err)
	}
	page := buf.Bytes()
	for _, want := range []string{"<!DOCTYPE html>", "Content-Security-Policy", "default-src 'none'", `<div class="hsflame" id="heap">`, "<title>Flame &lt;graph&gt; &amp; &#34;more&#34;</title>"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("page lacks %s", want)
		}
	}
	// No external requests: nothing to fetch, by attribute or by URL.
	for _, bad := range []string{" src=", " href=", "url(", "@import", "http://", "https://"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("page holds %q: it must make no external request", bad)
		}
	}
	data := widgetJSON(t, page)
	if len(data) != 1 || len(data[0].Views) != 1 {
		t.Fatalf("%d widgets, want 1 with 1 view", len(data))
	}
	v := data[0].Views[0]
	if len(v.Nodes.Depth) != len(tree.Nodes) || len(v.Total) != len(tree.Types) || len(v.Funcs.Name) != len(tree.Functions) {
		t.Fatalf("data holds %d nodes, %d types, %d functions; want %d, %d, %d",
			len(v.Nodes.Depth), len(v.Total), len(v.Funcs.Name), len(tree.Nodes), len(tree.Types), len(tree.Functions))
	}
	for typ := range tree.Types {
		for n := range tree.Nodes {
			if v.Total[typ][n] != tree.Total(n, typ) || v.Self[typ][n] != tree.Self(n, typ) {
				t.Fatalf("node %d type %d: data total %d self %d, want %d %d", n, typ, v.Total[typ][n], v.Self[typ][n], tree.Total(n, typ), tree.Self(n, typ))
			}
		}
	}
	if v.Default != tree.Default || v.Diff != nil {
		t.Errorf("default %d, diff %v; want %d and none", v.Default, v.Diff, tree.Default)
	}
}

func TestWriteHTML_Diff(t *testing.T) {
	before, after := pair(t)
	changes, _ := Diff(before, after, DiffOptions{PerUnit: "request", Scale: 2, BaseScale: 2})
	vanished, _ := Vanished(before, after, DiffOptions{PerUnit: "request", Scale: 2, BaseScale: 2})
	var buf bytes.Buffer
	err := WriteHTML(&buf, "diff", HTMLWidget{ID: "d", Views: []HTMLView{{Name: "changes", Tree: changes}, {Name: "vanished", Tree: vanished}}})
	if err != nil {
		t.Fatal(err)
	}
	data := widgetJSON(t, buf.Bytes())
	views := data[0].Views
	if len(views) != 2 || views[0].Diff == nil || views[1].Diff == nil || !views[1].Diff.Vanished || views[0].Diff.Vanished {
		t.Fatalf("views %+v, want changes then vanished", views)
	}
	n := findNode(t, changes, "main.main", "main.rec")
	if d := views[0].Diff; float64(d.Before[0][n]) != 20 || float64(d.After[0][n]) != 10 || d.Change[0][n] >= 0 || d.PerUnit != "request" {
		t.Errorf("main.rec: before %v after %v change %v per %q; want 20, 10, < 0, request", d.Before[0][n], d.After[0][n], d.Change[0][n], d.PerUnit)
	}
}

func TestWriteHTMLWidget_Embeds(t *testing.T) {
	tree := build(t, stacksOf(t, synthetic()), Options{})
	var page bytes.Buffer
	page.WriteString("<!DOCTYPE html><html><head>")
	if err := WriteHTMLAssets(&page); err != nil {
		t.Fatal(err)
	}
	page.WriteString("</head><body><h1>report</h1>")
	for _, id := range []string{"alloc", "inuse"} {
		if err := WriteHTMLWidget(&page, HTMLWidget{ID: id, Views: []HTMLView{{Name: id, Tree: tree}}}); err != nil {
			t.Fatal(err)
		}
	}
	page.WriteString("</body></html>")
	if got := len(widgetJSON(t, page.Bytes())); got != 2 {
		t.Errorf("%d widgets in the page, want 2", got)
	}
	if n := strings.Count(page.String(), widgetScript); n != 1 {
		t.Errorf("script included %d times, want once", n)
	}
}

func TestWriteHTMLHead(t *testing.T) {
	tests := []struct {
		name       string
		widgets    bool
		wantAssets bool
	}{
		{name: "with widgets", widgets: true, wantAssets: true},
		{name: "without widgets", widgets: false, wantAssets: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteHTMLHead(&b, "a <b>", "p { color: red; }\n", tt.widgets); err != nil {
				t.Fatal(err)
			}
			head := b.String()
			for _, want := range []string{
				"<!DOCTYPE html>\n",
				`content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"`,
				"<title>a &lt;b&gt;</title>\n<style>\np { color: red; }\n</style>\n",
			} {
				if !strings.Contains(head, want) {
					t.Errorf("head lacks %q:\n%s", want, head)
				}
			}
			if !strings.HasSuffix(head, "</head>\n<body>\n") {
				t.Errorf("head does not end by opening the body:\n%s", head)
			}
			if got := strings.Contains(head, widgetScript); got != tt.wantAssets {
				t.Errorf("widgets' script in the head: %v, want %v", got, tt.wantAssets)
			}
		})
	}
}

func TestWriteHTMLWidget_Errors(t *testing.T) {
	tree := build(t, stacksOf(t, synthetic()), Options{})
	tests := []struct {
		name string
		w    HTMLWidget
	}{
		{name: "bad id", w: HTMLWidget{ID: `x" onload="`, Views: []HTMLView{{Tree: tree}}}},
		{name: "no views", w: HTMLWidget{ID: "x"}},
		{name: "view without tree", w: HTMLWidget{ID: "x", Views: []HTMLView{{Name: "v"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := WriteHTMLWidget(io.Discard, tt.w); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestWriteHTML_ScriptCannotBreakOut(t *testing.T) {
	p := synthetic()
	p.Function[0].Name = "main.</script><script>alert(1)</script>"
	tree := build(t, stacksOf(t, p), Options{})
	var buf bytes.Buffer
	if err := WriteHTML(&buf, "x", HTMLWidget{ID: "x", Views: []HTMLView{{Tree: tree}}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<script>alert") {
		t.Error("a function name closed the data's script element")
	}
	if strings.Contains(strings.ToLower(widgetScript), "</script") || strings.Contains(strings.ToLower(widgetStyle), "</style") {
		t.Error("the widget's script or style would end its element")
	}
}

func BenchmarkWriteHTML(b *testing.B) {
	tree, err := Build(bigStacks(b, 50000), Options{AllTypes: true, MinShare: 0.00001})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteHTML(io.Discard, "bench", HTMLWidget{ID: "b", Views: []HTMLView{{Name: "p", Tree: tree}}}); err != nil {
			b.Fatal(err)
		}
	}
}
