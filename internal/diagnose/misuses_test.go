package diagnose

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMisuses_eachEntryIsProven: every misuse names the end-to-end test
// that runs a real service making it, and that test exists.
func TestMisuses_eachEntryIsProven(t *testing.T) {
	list, err := Misuses()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) == 0 {
		t.Fatal("no misuses listed")
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "cmd", "heapscope", "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no end-to-end tests found: %v", err)
	}
	var tests strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tests.Write(b)
	}
	for _, m := range list {
		name, sub, _ := strings.Cut(m.Proven, "/")
		if !strings.Contains(tests.String(), "func "+name+"(") || sub != "" && !strings.Contains(tests.String(), `"`+sub+`"`) {
			t.Errorf("misuse %s: its proof %s is not a test of cmd/heapscope", m.ID, m.Proven)
		}
	}
}

// TestRun_misuseLeadsTheGoroutineFinding: client connections piling up,
// two goroutines each inside net/http, are named for what the service
// does wrong, not advised to "buffer the channel" inside net/http.
func TestRun_misuseLeadsTheGoroutineFinding(t *testing.T) {
	read := []fn{{"runtime.gopark", "/go/src/runtime/proc.go", 435}, {"runtime.selectgo", "/go/src/runtime/select.go", 351},
		{"net/http.(*persistConn).readLoop", "/go/src/net/http/transport.go", 2395}}
	var gs []Profile
	for i := range 5 {
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		p := countProfile([]string{"goroutine"}, at, 0, []countSample{{values: []int64{int64(10 + 40*i)}, stack: read}})
		gs = append(gs, Profile{Name: fmt.Sprintf("goroutine-%d", i), Time: at, Profile: p})
	}
	rep := Run(Input{Goroutines: gs})
	fs := findingsWith(rep.Findings, "leak.goroutine-growth")
	if len(fs) != 1 {
		t.Fatalf("goroutine findings %+v", rep.Findings)
	}
	// No profile here holds a frame of the service's: the fix says which
	// of its calls to look for.
	if !strings.HasPrefix(fs[0].Fix, "close every response body") || !strings.Contains(fs[0].Fix, "Why: every HTTP client connection keeps") ||
		!strings.Contains(fs[0].Fix, "look for its calls of http.(*Client).Do") || strings.Contains(fs[0].Fix, "buffered channel") {
		t.Errorf("fix %q: want the misuse's cause and fix, not advice about net/http's internals", fs[0].Fix)
	}
}

func TestInSignature_genericFunctions(t *testing.T) {
	signature := []string{"github.com/hashicorp/golang-lru/v2/expirable.NewLRU[...].func1", "time.AfterFunc"}
	tests := []struct {
		fn   string
		want bool
	}{
		{"time.AfterFunc", true},
		{"time.NewTimer", false},
		{"github.com/hashicorp/golang-lru/v2/expirable.NewLRU[go.shape.string,go.shape.int].func1", true},
		{"github.com/hashicorp/golang-lru/v2/expirable.NewLRU[go.shape.struct { a [4]int },go.shape.int].func1", true},
		{"github.com/hashicorp/golang-lru/v2/expirable.NewLRU[go.shape.string,go.shape.int]", false},
		{"github.com/hashicorp/golang-lru/v2/expirable.NewLRU[...].func1", true},
		{"github.com/hashicorp/golang-lru/v2/expirable.NewLRU[go.shape.string,go.shape.int].func12", false},
		{"github.com/hashicorp/golang-lru/v2/expirable.NewLRU[go.shape.string", false},
		{"github.com/hashicorp/golang-lru/v2/expirable.(*LRU[go.shape.string,go.shape.int]).Add", false},
	}
	for _, tt := range tests {
		if got := inSignature(signature, tt.fn); got != tt.want {
			t.Errorf("inSignature(%q) = %v, want %v", tt.fn, got, tt.want)
		}
	}
	fn := "github.com/hashicorp/golang-lru/v2/expirable.NewLRU[go.shape.string,go.shape.int].func1"
	if n := testing.AllocsPerRun(100, func() { inSignature(signature, fn) }); n != 0 {
		t.Errorf("inSignature allocates %.0f times a call, want none", n)
	}
}
