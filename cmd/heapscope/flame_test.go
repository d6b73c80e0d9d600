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
	"strconv"
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

// flameGrows and flameShrinks allocate what the differential flame graph
// test looks for: 8 MiB objects, each sampled by the heap profiler with a
// probability of 1 - e^-16 and scaled to within a byte of its size.
//
//go:noinline
func flameGrows() [][]byte { return [][]byte{make([]byte, 8<<20), make([]byte, 8<<20)} }

//go:noinline
func flameShrinks() []byte { return make([]byte, 8<<20) }

func TestFlame_Differential(t *testing.T) {
	// The base profile holds 8 MiB from flameShrinks; the new one holds
	// 16 MiB from flameGrows instead.
	shrinks := flameShrinks()
	base := heapProfileFile(t)
	runtime.KeepAlive(shrinks)
	grows := flameGrows()
	after := heapProfileFile(t)
	runtime.KeepAlive(grows)
	dir := t.TempDir()

	// Folded: the raw in-use bytes of each stack, base then new.
	folded := filepath.Join(dir, "diff.folded")
	got := heapscope(t, "flame", after, "--base", base, "-o", folded)
	if got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	data, err := os.ReadFile(folded)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string][2]int64{} // by leaf function
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			t.Fatalf("folded diff line %q: want a stack, a base and a new value", line)
		}
		var v [2]int64
		for i, s := range f[len(f)-2:] {
			if v[i], err = strconv.ParseInt(s, 10, 64); err != nil {
				t.Fatalf("folded diff line %q: %v", line, err)
			}
		}
		stack := strings.Join(f[:len(f)-2], " ")
		leaf := stack[strings.LastIndex(stack, ";")+1:]
		old := values[leaf]
		values[leaf] = [2]int64{old[0] + v[0], old[1] + v[1]}
	}
	const mib = 1 << 20
	for _, tt := range []struct {
		leaf        string
		base, after int64
	}{
		{leaf: "heapscope.flameGrows", base: 0, after: 16 * mib},
		{leaf: "heapscope.flameShrinks", base: 8 * mib, after: 0},
	} {
		var v [2]int64
		for leaf, lv := range values {
			if strings.HasSuffix(leaf, "/"+tt.leaf) {
				v = lv
			}
		}
		// Sampling scales each object to within a byte or two of its size.
		for i, want := range []int64{tt.base, tt.after} {
			if v[i] < want || v[i] > want+16 {
				t.Errorf("%s: base and new in-use bytes %d, want about %d and %d\n%s", tt.leaf, v, tt.base, tt.after, data)
				break
			}
		}
	}

	// SVG: the new profile's shape with what changed in the tooltips, and
	// the vanished view with the base profile's shape.
	svg, vanished := filepath.Join(dir, "diff.svg"), filepath.Join(dir, "vanished.svg")
	got = heapscope(t, "flame", after, "--base", base, "-o", svg, "--vanished", vanished, "--diff-by", "share")
	if got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	for _, tt := range []struct {
		path string
		want []string // frames and their change, as the tooltips put them
		not  string
	}{
		{path: svg, want: []string{"heapscope.flameGrows", "before 0 B → after 16 MiB: +16 MiB"}, not: "heapscope.flameShrinks"},
		{path: vanished, want: []string{"heapscope.flameShrinks", "before 8 MiB → after 0 B: -8 MiB (-100.0%)"}, not: "heapscope.flameGrows"},
	} {
		data, err := os.ReadFile(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		wellFormedXML(t, data)
		for _, want := range append(tt.want, "coloured by share change") {
			if !bytes.Contains(data, []byte(want)) {
				t.Errorf("%s lacks %q", filepath.Base(tt.path), want)
			}
		}
		if tt.not != "" && bytes.Contains(data, []byte(tt.not)) {
			t.Errorf("%s has %s, which its profile does not hold", filepath.Base(tt.path), tt.not)
		}
	}

	html := filepath.Join(dir, "diff.html")
	got = heapscope(t, "flame", after, "--base", base, "-o", html)
	if got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	data, _ = os.ReadFile(html)
	for _, want := range []string{`"name":"changes"`, `"name":"vanished"`, `"vanished":true`, "heapscope.flameGrows", "heapscope.flameShrinks"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("HTML lacks %s", want)
		}
	}

	// Normalised by requests, folded output keeps the raw values.
	normalized := filepath.Join(dir, "normalized.folded")
	got = heapscope(t, "flame", after, "--base", base, "-o", normalized, "--normalize", "requests", "--requests", "10", "--base-requests", "5")
	if got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	if !bytes.Equal(mustRead(t, normalized), mustRead(t, folded)) {
		t.Errorf("folded output with --normalize requests differs from the raw one")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
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
		{name: "focus matching nothing", args: []string{"flame", heap, "-o", out, "--focus", "no-such-function-anywhere"}, wantErr: "matches no function or file of the profile; the closest: "},
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
