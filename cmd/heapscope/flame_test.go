package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	rpprof "runtime/pprof"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
)

// profileBallast keeps an allocation made from the test alive, so a heap
// profile of this process always holds stacks through package testing.
var profileBallast []byte

// writeProfileFile writes a runtime profile of this process to a file. A
// heap profile is as of the last GC: one runs first, after an allocation
// large enough to be sampled, so the profile is never empty.
func writeProfileFile(t *testing.T, name string) string {
	t.Helper()
	if name == "heap" || name == "allocs" {
		profileBallast = make([]byte, 4<<20)
		runtime.GC()
	}
	path := filepath.Join(t.TempDir(), name+".pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := rpprof.Lookup(name).WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
	return path
}

// wellFormedXML fails the test unless data is well-formed XML.
func wellFormedXML(t *testing.T, data []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
	}
}

func TestFlame_Formats(t *testing.T) {
	heap := heapProfileFile(t)
	dir := t.TempDir()
	tests := []struct {
		out   string
		args  []string
		check func(t *testing.T, data []byte)
	}{
		{out: "heap.svg", args: []string{"--sample", "alloc_space"}, check: func(t *testing.T, data []byte) {
			wellFormedXML(t, data)
			if !bytes.Contains(data, []byte(`class="f"`)) || !bytes.Contains(data, []byte("alloc_space")) {
				t.Error("SVG has no frames of alloc_space")
			}
		}},
		{out: "heap.html", check: func(t *testing.T, data []byte) {
			if !bytes.HasPrefix(data, []byte("<!DOCTYPE html>")) || !bytes.Contains(data, []byte("hsflame-data")) {
				t.Error("HTML page lacks its widget")
			}
			// Every sample type is in the page, for the switch.
			for _, st := range []string{"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"} {
				if !bytes.Contains(data, []byte(`"name":"`+st+`"`)) {
					t.Errorf("HTML lacks sample type %s", st)
				}
			}
		}},
		{out: "heap.folded", args: []string{"--focus", "testing", "--min-share", "0.5%"}, check: func(t *testing.T, data []byte) {
			sc := bufio.NewScanner(bytes.NewReader(data))
			lines := 0
			for sc.Scan() {
				lines++
				stack, _, ok := cutLast(sc.Text(), " ")
				if !ok || !strings.Contains(stack, "testing") {
					t.Errorf("folded line %q: want a focused stack and a value", sc.Text())
				}
			}
			if lines == 0 {
				t.Error("no folded lines")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.out, func(t *testing.T) {
			out := filepath.Join(dir, tt.out)
			got := heapscope(t, append([]string{"flame", heap, "-o", out}, tt.args...)...)
			if got.code != exitOK {
				t.Fatalf("exit %d: %s", got.code, got.stderr)
			}
			if !strings.HasPrefix(got.stdout, "wrote "+out) {
				t.Errorf("stdout %q, want it to say what it wrote", got.stdout)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, data)
		})
	}
}

func TestFlame_Stdin(t *testing.T) {
	data, err := os.ReadFile(heapProfileFile(t))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "stdin.folded")
	got := heapscopeIn(t, string(data), "flame", "-", "-o", out)
	if got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	if info, err := os.Stat(out); err != nil || info.Size() == 0 {
		t.Errorf("no folded stacks written from stdin: %v", err)
	}
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func TestFlame_Differential(t *testing.T) {
	base := heapProfileFile(t)
	keep := make([][]byte, 0, 64)
	for range 64 {
		keep = append(keep, make([]byte, 64<<10))
	}
	after := heapProfileFile(t)
	_ = keep
	dir := t.TempDir()

	svg, vanished := filepath.Join(dir, "diff.svg"), filepath.Join(dir, "vanished.svg")
	got := heapscope(t, "flame", after, "--base", base, "-o", svg, "--vanished", vanished, "--diff-by", "share")
	if got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	for _, p := range []string{svg, vanished} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		wellFormedXML(t, data)
		if !bytes.Contains(data, []byte("before ")) || !bytes.Contains(data, []byte("coloured by share change")) {
			t.Errorf("%s lacks the differential tooltips or legend", p)
		}
	}

	html := filepath.Join(dir, "diff.html")
	got = heapscope(t, "flame", after, "--base", base, "-o", html)
	if got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	data, _ := os.ReadFile(html)
	for _, want := range []string{`"name":"changes"`, `"name":"vanished"`, `"vanished":true`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("HTML lacks %s", want)
		}
	}

	folded := filepath.Join(dir, "diff.folded")
	got = heapscope(t, "flame", after, "--base", base, "-o", folded, "--normalize", "requests", "--requests", "10", "--base-requests", "5")
	if got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	data, _ = os.ReadFile(folded)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.Fields(line); len(f) < 3 {
			t.Fatalf("folded diff line %q: want a stack, a base and a new value", line)
		}
	}
}

func TestFlame_BadInput(t *testing.T) {
	dir := t.TempDir()
	heap := heapProfileFile(t)
	goroutine := writeProfileFile(t, "goroutine")
	garbage := filepath.Join(dir, "garbage.pb.gz")
	os.WriteFile(garbage, []byte("this is not a profile"), 0o644)
	empty := filepath.Join(dir, "empty.pb.gz")
	var buf bytes.Buffer
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
	}
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(empty, buf.Bytes(), 0o644)
	out := filepath.Join(dir, "out.svg")

	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "not a profile", args: []string{"flame", garbage, "-o", out}, wantErr: "not a pprof profile"},
		{name: "missing file", args: []string{"flame", filepath.Join(dir, "nope.pb.gz"), "-o", out}, wantErr: "no such file"},
		{name: "a directory", args: []string{"flame", dir, "-o", out}, wantErr: "is a directory: give a profile file"},
		{name: "totals beyond int64", args: []string{"flame", overflowingProfile(t), "-o", out}, wantErr: "beyond the range of int64"},
		{name: "empty profile", args: []string{"flame", empty, "-o", out}, wantErr: "is empty: it has no samples"},
		{name: "unknown sample type", args: []string{"flame", heap, "--sample", "cpu", "-o", out}, wantErr: `sample type "cpu" not in profile; it has alloc_objects, alloc_space, inuse_objects, inuse_space`},
		{name: "base of another kind", args: []string{"flame", heap, "--base", goroutine, "-o", out}, wantErr: "is of another kind"},
		{name: "empty base", args: []string{"flame", heap, "--base", empty, "-o", out}, wantErr: "is empty"},
		{name: "no output", args: []string{"flame", heap}, wantErr: "needs -o OUT"},
		{name: "unknown extension", args: []string{"flame", heap, "-o", filepath.Join(dir, "out.png")}, wantErr: "use .svg, .html or .folded"},
		{name: "bad min share", args: []string{"flame", heap, "-o", out, "--min-share", "120%"}, wantErr: "--min-share"},
		{name: "bad focus", args: []string{"flame", heap, "-o", out, "--focus", "("}, wantErr: "--focus"},
		{name: "vanished without base", args: []string{"flame", heap, "-o", out, "--vanished", filepath.Join(dir, "v.svg")}, wantErr: "--vanished needs --base"},
		{name: "bad diff-by", args: []string{"flame", heap, "--base", heap, "-o", out, "--diff-by", "relative"}, wantErr: "--diff-by"},
		{name: "duration unknown", args: []string{"flame", heap, "--base", heap, "-o", out, "--normalize", "duration"}, wantErr: "does not say how long"},
		{name: "requests missing", args: []string{"flame", heap, "--base", heap, "-o", out, "--normalize", "requests"}, wantErr: "--requests N"},
		{name: "output directory missing", args: []string{"flame", heap, "-o", filepath.Join(dir, "no", "such", "dir", "x.svg")}, wantErr: "write "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantUsageError(t, heapscope(t, tt.args...), tt.wantErr)
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a failed run left %s behind", out)
			}
		})
	}
	// Nothing half-written either: no temporary files remain.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestWriteAtomic_KeepsOldFileOnFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.svg")
	os.WriteFile(path, []byte("old"), 0o644)
	err := writeAtomic(path, func(w io.Writer) error {
		io.WriteString(w, "half of a new graph")
		return errors.New("renderer failed")
	})
	if err == nil || !strings.Contains(err.Error(), "renderer failed") {
		t.Fatalf("error %v, want the renderer's", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "old" {
		t.Errorf("file holds %q after a failed write, want the old content", data)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("%d files in the directory, want only the old one", len(entries))
	}
	if err := writeAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "new" {
		t.Errorf("file holds %q, want the new content", data)
	}
}

func TestParseShare(t *testing.T) {
	for in, want := range map[string]float64{"0.1%": 0.001, "0.001": 0.001, "0": 0, " 5 % ": 0.05} {
		if got, err := parseShare(in); err != nil || got != want {
			t.Errorf("parseShare(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "100%", "-1%", "1.5", "NaN"} {
		if _, err := parseShare(in); err == nil {
			t.Errorf("parseShare(%q) succeeded", in)
		}
	}
}

// TestTop_MatchesParse checks that top, which streams profiles through
// pprofx.ReadStacks, prints the table pprofx.Top makes of the parsed
// profile.
func TestTop_MatchesParse(t *testing.T) {
	for _, name := range []string{"heap", "allocs", "goroutine"} {
		path := writeProfileFile(t, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := pprofx.Parse(data, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range p.SampleType {
			got := heapscope(t, "top", path, "--sample", st.Type, "-n", "0", "--format", "json")
			if got.code != exitOK {
				t.Fatalf("exit %d: %s", got.code, got.stderr)
			}
			var tab result.TopTable
			if err := json.Unmarshal([]byte(got.stdout), &tab); err != nil {
				t.Fatal(err)
			}
			want, err := pprofx.Top(p, pprofx.TopOptions{Sample: st.Type})
			if err != nil {
				t.Fatal(err)
			}
			if tab.Total != want.Total || len(tab.Sites) != len(want.Sites) {
				t.Fatalf("%s %s: total %d with %d sites, want %d with %d", name, st.Type, tab.Total, len(tab.Sites), want.Total, len(want.Sites))
			}
			for i, s := range tab.Sites {
				w := want.Sites[i]
				if s.Function != w.Function || s.File != w.File || s.Line != w.Line || s.Flat != w.Flat || s.Cum != w.Cum {
					t.Errorf("%s %s site %d: %+v, want %+v", name, st.Type, i, s, w)
				}
			}
		}
	}
}
