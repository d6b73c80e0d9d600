package run

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"runtime"
	rpprof "runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/target"
)

// hostileCap is the limit the hostile targets' tests set, small so that
// each test is quick; what a run allocates against one is compared with
// it.
const hostileCap = 8 << 20

// allocatedBy returns the bytes the process allocated while f ran: what
// f's heap grew by at its peak is no more.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func gzipped(t testing.TB, chunks ...[]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	// The fastest level: under the race detector the best takes a
	// minute over a bomb's zeros, the fastest seconds.
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if _, err := zw.Write(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gzipBomb is a gzip of n zero bytes: about a thousandth of n.
func gzipBomb(t testing.TB, n int) []byte {
	t.Helper()
	return gzipped(t, make([]byte, n))
}

// repeatedSample is a valid heap profile of about n bytes of protobuf:
// this process' heap profile with its first sample repeated, which
// gzip shrinks hundreds of times and profile.Parse expands ten.
func repeatedSample(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := rpprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) == 0 {
		t.Fatal("the heap profile of the test has no sample")
	}
	var head bytes.Buffer
	if err := p.WriteUncompressed(&head); err != nil {
		t.Fatal(err)
	}
	packed := func(field byte, vs []uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.AppendUvarint(b, v)
		}
		return append(binary.AppendUvarint([]byte{field<<3 | 2}, uint64(len(b))), b...)
	}
	var ids, vals []uint64
	for _, l := range p.Sample[0].Location {
		ids = append(ids, l.ID)
	}
	for _, v := range p.Sample[0].Value {
		vals = append(vals, uint64(v))
	}
	msg := append(packed(1, ids), packed(2, vals)...)
	one := append(binary.AppendUvarint([]byte{2<<3 | 2}, uint64(len(msg))), msg...)
	body := head.Bytes()
	for len(body) < n {
		body = append(body, one...)
	}
	return gzipped(t, body)
}

// hostileHeap serves net/http/pprof, its heap profile (but for the
// MemStats of debug=1) replaced by h.
func hostileHeap(h http.HandlerFunc) http.Handler {
	return pprofMux(map[string]http.HandlerFunc{
		"/debug/pprof/heap": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("debug") != "" {
				pprof.Index(w, r)
				return
			}
			h(w, r)
		},
	})
}

func TestProfile_HostileTargetsCostLittle(t *testing.T) {
	bomb := gzipBomb(t, 8*hostileCap)
	structure := repeatedSample(t, hostileCap/2)
	endless := func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte{0x1f, 0x8b, 8, 0}, 8<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
	silent := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	tests := []struct {
		name    string
		heap    http.HandlerFunc
		wantErr string
		kind    func(error) bool
		// timeout is the target's, 500 ms unless set: the endless body
		// has a minute, so that its size, not a starved machine's pace,
		// ends it.
		timeout time.Duration
	}{
		{
			name: "gzip bomb", heap: func(w http.ResponseWriter, r *http.Request) { w.Write(bomb) },
			// Zeros are no protobuf: charged by the byte as a legacy
			// format, they pass the decoded limit long before the
			// decompressed one, and are refused there.
			wantErr: "read heap profile from http://127.0.0.1:", kind: func(err error) bool {
				var tl *pprofx.TooLargeError
				return errors.As(err, &tl) && tl.Decoded && tl.Limit == hostileCap &&
					strings.HasSuffix(err.Error(), "/debug/pprof/heap?gc=1: profile would take more than 8388608 bytes of memory to decode")
			},
		},
		{
			name: "one sample repeated", heap: func(w http.ResponseWriter, r *http.Request) { w.Write(structure) },
			wantErr: "profile would take about", kind: func(err error) bool {
				var tl *pprofx.TooLargeError
				return errors.As(err, &tl) && tl.Decoded && tl.Estimate > 5*hostileCap
			},
		},
		{
			name: "endless body", heap: endless, timeout: time.Minute, wantErr: "is larger than the limit of 8388608 bytes", kind: func(err error) bool {
				var bt *target.BodyTooLargeError
				return errors.As(err, &bt)
			},
		},
		{
			name: "never answers", heap: silent, wantErr: "no answer within 500ms",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, hostileHeap(tt.heap))
			var err error
			start := time.Now()
			timeout := cmp.Or(tt.timeout, 500*time.Millisecond)
			allocated := allocatedBy(func() {
				_, _, err = Profile(t.Context(), Config{
					Target:   target.Options{BaseURL: srv.URL, Timeout: timeout, MaxBody: hostileCap},
					Duration: time.Second,
					OutDir:   t.TempDir(),
					limits:   pprofx.Limits{MaxDecompressed: hostileCap, MaxDecoded: hostileCap},
				})
			})
			took := time.Since(start)
			t.Logf("gave up after %s, having allocated %d bytes: %v", took.Round(time.Millisecond), allocated, err)
			if err == nil {
				t.Fatal("Profile succeeded against a hostile target")
			}
			if !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line containing %q", err, tt.wantErr)
			}
			if tt.kind != nil && !tt.kind(err) {
				t.Errorf("error %q is not of the expected kind", err)
			}
			// What the capture held at its peak is less than what it
			// allocated in all: twice the limit, and room for the run's
			// own small allocations.
			if limit := uint64(2*hostileCap + 4<<20); allocated > limit {
				t.Errorf("the run allocated %d bytes, more than %d", allocated, limit)
			}
		})
	}
}

func TestProfile_HostileProfileInTheWindowMakesItPartial(t *testing.T) {
	bomb := gzipBomb(t, 8*hostileCap)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", func(w http.ResponseWriter, r *http.Request) { w.Write(bomb) })
	srv := serve(t, mux)
	// A lean run checks the CPU profile after the window, not as it
	// comes: the verdict is the same.
	for _, lean := range []bool{false, true} {
		start := time.Now()
		res, _, err := Profile(t.Context(), Config{
			Target:   target.Options{BaseURL: srv.URL, Timeout: 500 * time.Millisecond},
			Duration: time.Second, CPU: true, OutDir: t.TempDir(), Lean: lean,
			// Zeros cost costLegacy a byte to decode: room for that,
			// so that the decompressed size refuses them.
			limits: pprofx.Limits{MaxDecompressed: hostileCap, MaxDecoded: 64 * hostileCap},
		})
		if err != nil {
			t.Fatalf("Profile(lean %v): %v", lean, err)
		}
		t.Logf("lean %v: the run took %s", lean, time.Since(start).Round(time.Millisecond))
		if res.Status != result.StatusPartial || len(res.Failures) != 1 {
			t.Fatalf("lean %v: status %s, failures %+v: want partial, for the CPU profile", lean, res.Status, res.Failures)
		}
		f := res.Failures[0]
		if f.Step != "cpu profile" || !strings.Contains(f.Error, "read cpu profile from "+srv.URL+"/debug/pprof/profile?seconds=1: profile decompresses to more than") {
			t.Errorf("lean %v: failure %+v: want the CPU profile, what and where", lean, f)
		}
		if res.TopFor("alloc_space") == nil {
			t.Errorf("lean %v: the rest of the run was not kept: no alloc_space table", lean)
		}
		for _, p := range res.Profiles {
			if p.Kind == "cpu" {
				t.Errorf("lean %v: the refused CPU profile is listed in the result: %+v", lean, p)
			}
		}
	}
}

func TestProfile_WindowHoldsProfilesWithinTheLimit(t *testing.T) {
	// Each snapshot fits the limit, two do not: the window keeps the first
	// and refuses the rest, rather than hold them all.
	structure := repeatedSample(t, 1<<20)
	_, decoded, err := pprofx.ParseWithin(structure, pprofx.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	limit := decoded * 3 / 2
	srv := serve(t, hostileHeap(func(w http.ResponseWriter, r *http.Request) { w.Write(structure) }))
	for _, lean := range []bool{false, true} {
		var res *result.Run
		allocated := allocatedBy(func() {
			res, _, err = Profile(t.Context(), Config{
				Target:   target.Options{BaseURL: srv.URL},
				Duration: 300 * time.Millisecond, Snapshots: 4, OutDir: t.TempDir(), Lean: lean,
				limits: pprofx.Limits{MaxDecoded: limit},
			})
		})
		if err != nil {
			t.Fatalf("Profile(lean %v): %v", lean, err)
		}
		if res.Status != result.StatusPartial {
			t.Fatalf("lean %v: status %s, want partial", lean, res.Status)
		}
		var refused int
		for _, f := range res.Failures {
			if strings.HasPrefix(f.Step, "heap snapshot at ") && strings.Contains(f.Error, fmt.Sprintf("left of the %d bytes the window's profiles may take", limit)) {
				refused++
			}
		}
		if refused == 0 {
			t.Errorf("lean %v: failures %+v: want heap snapshots refused for the window's limit", lean, res.Failures)
		}
		// The run decodes, diffs and draws what it kept a few times
		// over; the four snapshots alone would take 2.7 times the limit.
		if most := uint64(8 * limit); allocated > most {
			t.Errorf("lean %v: the run allocated %d bytes, more than %d", lean, allocated, most)
		}
	}
}

// A watcher keeps dozens of windows open at once: lean runs hold their
// profiles compressed through the window and decode them in turns, so
// the memory they take together is about one run's decoded profiles, not
// one per window.
func TestProfile_LeanRunsDecodeInTurns(t *testing.T) {
	structure := repeatedSample(t, 256<<10)
	_, decoded, err := pprofx.ParseWithin(structure, pprofx.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, hostileHeap(func(w http.ResponseWriter, r *http.Request) { w.Write(structure) }))
	const runs, snapshots = 6, 4
	slots := make(chan struct{}, 1)
	peak := peakHeapWhile(t, func() {
		var wg sync.WaitGroup
		for range runs {
			wg.Go(func() {
				res, _, err := Profile(t.Context(), Config{
					Target:   target.Options{BaseURL: srv.URL},
					Duration: 600 * time.Millisecond, Snapshots: snapshots, OutDir: t.TempDir(),
					Lean: true, AnalysisSlots: slots,
				})
				if err != nil || res.Status != result.StatusComplete || len(res.Failures) > 0 {
					t.Errorf("Profile: %v, %+v", err, res)
				}
			})
		}
		wg.Wait()
	})
	// Held decoded all at once, the windows' snapshots would take
	// runs × snapshots = 24 times one decoded profile, and the heap
	// about 40 times with the garbage of their analyses; one analysis at
	// a time, about 8.
	if most := uint64(16 * decoded); peak > most {
		t.Errorf("%d lean runs of %d snapshots peaked at %d bytes of heap, more than %d (one decoded profile: %d bytes)",
			runs, snapshots, peak, most, decoded)
	}
}

// peakHeapWhile returns how far the heap grew above its size before f,
// sampled every few milliseconds while f runs.
func peakHeapWhile(t *testing.T, f func()) uint64 {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	done := make(chan struct{})
	var peak uint64
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	return peak - min(peak, base)
}
