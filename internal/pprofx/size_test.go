package pprofx

import (
	"bytes"
	"context"
	"errors"
	"math"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// repeatSample returns raw, a profile's protobuf, followed by its first
// sample with extra appended to it, repeated until the whole is n bytes:
// a valid profile that decodes to many times its size.
func repeatSample(t testing.TB, raw []byte, extra pbuf, n int) []byte {
	t.Helper()
	p, err := profile.ParseData(raw)
	if err != nil {
		t.Fatal(err)
	}
	var ids, s pbuf
	for _, l := range p.Sample[0].Location {
		ids.varint(l.ID)
	}
	s.bytes(1, ids)
	for _, v := range p.Sample[0].Value {
		s.uint(2, uint64(v))
	}
	s = append(s, extra...)
	var one pbuf
	one.bytes(2, s)
	out := append([]byte(nil), raw...)
	for len(out) < n {
		out = append(out, one...)
	}
	return out
}

// labels encodes n labels of a sample, each of key and str (string
// indices), and unit when not 0.
func labels(n int, key, str, num, unit uint64) pbuf {
	var out pbuf
	for range n {
		var l pbuf
		if key != 0 {
			l.uint(1, key)
		}
		if str != 0 {
			l.uint(2, str)
		}
		if num != 0 {
			l.uint(3, num)
		}
		if unit != 0 {
			l.uint(4, unit)
		}
		out.bytes(3, l)
	}
	return out
}

// goroutinesWithLabels returns the goroutine profile of the test while n
// goroutines wait with labels, and the protobuf of it.
func goroutinesWithLabels(t testing.TB, n int) []byte {
	t.Helper()
	stop, started := make(chan struct{}), make(chan struct{}, n)
	for i := range n {
		go pprof.Do(context.Background(), pprof.Labels("request", string(rune('a'+i%26)), "tenant", "t"), func(context.Context) {
			started <- struct{}{}
			<-stop
		})
	}
	for range n {
		<-started
	}
	defer close(stop)
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	return gunzipBytes(t, buf.Bytes())
}

// appendField returns raw, a profile's protobuf, with a field of data
// appended: a string (6) or packed comments (13).
func appendField(raw []byte, field int, data []byte) []byte {
	b := pbuf(append([]byte(nil), raw...))
	b.bytes(field, data)
	return b
}

// repeatedLocation encodes n more location ids of a sample, packed: the
// first location of raw, a profile's protobuf.
func repeatedLocation(raw []byte, n int) pbuf {
	p, err := profile.ParseData(raw)
	if err != nil {
		panic(err)
	}
	var ids pbuf
	for range n {
		ids.varint(p.Location[0].ID)
	}
	var out pbuf
	out.bytes(1, ids)
	return out
}

// stringIndex returns the index of s in the string table of raw, a
// profile's protobuf.
func stringIndex(t testing.TB, raw []byte, s string) uint64 {
	t.Helper()
	var i uint64
	for b := raw; len(b) > 0; {
		f, err := nextField(b)
		if err != nil {
			t.Fatal(err)
		}
		b = f.rest
		if f.num == 6 {
			if string(f.data) == s {
				return i
			}
			i++
		}
	}
	t.Fatalf("no string %q in the profile", s)
	return 0
}

func TestDecodeCost(t *testing.T) {
	heap := gunzipBytes(t, readTestdata(t, "heap-end.pb.gz"))
	bytesKey := stringIndex(t, heap, "bytes")
	count := stringIndex(t, heap, "count")
	var legacy bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&legacy, 1); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		raw  []byte
		// most bounds the estimate, as a multiple of what decoding
		// allocates in all; 0 leaves it unbounded.
		most float64
	}{
		{name: "heap profile", raw: heap, most: 1.5},
		{name: "first heap profile", raw: gunzipBytes(t, readTestdata(t, "heap-start.pb.gz")), most: 1.5},
		{name: "goroutines with labels", raw: goroutinesWithLabels(t, 300), most: 2},
		{name: "one sample repeated", raw: repeatSample(t, heap, nil, 2<<20), most: 1.5},
		{name: "string labels", raw: repeatSample(t, heap, labels(3, bytesKey, count, 0, 0), 2<<20), most: 2},
		{name: "numeric labels with units", raw: repeatSample(t, heap, labels(2, bytesKey, 0, 16, bytesKey), 2<<20), most: 2},
		{name: "empty labels", raw: repeatSample(t, heap, labels(40, 0, 0, 0, 0), 4<<20), most: 2},
		// Messages beyond the read buffer: a string and comments are
		// counted as they stream by, a sample is charged by the byte, at
		// the most a byte can cost.
		{name: "a long string", raw: appendField(heap, 6, bytes.Repeat([]byte("s"), 2*costBuffer)), most: 1.5},
		{name: "many comments", raw: appendField(heap, 13, make([]byte, 2*costBuffer)), most: 2},
		{name: "a sample of many frames", raw: repeatSample(t, heap, repeatedLocation(heap, 2*costBuffer), len(heap)+1)},
		// Legacy formats are charged by the byte, far above what their
		// text costs.
		{name: "legacy text", raw: legacy.Bytes()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, cost, _, err := sizeOf(bytes.NewReader(tt.raw), 0, math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			p, err := profile.ParseData(tt.raw)
			runtime.GC()
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			allocated := int64(after.TotalAlloc - before.TotalAlloc)
			runtime.KeepAlive(p)
			t.Logf("%d bytes of protobuf: estimate %d, live %d, allocated %d", len(tt.raw), cost, live, allocated)
			if cost < live {
				t.Errorf("estimate %d is below the %d bytes the decoded profile holds", cost, live)
			}
			if tt.most > 0 && float64(cost) > tt.most*float64(allocated) {
				t.Errorf("estimate %d is over %.1f times the %d bytes decoding allocated", cost, tt.most, allocated)
			}
		})
	}
}

func TestParseWithin(t *testing.T) {
	gz := readTestdata(t, "heap-end.pb.gz")
	raw := gunzipBytes(t, gz)
	want, decoded, err := ParseWithin(gz, Limits{})
	if err != nil {
		t.Fatalf("ParseWithin: %v", err)
	}
	parsed, err := Parse(gz, 0)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if parsed.String() != want.String() {
		t.Error("ParseWithin and Parse decode the profile differently")
	}
	if decoded <= int64(len(raw)) {
		t.Errorf("decoded estimate %d, want more than the %d bytes of protobuf", decoded, len(raw))
	}
	bomb := gzipBytes(t, make([]byte, 8<<20))
	repeated := repeatSample(t, raw, nil, 4<<20)
	legacy := []byte("heap profile: 1: 16 [1: 16] @ heap/1048576\n1: 16 [1: 16] @ 0x1 0x2\n")
	tests := []struct {
		name    string
		data    []byte
		lim     Limits
		decoded bool   // a *TooLargeError of the decoded size, else of the decompressed one
		limit   int64  // its limit
		want    string // in the message
	}{
		{name: "gzip under the decoded limit", data: gz, lim: Limits{MaxDecoded: decoded - 1}, decoded: true, limit: decoded - 1,
			want: "profile would take about "},
		{name: "uncompressed under the decoded limit", data: raw, lim: Limits{MaxDecoded: 1 << 10}, decoded: true, limit: 1 << 10},
		{name: "one sample repeated", data: gzipBytes(t, repeated), lim: Limits{MaxDecoded: 16 << 20}, decoded: true, limit: 16 << 20},
		{name: "legacy text", data: legacy, lim: Limits{MaxDecoded: int64(len(legacy))}, decoded: true, limit: int64(len(legacy))},
		// Zeros are not a protobuf: charged costLegacy a byte, they are
		// refused by the decompressed size only when that is the lower
		// limit, else by what decoding them would take, from a
		// thirty-second of them.
		{name: "gzip bomb", data: bomb, lim: Limits{MaxDecompressed: 1 << 20, MaxDecoded: 64 << 20}, limit: 1 << 20,
			want: "profile decompresses to more than 1048576 bytes"},
		{name: "gzip bomb beyond the decoded limit", data: bomb, lim: Limits{MaxDecompressed: 1 << 30, MaxDecoded: 1 << 20}, decoded: true, limit: 1 << 20,
			want: "profile would take more than 1048576 bytes of memory to decode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _, err := ParseWithin(tt.data, tt.lim)
			if err == nil {
				t.Fatalf("ParseWithin succeeded with %d samples, want an error", len(p.Sample))
			}
			var tl *TooLargeError
			if !errors.As(err, &tl) || tl.Decoded != tt.decoded || tl.Limit != tt.limit {
				t.Fatalf("error %v (%#v), want a *TooLargeError of limit %d, decoded %v", err, tl, tt.limit, tt.decoded)
			}
			if tt.decoded && tl.Estimate != 0 && tl.Estimate <= tl.Limit {
				t.Errorf("estimate %d is within the limit %d", tl.Estimate, tl.Limit)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestParseWithin_RefusesWithoutHolding(t *testing.T) {
	raw := gunzipBytes(t, readTestdata(t, "heap-end.pb.gz"))
	const limit = 8 << 20
	tests := []struct {
		name string
		data []byte
	}{
		{name: "gzip bomb", data: gzipBytes(t, make([]byte, 8*limit))},
		{name: "one sample repeated", data: gzipBytes(t, repeatSample(t, raw, nil, limit/2))},
		{name: "legacy text that never ends", data: gzipBytes(t, bytes.Repeat([]byte("1: 16 [1: 16] @ 0x1 0x2\n"), limit/24))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, _, err := ParseWithin(tt.data, Limits{MaxDecompressed: limit, MaxDecoded: limit})
			runtime.ReadMemStats(&after)
			var tl *TooLargeError
			if !errors.As(err, &tl) {
				t.Fatalf("error %v, want a *TooLargeError", err)
			}
			// A read buffer and the gzip reader's state: nothing of the
			// size of the profile.
			if got := after.TotalAlloc - before.TotalAlloc; got > 2<<20 {
				t.Errorf("refusing it allocated %d bytes", got)
			}
		})
	}
}

// TestSizeOf_stopsOnceTooCostly feeds sizeOf zeros without end: it must
// stop once what it read costs more than its bound, not read on.
func TestSizeOf_stopsOnceTooCostly(t *testing.T) {
	const maxCost = 1 << 20
	size, cost, partial, err := sizeOf(zeros{}, 0, maxCost)
	if err != nil || !partial || cost <= maxCost {
		t.Fatalf("sizeOf(zeros) = cost %d, partial %v, %v; want partial beyond %d", cost, partial, err, maxCost)
	}
	// The read buffer's first fill, then one more before the check.
	if most := int64(maxCost/costLegacy + 2*costBuffer); size > most {
		t.Errorf("read %d bytes of zeros, want at most %d", size, most)
	}
}

// zeros reads as an endless stream of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestReadStacks_MaxDecoded(t *testing.T) {
	raw := gunzipBytes(t, readTestdata(t, "heap-end.pb.gz"))
	repeated := gzipBytes(t, repeatSample(t, raw, nil, 4<<20))
	const limit = 16 << 20
	_, err := ReadStacks(bytes.NewReader(repeated), ReadOptions{Unmerged: true, MaxDecoded: limit})
	var tl *TooLargeError
	if !errors.As(err, &tl) || !tl.Decoded || tl.Limit != limit {
		t.Fatalf("unmerged, within %d: error %v, want a *TooLargeError of the decoded size", limit, err)
	}
	if _, _, perr := ParseWithin(repeated, Limits{MaxDecoded: limit}); perr == nil {
		t.Error("Parse accepts what ReadStacks refuses")
	}
	// Merged, the repeated sample is one stack: cheap to read.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, err := ReadStacks(bytes.NewReader(repeated), ReadOptions{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("merged: %v", err)
	}
	want, err := ReadStacks(bytes.NewReader(raw), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != want.Len() {
		t.Errorf("merged: %d stacks, want the %d of the profile repeated", s.Len(), want.Len())
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("merged: reading it allocated %d bytes", got)
	}
}

func TestReadStacks_JunkCostsNoMemory(t *testing.T) {
	// Not a protobuf from its first bytes: the decoder hands what it read
	// to Parse for the legacy formats, up to what Parse would decode.
	junk := gzipBytes(t, bytes.Repeat([]byte{0xff}, 64<<20))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadStacks(bytes.NewReader(junk), ReadOptions{MaxDecompressed: 32 << 20})
	runtime.ReadMemStats(&after)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Decoded || tl.Limit != 32<<20 {
		t.Errorf("error %v, want a *TooLargeError of the decompressed size", err)
	}
	most := uint64(4 * DefaultMaxDecoded / costLegacy)
	if raceDetector {
		most *= 2
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > most {
		t.Errorf("refusing it allocated %d bytes, more than %d", got, most)
	}
	_, err = ReadStacks(bytes.NewReader(junk), ReadOptions{})
	if !errors.As(err, &tl) || !tl.Decoded {
		t.Errorf("error %v, want a *TooLargeError of the decoded size", err)
	}
}
