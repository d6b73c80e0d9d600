package diagnose

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var (
	readLine = fn{"net/textproto.(*Reader).ReadLine", "/go/src/net/textproto/reader.go", 45}
	decode   = fn{"example.com/svc/api.parseItem", "/src/svc/api/item.go", 23}
)

// holderInput builds six snapshots a minute apart of a service whose live
// heap grows 1 MiB a minute: a cache's map at cacheAdd grows in 48 KiB
// tables, and with it the request lines net/http read (48-byte strings,
// the map's keys) and a small decoded value per entry. scale scales the
// sampled growth (not the live heap's).
func holderInput(source bool, scale float64) Input {
	return holderInputWith(source, scale, nil)
}

// holderInputWith is holderInput, with what more adds to the i-th
// snapshot.
func holderInputWith(source bool, scale float64, more func(h *heapBuilder, i int)) Input {
	var in Input
	const period = 512 << 10
	for i := range 6 {
		at := t0.Add(time.Duration(i) * time.Minute)
		h := newHeap(at, period)
		tables := int64(scale * float64(int64(i)*384<<10))
		lines := int64(scale * float64(int64(i)*512<<10))
		values := int64(scale * float64(int64(i)*128<<10))
		h.sample([4]int64{tables / (48 << 10), tables, tables / (48 << 10), tables}, cacheAdd, handler)
		h.sample([4]int64{lines / 48, lines, lines / 48, lines}, readLine, httpRead)
		h.sample([4]int64{values / 32, values, values / 32, values}, decode, handler)
		if more != nil {
			more(h, i)
		}
		in.Heap = append(in.Heap, Profile{Name: fmt.Sprintf("heap-%03d", i), Time: at, Profile: h.build()})
		live := 20*mib + float64(i)*mib
		in.Live = append(in.Live, Live{Bytes: uint64(live), Objects: uint64(live / 64)})
	}
	if source {
		in.Source = mapSource{{file: cacheAdd.file, line: cacheAdd.line}: "	c.m[key] = append(c.m[key], v) // keep it"}
	}
	return in
}

func TestRun_namesTheHolder(t *testing.T) {
	rep := Run(holderInput(true, 1))
	var leaks []string
	for _, f := range rep.Findings {
		if strings.HasPrefix(f.ID, "leak.") {
			leaks = append(leaks, fmt.Sprintf("%s at %s:%d", f.ID, f.Function, f.Line))
		}
	}
	if len(leaks) != 1 {
		t.Fatalf("leak findings %v, want one, at the map", leaks)
	}
	f := findingsWith(rep.Findings, "leak.inuse-growth")[0]
	if f.Function != cacheAdd.name || f.Line != cacheAdd.line {
		t.Fatalf("leak at %s:%d, want the map's insert at %s:%d", f.Function, f.Line, cacheAdd.name, cacheAdd.line)
	}
	for _, want := range []string{"a map that only grows holds the leak", "the line inserts into it: c.m[key] = append(c.m[key], v)", "kept with it", "textproto.(*Reader).ReadLine", "api.parseItem"} {
		if !strings.Contains(f.Title, want) {
			t.Errorf("title %q does not say %q", f.Title, want)
		}
	}
	if f.Evidence["held_sites"] != 2 || f.Evidence["site_storage_growth_bytes"] <= 0 {
		t.Errorf("evidence %v: want the 2 held sites and the map's own storage", f.Evidence)
	}
	for _, want := range []string{"bound the map", "strings.Clone", "textproto.(*Reader).ReadLine"} {
		if !strings.Contains(f.Fix, want) {
			t.Errorf("fix %q does not say %q", f.Fix, want)
		}
	}
}

// TestRun_namesTheHolderWithoutItsStorage: at the default sample rate no
// sample may catch the map's own tables, only a few of the small values
// appended at its insert; the request lines net/http read on its own grow
// more. Only something of the service's can keep those, and the service's
// one growing container is named, less surely. A second growing container
// of the service's code leaves the choice open: no holder then.
func TestRun_namesTheHolderWithoutItsStorage(t *testing.T) {
	build := func(secondContainer bool) Input {
		var in Input
		for i := range 6 {
			at := t0.Add(time.Duration(i) * time.Minute)
			h := newHeap(at, 512<<10)
			values, lines := int64(i)*256<<10, int64(i)*768<<10
			h.sample([4]int64{values / 32, values, values / 32, values}, cacheAdd, handler)
			h.sample([4]int64{lines / 120, lines, lines / 120, lines}, readLine, httpRead)
			// A site of the service's that is no container: kept with it.
			h.sample([4]int64{values / 64, values / 2, values / 64, values / 2}, decode, handler)
			in.Heap = append(in.Heap, Profile{Name: fmt.Sprintf("heap-%03d", i), Time: at, Profile: h.build()})
			live := 20*mib + float64(i)*mib
			in.Live = append(in.Live, Live{Bytes: uint64(live), Objects: uint64(live / 64)})
		}
		in.Source = mapSource{{file: cacheAdd.file, line: cacheAdd.line}: "	c.m[key] = append(c.m[key], v) // keep it"}
		if secondContainer {
			in.Source.(mapSource)[fn{file: decode.file, line: decode.line}] = "	items = append(items, it)"
		}
		return in
	}
	leaks := findingsWith(Run(build(false)).Findings, "leak.inuse-growth")
	if len(leaks) != 1 || leaks[0].Function != cacheAdd.name || leaks[0].Line != cacheAdd.line {
		t.Fatalf("leak findings %v, want one, at the map's insert", leaks)
	}
	f := leaks[0]
	for _, want := range []string{"a map that only grows holds the leak", "the only growing container of your code", "≈ 3.8 MiB at textproto.(*Reader).ReadLine", "api.parseItem"} {
		if !strings.Contains(f.Title, want) {
			t.Errorf("title %q does not say %q", f.Title, want)
		}
	}
	if sure := Run(holderInput(true, 1)); f.Confidence >= findingsWith(sure.Findings, "leak.inuse-growth")[0].Confidence {
		t.Errorf("confidence %.2f: want it below that of a holder whose storage the samples caught", f.Confidence)
	}

	for _, f := range findingsWith(Run(build(true)).Findings, "leak.inuse-growth") {
		if strings.Contains(f.Title, "holds the leak") {
			t.Errorf("finding %q names a holder though two containers of the service grew", f.Title)
		}
	}
}

// TestRun_noHolderWithoutEvidence: without the source line (nor a CPU
// profile) nothing shows the site is a container. The lead site is then
// net/http's, which no frame of the service's code reaches: the advice
// says what the service must be keeping of it, not to bound net/http.
func TestRun_noHolderWithoutEvidence(t *testing.T) {
	rep := Run(holderInput(false, 1))
	leaks := findingsWith(rep.Findings, "leak.inuse-growth")
	if len(leaks) == 0 {
		t.Fatalf("no leak finding; findings %v", rep.Findings)
	}
	for _, f := range leaks {
		if strings.Contains(f.Title, "holds the leak") {
			t.Errorf("finding %q names a holder without evidence of one", f.Title)
		}
	}
	lead := leaks[0]
	if lead.Function != readLine.name {
		t.Fatalf("lead leak at %s, want the largest growth, at %s", lead.Function, readLine.name)
	}
	for _, want := range []string{"no frame of your code allocates this: textproto does", "strings.Clone"} {
		if !strings.Contains(lead.Fix, want) {
			t.Errorf("fix %q does not say %q", lead.Fix, want)
		}
	}
}

func TestOutsideFix_namesTheCallerInTheServiceCode(t *testing.T) {
	jsonLit := fn{"encoding/json.(*decodeState).literalStore", "/go/src/encoding/json/decode.go", 947}
	in := liveInput(6, 512, func(i int) float64 { return 20*mib + float64(i)*mib }, map[fn]func(int) int64{
		jsonLit: func(i int) int64 { return 4*mib + int64(i)*mib },
	})
	rep := Run(in)
	leaks := findingsWith(rep.Findings, "leak.inuse-growth")
	// The finding is the service's line; its title says where the
	// bytes are.
	if len(leaks) != 1 || leaks[0].Function != "example.com/svc/api.(*Server).get" || !strings.Contains(leaks[0].Title, "json.(*decodeState).literalStore") {
		t.Fatalf("leak findings %v, want one at the service's api.(*Server).get naming %s", leaks, jsonLit.name)
	}
	want := "json allocates this for your call at api.(*Server).get (api/api.go:17)"
	if !strings.Contains(leaks[0].Fix, want) {
		t.Errorf("fix %q does not say %q", leaks[0].Fix, want)
	}
}

// TestPlace_holderAndWhatItHolds: no site alone has the samples to place
// the growth, the holder and the sites it holds together do.
func TestPlace_holderAndWhatItHolds(t *testing.T) {
	if got := Place(holderInput(false, 0.5)); !got.Grows || got.Placed {
		t.Errorf("without the source: Place = %+v, want growth not placed yet", got)
	}
	if got := Place(holderInput(true, 0.5)); !got.Grows || !got.Placed || got.Samples < MinPlacingSamples {
		t.Errorf("with the source: Place = %+v, want growth placed at the holder", got)
	}
}

// TestContainerAt tells a line that accumulates from one that refills a
// buffer from its start.
func TestContainerAt(t *testing.T) {
	tests := []struct {
		line string
		want string // "" when the line is no container
	}{
		{"\tc.m[key] = append(c.m[key], v) // keep it", "a map"},
		{"\titems = append(items, it)", "a slice"},
		{"\tb = append(b[:0], w.cache[id]...)       // the copy grows with the entry", ""},
		{"\tbuf = append( buf[:0], p...)", ""},
		{"\tn := len(items)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			d := newDiagnosis(Input{Source: mapSource{{file: cacheAdd.file, line: cacheAdd.line}: tt.line}})
			what, _, _, ok := d.containerAt(site{cacheAdd.name, cacheAdd.file, cacheAdd.line})
			if what != tt.want || ok != (tt.want != "") {
				t.Errorf("containerAt(%q) = %q, %v; want %q", tt.line, what, ok, tt.want)
			}
		})
	}
}

// TestRun_namesTheHolderFromItsAllocations: no heap sample caught the
// map's insert at all, in use, but the window's allocations show the line
// allocating, and it fills a map: the one such line of the service's code
// is named the holder of the growth net/http's request lines show, with
// less confidence still. Without the source line nothing shows it is a
// container, and no holder is named.
func TestRun_namesTheHolderFromItsAllocations(t *testing.T) {
	// The request lines the map's keys are cut from grow, and with them,
	// in one case, the values decoded beside them: the holder is named
	// whether one site of what it keeps grows or two.
	for _, alone := range []bool{false, true} {
		t.Run(fmt.Sprintf("lines alone %v", alone), func(t *testing.T) { namesTheHolderFromItsAllocations(t, alone) })
	}
}

func namesTheHolderFromItsAllocations(t *testing.T, linesAlone bool) {
	build := func(source bool) Input {
		var in Input
		for i := range 6 {
			at := t0.Add(time.Duration(i) * time.Minute)
			h := newHeap(at, 512<<10)
			allocated, lines, values := int64(i)*4<<20, int64(i)*768<<10, int64(i)*128<<10
			if linesAlone {
				lines, values = lines+values, 0
			}
			h.sample([4]int64{allocated / 64, allocated, 0, 0}, cacheAdd, handler)
			h.sample([4]int64{lines / 120, lines, lines / 120, lines}, readLine, httpRead)
			if values > 0 {
				h.sample([4]int64{values / 64, values, values / 64, values}, decode, handler)
			}
			in.Heap = append(in.Heap, Profile{Name: fmt.Sprintf("heap-%03d", i), Time: at, Profile: h.build()})
			live := 20*mib + float64(i)*mib
			in.Live = append(in.Live, Live{Bytes: uint64(live), Objects: uint64(live / 64)})
		}
		if source {
			in.Source = mapSource{{file: cacheAdd.file, line: cacheAdd.line}: "	c.m[key] = append(c.m[key], v) // keep it"}
		}
		return in
	}
	leaks := findingsWith(Run(build(true)).Findings, "leak.inuse-growth")
	if len(leaks) == 0 || leaks[0].Function != cacheAdd.name || leaks[0].Line != cacheAdd.line {
		t.Fatalf("leak findings %v, want the lead at the map's insert", leaks)
	}
	for _, want := range []string{"a map that only grows holds the leak", "no heap sample there yet", "textproto.(*Reader).ReadLine"} {
		if !strings.Contains(leaks[0].Title, want) {
			t.Errorf("title %q does not say %q", leaks[0].Title, want)
		}
	}
	for _, f := range findingsWith(Run(build(false)).Findings, "leak.inuse-growth") {
		if strings.Contains(f.Title, "holds the leak") {
			t.Errorf("finding %q names a holder without evidence that the line fills a container", f.Title)
		}
	}
}

// TestRun_aCacheIsNoContextItDidNotMake: among what the cache of
// holderInput keeps grow, at the last snapshot, the cancellable contexts
// net/http makes per request (in flight, on its own stacks): the cache
// holds the leak, and is no context the service leaves uncancelled.
func TestRun_aCacheIsNoContextItDidNotMake(t *testing.T) {
	withCancel := fn{"context.withCancel", "/go/src/context/context.go", 268}
	WithCancel := fn{"context.WithCancel", "/go/src/context/context.go", 237}
	in := holderInputWith(true, 1, func(h *heapBuilder, i int) {
		ctxs := int64(i) * 64 << 10
		h.sample([4]int64{ctxs / 96, ctxs, ctxs / 96, ctxs}, withCancel, WithCancel, httpRead)
	})
	var leaks []string
	for _, f := range Run(in).Findings {
		if strings.HasPrefix(f.ID, "leak.") {
			leaks = append(leaks, fmt.Sprintf("%s at %s:%d (cause %q)", f.ID, f.Function, f.Line, f.Cause))
			if f.Cause == "leak/context-cancel-never-called" || strings.Contains(f.Fix, "call the cancel function") {
				t.Errorf("%s at %s:%d is called contexts never cancelled: the service makes none", f.ID, f.Function, f.Line)
			}
		}
	}
	if len(leaks) != 1 || !strings.Contains(leaks[0], cacheAdd.name) {
		t.Errorf("leak findings %v, want one, at the map", leaks)
	}
}

// TestRun_aStraySiteLeavesTheHolderAlone: in this window no sample caught
// the map's tables growing, only the entries its line adds (small
// objects) and the request lines its keys keep; two samples landed at a
// site the handler reaches. Those two are chance, as the leak check
// says: the map is still the one container that can keep the lines, and
// the leak is one finding at its line, not a second at net/http's.
func TestRun_aStraySiteLeavesTheHolderAlone(t *testing.T) {
	stray := fn{"regexp.(*bitState).reset", "/go/src/regexp/backtrack.go", 91}
	var in Input
	const period = 4096
	for i := range 3 {
		at := t0.Add(time.Duration(i) * 2 * time.Second)
		h := newHeap(at, period)
		entries := int64(i) * 80 << 10
		lines := int64(i) * 110 << 10
		h.sampleWithSize(64, [4]int64{entries / 64, entries, entries / 64, entries}, cacheAdd, handler)
		h.sampleWithSize(48, [4]int64{lines / 48, lines, lines / 48, lines}, readLine, httpRead)
		if i == 2 {
			h.sampleWithSize(1024, [4]int64{8, 8 << 10, 8, 8 << 10}, stray, handler)
		}
		in.Heap = append(in.Heap, Profile{Name: fmt.Sprintf("heap-%03d", i), Time: at, Profile: h.build()})
		live := 2*mib + float64(i)*230*1024
		in.Live = append(in.Live, Live{Bytes: uint64(live), Objects: uint64(live / 64)})
	}
	in.Source = mapSource{{file: cacheAdd.file, line: cacheAdd.line}: "	c.m[key] = append(c.m[key], v) // keep it"}
	var leaks []string
	for _, f := range Run(in).Findings {
		if strings.HasPrefix(f.ID, "leak.") {
			leaks = append(leaks, fmt.Sprintf("%s at %s:%d: %.60s", f.ID, f.Function, f.Line, f.Title))
		}
	}
	if len(leaks) != 1 || !strings.Contains(leaks[0], cacheAdd.name) || !strings.Contains(leaks[0], "holds the leak") {
		t.Errorf("leak findings %q, want one, the map holding the leak", leaks)
	}
}
