package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/result"
)

// blockedSenders builds six snapshots 30 s apart of a service whose
// handler leaves a goroutine blocked sending its lookup's result on an
// unbuffered channel: the goroutines grow when blocked is true (else
// they stay few), and the live heap grows with the bytes they hold —
// their structs (whose stacks the profile cuts at the system stack, or
// ends at the go statement of a time.AfterFunc), and the lookup's result
// read with io.ReadAll. A few lookups are in flight
// at each snapshot, inside net/http.
func blockedSenders(blocked bool) Input {
	send := fn{"main.lookupOrFallback.func1", "/src/svc/main.go", 263}
	lookup := fn{"main.lookup", "/src/svc/main.go", 251}
	var in Input
	const period = 512 << 10
	for i := range 6 {
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		h := newHeap(at, period)
		structs, results := int64(i)*(512<<10), int64(i)*(1<<20)
		h.sample([4]int64{structs / 448, structs, structs / 448, structs},
			fn{"runtime.malg", "/go/src/runtime/proc.go", 5044}, fn{"runtime.newproc1", "/go/src/runtime/proc.go", 5096},
			fn{"runtime.newproc.func1", "/go/src/runtime/proc.go", 5070}, fn{"runtime.systemstack", "/go/src/runtime/asm_amd64.s", 513})
		h.sample([4]int64{results / 512, results, results / 512, results},
			fn{"io.ReadAll", "/go/src/io/io.go", 734}, lookup, send)
		// Goroutine structs of the context deadlines' time.AfterFunc: the
		// blocked goroutines keep those that ended from being reused.
		h.sample([4]int64{structs / 480, structs, structs / 480, structs},
			fn{"time.goFunc", "/go/src/time/sleep.go", 215}, fn{"runtime.(*timer).unlockAndRun", "/go/src/runtime/time.go", 1234},
			fn{"runtime.(*timers).run", "/go/src/runtime/time.go", 1012}, fn{"runtime.findRunnable", "/go/src/runtime/proc.go", 3300})
		in.Heap = append(in.Heap, Profile{Name: fmt.Sprintf("heap-%03d", i), Time: at, Profile: h.build()})
		live := 20*mib + float64(i)*1.5*mib
		in.Live = append(in.Live, Live{Bytes: uint64(live), Objects: uint64(live / 64)})
		n := int64(4)
		if blocked {
			n += int64(i) * 1200
		}
		p := countProfile([]string{"goroutine"}, at, 0, []countSample{{values: []int64{n}, stack: []fn{
			{"runtime.gopark", "/go/src/runtime/proc.go", 462}, {"runtime.chansend", "/go/src/runtime/chan.go", 283},
			{"runtime.chansend1", "/go/src/runtime/chan.go", 161}, send, {"runtime.goexit", "/go/src/runtime/asm_amd64.s", 1700},
		}}, {values: []int64{3}, stack: []fn{
			// Lookups in flight at the snapshot, waiting for their answer
			// from the same line: not what the goroutines that grow do.
			{"runtime.gopark", "/go/src/runtime/proc.go", 462}, {"runtime.selectgo", "/go/src/runtime/select.go", 351},
			{"net/http.(*persistConn).roundTrip", "/go/src/net/http/transport.go", 2801}, {"net/http.Get", "/go/src/net/http/client.go", 461},
			lookup, send, {"runtime.goexit", "/go/src/runtime/asm_amd64.s", 1700},
		}}})
		in.Goroutines = append(in.Goroutines, Profile{Name: fmt.Sprintf("goroutine-%03d", i), Time: at, Profile: p})
	}
	return in
}

// TestRun_memoryHeldByBlockedGoroutines: goroutines blocked for ever at a
// send and the bytes they hold are one finding, at the send, with the
// misuse's fix and the memory as its symptoms — not a second finding
// telling the user to copy what io.ReadAll returned. When the goroutines
// do not grow, the same memory is a leak of its own.
func TestRun_memoryHeldByBlockedGoroutines(t *testing.T) {
	rep := Run(blockedSenders(true))
	serious := atLeast(rep.Findings, Low)
	if len(serious) != 1 {
		t.Fatalf("%d findings of low or above, want 1 for the one cause:%s", len(serious), titles(serious))
	}
	f := serious[0]
	if f.ID != "leak.goroutine-growth" || f.Function != "main.lookupOrFallback.func1" || f.Line != 263 {
		t.Errorf("finding %s at %s:%d, want the goroutines at the send, main.lookupOrFallback.func1:263", f.ID, f.Function, f.Line)
	}
	if !strings.HasPrefix(f.Fix, "give the channel room") || !strings.Contains(f.Cause, "channel-send-never-received") {
		t.Errorf("cause %q, fix %q: want the misuse channel-send-never-received", f.Cause, f.Fix)
	}
	var held []string
	for _, s := range f.Symptoms {
		if strings.HasPrefix(s.Title, "held by these goroutines: ") {
			held = append(held, s.Function)
		}
	}
	if len(held) == 0 {
		t.Errorf("symptoms %+v: want the memory the goroutines hold", f.Symptoms)
	}

	rep = Run(blockedSenders(false))
	leaks := findingsWith(rep.Findings, "leak.inuse-growth")
	if len(leaks) == 0 || len(findingsWith(rep.Findings, "leak.goroutine-growth")) != 0 {
		t.Fatalf("without the goroutines growing: findings%s, want the memory's own leak finding", titles(rep.Findings))
	}
}

// TestRun_clientWaitingIsNotBodyLeftOpen diagnoses a real service whose
// background requests use the default client, without a timeout, against
// a service that stalls. Its connections grow as those of a body never
// closed do, but requests wait in net/http's roundTrip: the finding is
// the missing timeout, at the service's http.Post, not "close the body".
func TestRun_clientWaitingIsNotBodyLeftOpen(t *testing.T) {
	rep := Run(Input{Heap: recordedProfiles(t, "client-without-timeout", "heap"), Goroutines: recordedProfiles(t, "client-without-timeout", "goroutine")})
	serious := atLeast(rep.Findings, Low)
	if len(serious) != 1 {
		t.Fatalf("%d findings of low or above, want 1 for the one cause:%s", len(serious), titles(serious))
	}
	f := serious[0]
	if f.Function != "main.audited.func1" || f.Line != 331 {
		t.Errorf("finding at %s %s:%d, want the service's http.Post at main.audited.func1 main.go:331", f.Function, f.File, f.Line)
	}
	if !strings.Contains(f.Fix, "give every outgoing request a bound") || strings.Contains(f.Fix, "close every response body") {
		t.Errorf("fix %q: want the client's timeout, not the body's close", f.Fix)
	}
}

func atLeast(fs []result.Finding, min Severity) []result.Finding {
	var out []result.Finding
	for _, f := range fs {
		if SeverityOf(f) >= min {
			out = append(out, f)
		}
	}
	return out
}

// pilingHandlers builds six snapshots 30 s apart of a service whose
// handler waits for ever behind a library's call: the server's connection
// goroutines, which start in net/http, pile up in it. The live heap grows
// with the connections they keep, which samples place in net/http by
// samples bytes' worth of samples (at 512 KiB).
func pilingHandlers(samples int64) Input {
	serve := fn{"net/http.(*conn).serve", "/go/src/net/http/server.go", 2102}
	goexit := fn{"runtime.goexit", "/go/src/runtime/asm_amd64.s", 1700}
	return piling(samples, 4096,
		[]fn{{"net/http.(*connReader).abortPendingRead", "/go/src/net/http/server.go", 750},
			{"net/http.(*response).finishRequest", "/go/src/net/http/server.go", 1710}, serve, goexit},
		[]fn{{"runtime.gopark", "/go/src/runtime/proc.go", 462}, {"sync.runtime_SemacquireWaitGroup", "/go/src/runtime/sema.go", 114},
			{"golang.org/x/sync/singleflight.(*Group).Do", "/mod/golang.org/x/sync@v0.25.0/singleflight/singleflight.go", 99},
			{"main.refresh", "/src/svc/main.go", 288}, {"net/http.HandlerFunc.ServeHTTP", "/go/src/net/http/server.go", 2294}, serve, goexit})
}

// piling builds six snapshots 30 s apart: 600 more goroutines on
// goroutineStack at each, the live heap 1.5 MiB more, and objects of
// objectSize on heapStack whose in-use bytes rise by samples samples (at
// 512 KiB) over the six.
func piling(samples, objectSize int64, heapStack, goroutineStack []fn) Input {
	var in Input
	const period = 512 << 10
	for i := range 6 {
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		h := newHeap(at, period)
		held := int64(i) * samples * period / 5
		h.sample([4]int64{held / objectSize, held, held / objectSize, held}, heapStack...)
		in.Heap = append(in.Heap, Profile{Name: fmt.Sprintf("heap-%03d", i), Time: at, Profile: h.build()})
		live := 20*mib + float64(i)*1.5*mib
		in.Live = append(in.Live, Live{Bytes: uint64(live), Objects: uint64(live / 64)})
		p := countProfile([]string{"goroutine"}, at, 0, []countSample{{values: []int64{4 + int64(i)*600}, stack: goroutineStack}})
		in.Goroutines = append(in.Goroutines, Profile{Name: fmt.Sprintf("goroutine-%03d", i), Time: at, Profile: p})
	}
	return in
}

// TestRun_connectionsOfPilingHandlersAreTheirs: handlers piling up behind
// a call that never returns, and the connections' buffers a sample places
// in net/http, are one finding, the goroutines'. Placed surely there, the
// library's memory stays a finding of its own.
func TestRun_connectionsOfPilingHandlersAreTheirs(t *testing.T) {
	rep := Run(pilingHandlers(1))
	serious := atLeast(rep.Findings, Low)
	if len(serious) != 1 || serious[0].ID != "leak.goroutine-growth" {
		t.Fatalf("findings of low or above:%s\nwant the goroutines' alone", titles(serious))
	}
	held := false
	for _, s := range serious[0].Symptoms {
		held = held || strings.HasPrefix(s.Title, "held by these goroutines: ") && s.Function == "net/http.(*connReader).abortPendingRead"
	}
	if !held {
		t.Errorf("symptoms %+v: want the connections' memory held by the goroutines", serious[0].Symptoms)
	}

	rep = Run(pilingHandlers(MinPlacingSamples * 2))
	if len(findingsWith(rep.Findings, "leak.inuse-growth")) != 1 {
		t.Errorf("placed surely in net/http: findings%s, want the memory's own finding beside the goroutines'", titles(rep.Findings))
	}
}

// pilingOpeners is a library's pools opened per request and dropped: each
// keeps a goroutine waiting in the pool's opener, and the opener's memory
// grows with them, placed surely (samples samples at the end) in the
// function the goroutines wait in.
func pilingOpeners(samples int64) Input {
	opener := fn{"database/sql.(*DB).connectionOpener", "/go/src/database/sql/sql.go", 1261}
	goexit := fn{"runtime.goexit", "/go/src/runtime/asm_amd64.s", 1700}
	return piling(samples, 256, []fn{opener, goexit},
		[]fn{{"runtime.gopark", "/go/src/runtime/proc.go", 462}, {"runtime.selectgo", "/go/src/runtime/select.go", 351}, opener, goexit})
}

// TestRun_memoryWhereLibraryGoroutinesWaitIsTheirs: what a library's
// piling goroutines allocate in the function they wait in is theirs, one
// finding, even placed surely.
func TestRun_memoryWhereLibraryGoroutinesWaitIsTheirs(t *testing.T) {
	rep := Run(pilingOpeners(MinPlacingSamples * 2))
	serious := atLeast(rep.Findings, Low)
	if len(serious) != 1 || serious[0].ID != "leak.goroutine-growth" {
		t.Fatalf("findings of low or above:%s\nwant the goroutines' alone", titles(serious))
	}
	if !slices.ContainsFunc(serious[0].Symptoms, func(s result.Symptom) bool {
		return strings.HasPrefix(s.Title, "held by these goroutines: ") && s.Function == "database/sql.(*DB).connectionOpener"
	}) {
		t.Errorf("symptoms %+v: want the opener's memory held by the goroutines", serious[0].Symptoms)
	}
}

// TestRun_unplacedGrowthBesidePilingGoroutinesIsTheirs: a live heap that
// grows where no sample places it, a few KiB per goroutine piling up
// beside it, is those goroutines' memory: one finding. Growing by far
// more than a blocked goroutine holds, it stays a finding of its own.
func TestRun_unplacedGrowthBesidePilingGoroutinesIsTheirs(t *testing.T) {
	in := pilingHandlers(0) // no site's samples rise; 1.5 MiB and 600 goroutines a snapshot
	rep := Run(in)
	serious := atLeast(rep.Findings, Low)
	if len(serious) != 1 || serious[0].ID != "leak.goroutine-growth" {
		t.Fatalf("findings of low or above:%s\nwant the goroutines' alone", titles(serious))
	}
	if !slices.ContainsFunc(serious[0].Symptoms, func(s result.Symptom) bool {
		return s.ID == "leak.live-growth" && strings.HasPrefix(s.Title, "held by these goroutines, about 2.6 KiB each: ")
	}) {
		t.Errorf("symptoms %+v: want the unplaced growth held by the goroutines, 2.6 KiB each", serious[0].Symptoms)
	}

	for i := range in.Live {
		in.Live[i].Bytes = uint64(20*mib + float64(i)*64*mib)
		in.Live[i].Objects = in.Live[i].Bytes / 64
	}
	if rep := Run(in); len(findingsWith(rep.Findings, "leak.live-growth")) != 1 {
		t.Errorf("64 MiB a snapshot, 110 KiB a goroutine: findings%s, want the growth's own finding beside the goroutines'", titles(rep.Findings))
	}
}
