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

// TestRun_keptByCalls: a live heap that grows steadily while too few of
// its samples land anywhere to place it is placed by a misuse whose calls
// only add to what a library keeps, when the service made those calls in
// the window — and only then.
func TestRun_keptByCalls(t *testing.T) {
	const mod = "/home/u/go/pkg/mod/github.com/sirupsen/logrus@v1.10.2/"
	addHook := []fn{
		{"github.com/sirupsen/logrus.LevelHooks.Add", mod + "hooks.go", 19},
		{"github.com/sirupsen/logrus.(*Logger).AddHook", mod + "logger.go", 375},
		handler,
	}
	// The growth a hook's request line takes, caught by one sample.
	request := []fn{readLine, httpRead}
	steady := func(i int) float64 { return 2*mib + float64(i)*mib/4 }
	tests := []struct {
		name string
		// hooksAdded is the sampled bytes allocated through AddHook by
		// snapshot i; requestHeld the in-use bytes at the request line.
		hooksAdded, requestHeld func(i int) int64
		wantCause               string // empty: no misuse named
		wantAt                  fn
	}{
		{
			name:        "no site rises; hooks added in the window",
			hooksAdded:  func(i int) int64 { return int64(i) * 512 << 10 },
			requestHeld: func(int) int64 { return 0 },
			wantCause:   "leak/logrus-hook-per-request at api.(*Server).get",
			wantAt:      handler,
		},
		{
			name:        "one sample at the request line; hooks added in the window",
			hooksAdded:  func(i int) int64 { return int64(i) * 512 << 10 },
			requestHeld: func(i int) int64 { return int64(min(i, 1)) * 512 << 10 },
			wantCause:   "leak/logrus-hook-per-request at api.(*Server).get",
			wantAt:      handler,
		},
		{
			name:        "hooks added before the window only",
			hooksAdded:  func(int) int64 { return 512 << 10 },
			requestHeld: func(int) int64 { return 0 },
		},
		{
			name:        "the samples place it at the request line",
			hooksAdded:  func(i int) int64 { return int64(i) * 512 << 10 },
			requestHeld: func(i int) int64 { return int64(i) * 2 * 512 << 10 },
			wantAt:      readLine,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in Input
			for i := range 8 {
				at := t0.Add(time.Duration(i) * 5 * time.Second)
				h := newHeap(at, 512<<10)
				a := tt.hooksAdded(i)
				h.sampleWithSize(4096, [4]int64{a / 4096, a, 0, 0}, addHook...)
				r := tt.requestHeld(i)
				h.sampleWithSize(48, [4]int64{r / 48, r, r / 48, r}, request...)
				in.Heap = append(in.Heap, Profile{Name: fmt.Sprintf("heap-%03d", i), Time: at, Profile: h.build()})
				in.Live = append(in.Live, Live{Bytes: uint64(steady(i))})
			}
			serious := atLeast(Run(in).Findings, Medium)
			if len(serious) != 1 {
				t.Fatalf("%d findings of medium or above, want the one leak:%s", len(serious), titles(serious))
			}
			f := serious[0]
			if !strings.HasPrefix(f.Cause, "leak") || tt.wantCause != "" && !strings.HasPrefix(f.Cause, tt.wantCause) ||
				tt.wantCause == "" && strings.Contains(f.Cause, "logrus") {
				t.Errorf("cause %q (%s), want %q", f.Cause, f.Title, tt.wantCause)
			}
			if tt.wantAt.name != "" && f.Function != tt.wantAt.name {
				t.Errorf("finding at %q (%s), want at %s", f.Function, f.Title, tt.wantAt.name)
			}
			if tt.wantCause != "" && !strings.Contains(f.Fix, "add hooks once") {
				t.Errorf("fix %q: want the misuse's", f.Fix)
			}
		})
	}
}

func TestCallsName(t *testing.T) {
	for _, tc := range []struct {
		code, name string
		want       bool
	}{
		{"\tchainCtx = context.WithValue(chainCtx, requestKey{}, v)", "context.WithValue", true},
		{"\tseen := expirable.NewLRU[string, int](256, nil, time.Minute)", "expirable.NewLRU", true},
		{"\tl = rate.NewLimiter(10, 20)", "rate.NewLimiter", true},
		{"\tctx = mycontext.WithValue(ctx, k, v)", "context.WithValue", false},
		{"\tctx = x.context.WithValue(ctx, k, v)", "context.WithValue", false},
		{"\tf := context.WithValueish(ctx)", "context.WithValue", false},
		{"\t// context.WithValue is not called here", "context.WithValue", false},
		{"\tname := \"context.WithValue\"", "context.WithValue", false},
	} {
		if got := callsName(tc.code, tc.name); got != tc.want {
			t.Errorf("callsName(%q, %q) = %v, want %v", tc.code, tc.name, got, tc.want)
		}
	}
}

// TestRun_misuseOfTheLineItsSourceCalls: the samples catch the value a
// handler boxes for context.WithValue at its own line, none of
// WithValue's contexts: the line's source calls WithValue, so the leak is
// that misuse, with its fix. Without the source it stays a plain leak.
func TestRun_misuseOfTheLineItsSourceCalls(t *testing.T) {
	tag := fn{"main.tagged", "/src/svc/main.go", 40}
	in := leakAtOwnLine(tag)
	plain := atLeast(Run(in).Findings, Medium)
	if len(plain) != 1 || plain[0].Cause != "" && strings.Contains(plain[0].Cause, "context-value-chain") {
		t.Fatalf("without the source: findings%s, want one leak with no misuse", titles(plain))
	}
	in.Source = mapSource{{file: tag.file, line: tag.line}: "\ttagCtx = context.WithValue(tagCtx, requestKey{}, info) // chain it"}
	serious := atLeast(Run(in).Findings, Medium)
	if len(serious) != 1 || !strings.Contains(serious[0].Cause, "context-value-chain") || !strings.Contains(serious[0].Fix, "derive per-request values from the request's context") {
		t.Fatalf("with the source: findings%s, want the context-value-chain misuse at main.go:40", titles(serious))
	}
}

func TestMethodOf(t *testing.T) {
	for _, tc := range []struct {
		call string
		want method
		ok   bool
	}{
		{"sync.(*Map).Store", method{"sync", "Map", "Store"}, true},
		{"github.com/patrickmn/go-cache.(*Cache).Set", method{"cache", "Cache", "Set"}, true},
		{"github.com/redis/go-redis/v9.(*Client).Subscribe", method{"redis", "Client", "Subscribe"}, true},
		{"gopkg.in/yaml.v3.(*Decoder).Decode", method{"yaml", "Decoder", "Decode"}, true},
		{"expvar.Map.Add", method{}, false},
		{"context.WithValue", method{}, false},
		{"sync.(*Map).Store.func1", method{}, false},
	} {
		if got, ok := methodOf(tc.call); got != tc.want || ok != tc.ok {
			t.Errorf("methodOf(%q) = %+v, %v; want %+v, %v", tc.call, got, ok, tc.want, tc.ok)
		}
	}
}

// TestRun_methodMisuseOfTheLineItsSourceCalls: the samples catch the key
// a middleware formats for sync.Map's Store at its own line, none of the
// map's entries. The line calls Store on a receiver its file declares a
// sync.Map, so the leak is that misuse; a receiver of another type, or one
// the file does not declare, is not.
func TestRun_methodMisuseOfTheLineItsSourceCalls(t *testing.T) {
	track := fn{"main.tracked.func1", "/src/svc/main.go", 40}
	in := leakAtOwnLine(track)
	const call = "\t\tseenAt.Store(fmt.Sprintf(\"%s-%d\", r.RemoteAddr, time.Now().UnixNano()), time.Now())"
	for _, tc := range []struct {
		name string
		decl string // line 30 of the file
		want bool
	}{
		{"a package variable", "var seenAt sync.Map", true},
		{"a field of a pointer", "\tseenAt *sync.Map // by client", true},
		{"assigned", "\tseenAt := new(sync.Map)", true},
		{"another type", "var seenAt atomic.Pointer[string]", false},
		{"declared elsewhere", "var lastSeen sync.Map", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in.Source = mapSource{{file: track.file, line: 30}: tc.decl, {file: track.file, line: track.line}: call}
			for n := int64(1); n <= 45; n++ {
				if _, ok := in.Source.(mapSource)[fn{file: track.file, line: n}]; !ok {
					in.Source.(mapSource)[fn{file: track.file, line: n}] = ""
				}
			}
			serious := atLeast(Run(in).Findings, Medium)
			got := len(serious) == 1 && strings.Contains(serious[0].Cause, "sync-map-never-deleted")
			if got != tc.want {
				t.Errorf("findings%s: sync-map misuse %v, want %v", titles(serious), got, tc.want)
			}
		})
	}
}

// leakAtOwnLine is eight snapshots, 5 s apart, of a live heap growing
// 0.5 MiB a snapshot, whose samples catch 32-byte objects growing at at,
// a line of the service's own code, on a goroutine of its own.
func leakAtOwnLine(at fn) Input {
	goexit := fn{"runtime.goexit", "/go/src/runtime/asm_amd64.s", 1700}
	var in Input
	for i := range 8 {
		t := t0.Add(time.Duration(i) * 5 * time.Second)
		h := newHeap(t, 512<<10)
		held := int64(i) * 512 << 10
		h.sampleWithSize(32, [4]int64{held / 32, held, held / 32, held}, at, goexit)
		in.Heap = append(in.Heap, Profile{Name: fmt.Sprintf("heap-%03d", i), Time: t, Profile: h.build()})
		in.Live = append(in.Live, Live{Bytes: uint64(2*mib + float64(i)*mib/2)})
	}
	return in
}
