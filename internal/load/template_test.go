package load

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestCompileTemplate(t *testing.T) {
	tests := []struct {
		name     string
		raw      string
		seqs     []uint64
		want     []string // expansions of seqs, for templates without {rand}
		constant bool
		wantErr  string
	}{
		{name: "no placeholders", raw: "http://h/items", seqs: []uint64{0, 7}, want: []string{"http://h/items", "http://h/items"}, constant: true},
		{name: "empty", raw: "", seqs: []uint64{3}, want: []string{""}, constant: true},
		{name: "seq", raw: "http://h/items/{seq}", seqs: []uint64{0, 1, 2, 18446744073709551615}, want: []string{"http://h/items/0", "http://h/items/1", "http://h/items/2", "http://h/items/18446744073709551615"}},
		{name: "seq twice and at the start", raw: "{seq}-{seq}", seqs: []uint64{42}, want: []string{"42-42"}},
		{name: "empty braces literal", raw: "http://h/{}/{seq}", seqs: []uint64{5}, want: []string{"http://h/{}/5"}},
		{name: "json braces literal", raw: `http://h/?q={"a":{seq}}`, seqs: []uint64{9}, want: []string{`http://h/?q={"a":9}`}},
		{name: "doubled braces", raw: "{{seq}}", seqs: []uint64{1}, want: []string{"{1}"}},
		{name: "unclosed brace", raw: "http://h/{seq", seqs: []uint64{1}, want: []string{"http://h/{seq"}, constant: true},
		{name: "lone closing brace", raw: "http://h/}{seq}}", seqs: []uint64{2}, want: []string{"http://h/}2}"}},
		{name: "digit first is literal", raw: "http://h/{1}", seqs: []uint64{0}, want: []string{"http://h/{1}"}, constant: true},
		{name: "space inside is literal", raw: "{ seq }", seqs: []uint64{0}, want: []string{"{ seq }"}, constant: true},

		{name: "unknown placeholder", raw: "http://h/{id}", wantErr: "unknown placeholder {id} at offset 9, want {seq}, {rand:N} or {pick:FILE}"},
		{name: "unknown with argument", raw: "{range:5}", wantErr: "unknown placeholder {range:5} at offset 0"},
		{name: "name is case sensitive", raw: "{Seq}", wantErr: "unknown placeholder {Seq}"},
		{name: "seq with argument", raw: "{seq:3}", wantErr: "placeholder {seq:3} at offset 0: {seq} takes no argument"},
		{name: "rand zero", raw: "{rand:0}", wantErr: "placeholder {rand:0} at offset 0: want {rand:N} with N an integer ≥ 1"},
		{name: "rand without bound", raw: "a{rand}", wantErr: "placeholder {rand} at offset 1: want {rand:N}"},
		{name: "rand empty bound", raw: "{rand:}", wantErr: "placeholder {rand:}"},
		{name: "rand negative", raw: "{rand:-3}", wantErr: "placeholder {rand:-3}"},
		{name: "rand plus sign", raw: "{rand:+3}", wantErr: "placeholder {rand:+3}"},
		{name: "rand not a number", raw: "{rand:x}", wantErr: "placeholder {rand:x}"},
		{name: "rand overflow", raw: "{rand:18446744073709551616}", wantErr: "placeholder {rand:18446744073709551616}"},
		{name: "error after literal braces", raw: "{}{x}", wantErr: "unknown placeholder {x} at offset 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := CompileTemplate(tt.raw, noFiles)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("CompileTemplate(%q) error = %v, want it to contain %q", tt.raw, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("CompileTemplate(%q): %v", tt.raw, err)
			}
			if got := tmpl.String(); got != tt.raw {
				t.Errorf("String() = %q, want %q", got, tt.raw)
			}
			if got := tmpl.Constant(); got != tt.constant {
				t.Errorf("Constant() = %v, want %v", got, tt.constant)
			}
			for i, seq := range tt.seqs {
				if got := string(tmpl.Expand(nil, seq, 0)); got != tt.want[i] {
					t.Errorf("Expand(seq %d) = %q, want %q", seq, got, tt.want[i])
				}
			}
		})
	}
}

func TestTemplate_Expand(t *testing.T) {
	tests := []struct {
		name  string
		raw   string
		bound uint64 // the N of {rand:N} in raw
	}{
		{name: "rand one is always zero", raw: "http://h/{rand:1}", bound: 1},
		{name: "rand small", raw: "http://h/{rand:3}", bound: 3},
		{name: "rand with seq", raw: "http://h/{seq}/{rand:1000}", bound: 1000},
		{name: "rand huge", raw: "http://h/{rand:18446744073709551615}", bound: 18446744073709551615},
	}
	number := regexp.MustCompile(`[0-9]+$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := CompileTemplate(tt.raw, noFiles)
			if err != nil {
				t.Fatal(err)
			}
			expand := func(seed uint64) []string {
				var out []string
				for seq := range uint64(200) {
					out = append(out, string(tmpl.Expand(nil, seq, seed)))
				}
				return out
			}
			first := expand(1)
			seen := map[uint64]bool{}
			for seq, u := range first {
				n, err := strconv.ParseUint(number.FindString(u), 10, 64)
				if err != nil {
					t.Fatalf("expansion %q does not end in a number: %v", u, err)
				}
				if n >= tt.bound {
					t.Errorf("expansion %q: %d is not below %d", u, n, tt.bound)
				}
				seen[n] = true
				if strings.Contains(tt.raw, "{seq}") && !strings.HasPrefix(u, "http://h/"+strconv.Itoa(seq)+"/") {
					t.Errorf("expansion %d = %q, want seq %d", seq, u, seq)
				}
			}
			if want := min(tt.bound, 3); uint64(len(seen)) < want {
				t.Errorf("200 draws gave %d distinct values, want at least %d", len(seen), want)
			}
			if again := expand(1); strings.Join(again, " ") != strings.Join(first, " ") {
				t.Errorf("the same seed gave different expansions")
			}
			if tt.bound > 1 && strings.Join(expand(2), " ") == strings.Join(first, " ") {
				t.Errorf("seeds 1 and 2 gave the same expansions")
			}
		})
	}
}

func TestTemplate_Expand_appends(t *testing.T) {
	tmpl, err := CompileTemplate("/{seq}", noFiles)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 0, 64)
	dst = append(dst, "http://h"...)
	got := tmpl.Expand(dst, 12, 0)
	if string(got) != "http://h/12" {
		t.Fatalf("Expand = %q, want %q", got, "http://h/12")
	}
	if &got[0] != &dst[:1][0] {
		t.Errorf("Expand reallocated although dst had room")
	}
}

// noFiles is a file reader for templates that must not read any.
func noFiles(name string) ([]byte, error) {
	return nil, fmt.Errorf("open %s: no files in this test", name)
}

func FuzzCompileTemplate(f *testing.F) {
	for _, s := range []string{
		"http://h/{seq}",
		"http://h/{rand:10}/{seq}",
		`{"a":{seq}}`,
		"{{seq}}",
		"{rand:0}",
		"{x}",
		"{",
		"}{",
	} {
		f.Add(s, uint64(3))
	}
	f.Fuzz(func(t *testing.T, raw string, seq uint64) {
		tmpl, err := CompileTemplate(raw, func(string) ([]byte, error) { return []byte("a\nb\n"), nil })
		if err != nil {
			return
		}
		got := string(tmpl.Expand(nil, seq, seq))
		if tmpl.Constant() && got != raw {
			t.Fatalf("constant template %q expanded to %q", raw, got)
		}
		if !strings.Contains(raw, "{seq}") && !strings.Contains(raw, "{rand:") && !strings.Contains(raw, "{pick:") && got != raw {
			t.Fatalf("template %q without placeholders expanded to %q", raw, got)
		}
		if tmpl.String() != raw {
			t.Fatalf("String() = %q, want %q", tmpl.String(), raw)
		}
	})
}

func BenchmarkTemplate_Expand(b *testing.B) {
	tmpl, err := CompileTemplate("http://127.0.0.1:8080/items/{rand:100000}?n={seq}", noFiles)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	var seq uint64
	for b.Loop() {
		buf = tmpl.Expand(buf[:0], seq, 1)
		seq++
	}
}

func TestCompileTemplate_pick(t *testing.T) {
	files := map[string]string{
		"ids.txt":   "alice\r\nbob\n\n  \ncarol", // CRLF, blank lines, no final newline
		"one.txt":   "only\n",
		"empty.txt": "\n \n",
		"space.txt": "a\nb c\n",
		"ctrl.txt":  "a\x7f\n",
	}
	read := func(name string) ([]byte, error) {
		s, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("open %s: no such file", name)
		}
		return []byte(s), nil
	}
	tests := []struct {
		name    string
		raw     string
		values  []string // the values expansions draw from
		wantErr string
	}{
		{name: "lines", raw: "http://h/u/{pick:ids.txt}", values: []string{"http://h/u/alice", "http://h/u/bob", "http://h/u/carol"}},
		{name: "one line", raw: "http://h/{pick:one.txt}", values: []string{"http://h/only"}},
		{name: "missing file", raw: "http://h/{pick:nope.txt}", wantErr: "placeholder {pick:nope.txt} at offset 9: read values: open nope.txt: no such file"},
		{name: "no values", raw: "http://h/{pick:empty.txt}", wantErr: "empty.txt has no values"},
		{name: "blank in a value", raw: "http://h/{pick:space.txt}", wantErr: `space.txt line 2: character ' ' cannot go into a URL`},
		{name: "control character", raw: "http://h/{pick:ctrl.txt}", wantErr: `ctrl.txt line 1: character '\x7f'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := CompileTemplate(tt.raw, read)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for seq := range uint64(300) {
				seen[string(tmpl.Expand(nil, seq, 7))]++
			}
			for _, v := range tt.values {
				if seen[v] < 300/len(tt.values)/2 {
					t.Errorf("%q drawn %d times in 300, want about %d", v, seen[v], 300/len(tt.values))
				}
				delete(seen, v)
			}
			if len(seen) > 0 {
				t.Errorf("unexpected expansions %v", seen)
			}
		})
	}
}

// TestDraw checks that draws are uniform: the counts of 100000 draws in
// [0, 10) are each within 5 % of 10000.
func TestDraw(t *testing.T) {
	for _, n := range []uint64{10, 3} {
		counts := make([]int, n)
		const draws = 100000
		for seq := range uint64(draws) {
			v := draw(1, seq, 0, n)
			if v >= n {
				t.Fatalf("draw(%d) = %d", n, v)
			}
			counts[v]++
		}
		for v, c := range counts {
			if want := draws / int(n); c < want*95/100 || c > want*105/100 {
				t.Errorf("bound %d: value %d drawn %d times, want about %d", n, v, c, want)
			}
		}
	}
	if draw(1, 5, 0, 1<<62) == draw(1, 5, 1, 1<<62) {
		t.Error("two placeholders of one request drew the same value")
	}
}
