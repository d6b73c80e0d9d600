package problem

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	long := leak
	long.Where = "github.com/heapscope/heapscope/examples/leakycache/leakycache.go:38"
	long.Title = strings.Repeat("the live heap grows → ", 30)
	ps := Find("a", []Capture{capture(0, long), capture(10, long), capture(20, long)})
	if len(ps) != 1 {
		t.Fatalf("%d problems, want 1", len(ps))
	}
	for _, tc := range []struct {
		name  string
		width int
		want  string
	}{
		{"fits 140", 140, "open     high   leak.inuse-growth at leakycache/leakycache.go:38, +2.0 MiB/min, 3 captures 2026-11-28 09:00Z–09:20Z: the live heap grows →…"},
		{"fits 60", 60, "open     high   leak.inuse-growth at leakycache/leakycache.…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ps[0].Line(tc.width)
			if got != tc.want {
				t.Errorf("Line(%d)\n got %q\nwant %q", tc.width, got, tc.want)
			}
			if n := utf8.RuneCountInString(got); n > tc.width {
				t.Errorf("Line(%d) is %d characters", tc.width, n)
			}
		})
	}
}

func TestSpan(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first, last int
		want        string
	}{
		{"one minute", 0, 0, "2026-11-28 09:00Z"},
		{"one day", 0, 20, "2026-11-28 09:00Z–09:20Z"},
		{"two days", 0, 24 * 60, "2026-11-28 09:00Z–2026-11-29 09:00Z"},
	} {
		if got := Span(at(tc.first), at(tc.last)); got != tc.want {
			t.Errorf("%s: Span = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestShortWhere(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/heapscope/heapscope/examples/leakycache/leakycache.go:38": "leakycache/leakycache.go:38",
		"cache.go:42":     "cache.go:42",
		"pkg/cache.go:42": "pkg/cache.go:42",
		"":                "",
	} {
		if got := ShortWhere(in); got != want {
			t.Errorf("ShortWhere(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFit(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "ab…"},
		{"a → b → c", 5, "a →…"},
		{"ab cd", 4, "ab…"},
		{"abcd", 0, "abcd"},
	} {
		if got := Fit(tc.in, tc.width); got != tc.want {
			t.Errorf("Fit(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}

func TestGist(t *testing.T) {
	for _, tc := range []struct{ title, want string }{
		{"a map that only grows holds the leak (the line inserts into it: w.cache[id] = append(w.cache[id], b...)): at leakycache.(*Worker).Process (leakycache/leakycache.go:38) the live heap grows 10.7 MiB/min; kept with it: ≈ 230 KiB at textproto.(*Reader).ReadLine",
			"a map that only grows holds the leak"},
		{"the live heap grows 3.5 MiB/min (exact, R² 0.99) at main.tracked.func1 (main.go:1222) — a sync.Map used as a cache that nothing evicts",
			"a sync.Map used as a cache that nothing evicts"},
		{"goroutines grow:\n  +120 a minute", "goroutines grow"},
		{"heap after GC grows", "heap after GC grows"},
		{"known since 2026-12-03T19:03:31Z (2 captures): a map that only grows holds the leak (the line…", "a map that only grows holds the leak"},
		{"", ""},
		{strings.Repeat("word ", 40), strings.Repeat("word ", 19) + "word…"},
	} {
		if got := Gist(tc.title); got != tc.want {
			t.Errorf("Gist(%.40q) = %q, want %q", tc.title, got, tc.want)
		}
	}
}
