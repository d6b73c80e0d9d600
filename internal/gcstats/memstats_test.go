package gcstats

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"testing"
	"testing/iotest"
)

// heapDebug returns this process's /debug/pprof/heap?debug=1 output and
// the MemStats read right after it, with no collection in between.
func heapDebug(t testing.TB) ([]byte, runtime.MemStats) {
	t.Helper()
	// No automatic collection may run between the two reads.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return buf.Bytes(), ms
}

func TestParseHeapDebug_realOutput(t *testing.T) {
	out, want := heapDebug(t)
	got, err := ParseHeapDebug(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("ParseHeapDebug: %v", err)
	}
	if got.NumGC != want.NumGC || got.NumGC == 0 {
		t.Errorf("NumGC = %d, want %d (> 0)", got.NumGC, want.NumGC)
	}
	if got.NumForcedGC != want.NumForcedGC || got.NumForcedGC == 0 {
		t.Errorf("NumForcedGC = %d, want %d (> 0)", got.NumForcedGC, want.NumForcedGC)
	}
	if got.PauseNs != want.PauseNs {
		t.Errorf("PauseNs ring differs:\n got %v\nwant %v", got.PauseNs, want.PauseNs)
	}
	if got.PauseEnd != want.PauseEnd {
		t.Errorf("PauseEnd ring differs:\n got %v\nwant %v", got.PauseEnd, want.PauseEnd)
	}
	last := (want.NumGC - 1) % PauseRingSize
	if got.PauseEnd[last] == 0 || got.PauseEnd[last] != want.LastGC || got.LastGC != want.LastGC {
		t.Errorf("last cycle ended at %d, LastGC %d, want %d", got.PauseEnd[last], got.LastGC, want.LastGC)
	}
	// The profile is written after its MemStats are read: what it
	// allocates shows in the later ReadMemStats only.
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"TotalAlloc", got.TotalAlloc, want.TotalAlloc},
		{"Mallocs", got.Mallocs, want.Mallocs},
		{"Frees", got.Frees, want.Frees},
	} {
		if c.got == 0 || c.got > c.want {
			t.Errorf("%s = %d, want in (0, %d]", c.name, c.got, c.want)
		}
	}
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"HeapSys", got.HeapSys, want.HeapSys},
		{"Sys", got.Sys, want.Sys},
		{"StackSys", got.StackSys, want.StackSys},
		{"MSpanSys", got.MSpanSys, want.MSpanSys},
		{"GCSys", got.GCSys, want.GCSys},
	} {
		if c.got == 0 || math.Abs(float64(c.got)-float64(c.want)) > 4<<20 {
			t.Errorf("%s = %d, want within 4 MiB of %d", c.name, c.got, c.want)
		}
	}
	if got.GCCPUFraction <= 0 || math.Abs(got.GCCPUFraction-want.GCCPUFraction) > 0.01 {
		t.Errorf("GCCPUFraction = %v, want close to %v", got.GCCPUFraction, want.GCCPUFraction)
	}
	if runtime.GOOS == "linux" && got.MaxRSS == 0 {
		t.Error("MaxRSS = 0 on linux")
	}
	if got.MaxRSS != 0 && got.MaxRSS < got.HeapInuse {
		t.Errorf("MaxRSS %d below HeapInuse %d", got.MaxRSS, got.HeapInuse)
	}
}

// trailer renders m as runtime/pprof prints it after the records.
func trailer(m MemStats, maxRSS bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n# runtime.MemStats\n")
	fmt.Fprintf(&b, "# Alloc = %d\n", m.Alloc)
	fmt.Fprintf(&b, "# TotalAlloc = %d\n", m.TotalAlloc)
	fmt.Fprintf(&b, "# Sys = %d\n", m.Sys)
	fmt.Fprintf(&b, "# Lookups = %d\n", m.Lookups)
	fmt.Fprintf(&b, "# Mallocs = %d\n", m.Mallocs)
	fmt.Fprintf(&b, "# Frees = %d\n", m.Frees)
	fmt.Fprintf(&b, "# HeapAlloc = %d\n", m.HeapAlloc)
	fmt.Fprintf(&b, "# HeapSys = %d\n", m.HeapSys)
	fmt.Fprintf(&b, "# HeapIdle = %d\n", m.HeapIdle)
	fmt.Fprintf(&b, "# HeapInuse = %d\n", m.HeapInuse)
	fmt.Fprintf(&b, "# HeapReleased = %d\n", m.HeapReleased)
	fmt.Fprintf(&b, "# HeapObjects = %d\n", m.HeapObjects)
	fmt.Fprintf(&b, "# Stack = %d / %d\n", m.StackInuse, m.StackSys)
	fmt.Fprintf(&b, "# MSpan = %d / %d\n", m.MSpanInuse, m.MSpanSys)
	fmt.Fprintf(&b, "# MCache = %d / %d\n", m.MCacheInuse, m.MCacheSys)
	fmt.Fprintf(&b, "# BuckHashSys = %d\n", m.BuckHashSys)
	fmt.Fprintf(&b, "# GCSys = %d\n", m.GCSys)
	fmt.Fprintf(&b, "# OtherSys = %d\n", m.OtherSys)
	fmt.Fprintf(&b, "# NextGC = %d\n", m.NextGC)
	fmt.Fprintf(&b, "# LastGC = %d\n", m.LastGC)
	fmt.Fprintf(&b, "# PauseNs = %d\n", m.PauseNs)
	fmt.Fprintf(&b, "# PauseEnd = %d\n", m.PauseEnd)
	fmt.Fprintf(&b, "# NumGC = %d\n", m.NumGC)
	fmt.Fprintf(&b, "# NumForcedGC = %d\n", m.NumForcedGC)
	fmt.Fprintf(&b, "# GCCPUFraction = %v\n", m.GCCPUFraction)
	fmt.Fprintf(&b, "# DebugGC = %v\n", false)
	if maxRSS {
		fmt.Fprintf(&b, "# MaxRSS = %d\n", m.MaxRSS)
	}
	return b.String()
}

// sampleMemStats has a distinct value in every field.
func sampleMemStats() MemStats {
	m := MemStats{
		Alloc: 1, TotalAlloc: 2, Sys: 3, Lookups: 4, Mallocs: 5, Frees: 6,
		HeapAlloc: 7, HeapSys: 8, HeapIdle: 9, HeapInuse: 10, HeapReleased: 11, HeapObjects: 12,
		StackInuse: 13, StackSys: 14, MSpanInuse: 15, MSpanSys: 16, MCacheInuse: 17, MCacheSys: 18,
		BuckHashSys: 19, GCSys: 20, OtherSys: 21, NextGC: 22, LastGC: 1700000000000000000,
		NumGC: 300, NumForcedGC: 2, GCCPUFraction: 1.5e-05, MaxRSS: math.MaxUint64,
	}
	for i := range m.PauseNs {
		m.PauseNs[i] = uint64(1000 + i)
		m.PauseEnd[i] = uint64(1700000000000000000 + i)
	}
	return m
}

const recordsHead = "heap profile: 1: 16 [2: 32] @ heap/1048576\n" +
	"1: 16 [2: 32] @ 0x4a1b2c 0x4a1c3d\n" +
	"#\t0x4a1b2b\tmain.f+0x2b\texample.com/app/main.go:10\n" +
	"#\t0x4a1c3c\tmain.main+0x1c\texample.com/app/main.go:20\n"

func TestParseHeapDebug(t *testing.T) {
	m := sampleMemStats()
	noRSS := m
	noRSS.MaxRSS = 0
	full := recordsHead + trailer(m, true)
	tests := []struct {
		name string
		in   string
		want MemStats
	}{
		{name: "records and trailer", in: full, want: m},
		{name: "trailer only", in: trailer(m, true), want: m},
		{name: "no MaxRSS", in: recordsHead + trailer(m, false), want: noRSS},
		{name: "CRLF", in: strings.ReplaceAll(full, "\n", "\r\n"), want: m},
		{name: "no final newline", in: strings.TrimSuffix(full, "\n"), want: m},
		{name: "unknown keys", in: strings.Replace(full, "# NumGC", "# NewThing = 7\n# Other = [1 2]\n# NumGC", 1) + "# Later = x\nfree text\n", want: m},
		{name: "line longer than the buffer before the trailer", in: recordsHead + "1: 1 [1: 1] @" + strings.Repeat(" 0x4a1b2c", 20000) + "\n" + trailer(m, true), want: m},
		{name: "header with trailing space", in: strings.Replace(full, "# runtime.MemStats\n", "# runtime.MemStats \n", 1), want: m},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for name, r := range map[string]io.Reader{
				"whole":    strings.NewReader(tt.in),
				"one byte": iotest.OneByteReader(strings.NewReader(tt.in)),
			} {
				got, err := ParseHeapDebug(r)
				if err != nil {
					t.Fatalf("%s: ParseHeapDebug: %v", name, err)
				}
				if got != tt.want {
					t.Errorf("%s: ParseHeapDebug =\n%+v\nwant\n%+v", name, got, tt.want)
				}
			}
		})
	}
}

func TestParseHeapDebug_errors(t *testing.T) {
	m := sampleMemStats()
	full := recordsHead + trailer(m, true)
	replace := func(old, new string) string {
		if !strings.Contains(full, old) {
			t.Fatalf("%q not in the sample output", old)
		}
		return strings.Replace(full, old, new, 1)
	}
	ring := func(n int) string {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = "7"
		}
		return "[" + strings.Join(vals, " ") + "]"
	}
	tests := []struct {
		name   string
		in     io.Reader
		is     error
		substr string
	}{
		{name: "empty", in: strings.NewReader(""), is: ErrNoMemStats},
		{name: "records only", in: strings.NewReader(recordsHead), is: ErrNoMemStats},
		{name: "html", in: strings.NewReader("<html><body>404</body></html>\n"), is: ErrNoMemStats},
		{name: "proto profile", in: strings.NewReader("\x1f\x8b\x08\x00binary"), is: ErrNoMemStats},
		{name: "truncated trailer", in: strings.NewReader(full[:strings.Index(full, "# PauseEnd")]), substr: "parse runtime.MemStats: missing PauseEnd, NumGC, NumForcedGC, GCCPUFraction (truncated output?)"},
		{name: "bad number", in: strings.NewReader(replace("# NumGC = 300", "# NumGC = 3x0")), substr: `NumGC: invalid value "3x0"`},
		{name: "NumGC beyond uint32", in: strings.NewReader(replace("# NumGC = 300", "# NumGC = 4294967296")), substr: "NumGC: invalid value"},
		{name: "uint64 overflow", in: strings.NewReader(replace("# Sys = 3", "# Sys = 18446744073709551616")), substr: `Sys: invalid value "18446744073709551616"`},
		{name: "negative", in: strings.NewReader(replace("# Sys = 3", "# Sys = -3")), substr: `Sys: invalid value "-3"`},
		{name: "empty value", in: strings.NewReader(replace("# Sys = 3", "# Sys = ")), substr: `Sys: invalid value ""`},
		{name: "bad pair", in: strings.NewReader(replace("# Stack = 13 / 14", "# Stack = 13")), substr: `Stack: invalid value "13", want "inuse / sys"`},
		{name: "short ring", in: strings.NewReader(replace(fmt.Sprintf("# PauseNs = %d", m.PauseNs), "# PauseNs = "+ring(255))), substr: "PauseNs: 255 values, want 256"},
		{name: "long ring", in: strings.NewReader(replace(fmt.Sprintf("# PauseNs = %d", m.PauseNs), "# PauseNs = "+ring(257))), substr: "PauseNs: more than 256 values"},
		{name: "ring without brackets", in: strings.NewReader(replace(fmt.Sprintf("# PauseEnd = %d", m.PauseEnd), "# PauseEnd = 1 2 3")), substr: "PauseEnd: invalid value: want [v0 … v255]"},
		{name: "bad ring value", in: strings.NewReader(replace(fmt.Sprintf("# PauseNs = [%d", m.PauseNs[0]), "# PauseNs = [x")), substr: `PauseNs: invalid value "x" at index 0`},
		{name: "NaN fraction", in: strings.NewReader(replace("# GCCPUFraction = 1.5e-05", "# GCCPUFraction = NaN")), substr: `GCCPUFraction: invalid value "NaN"`},
		{name: "negative fraction", in: strings.NewReader(replace("# GCCPUFraction = 1.5e-05", "# GCCPUFraction = -0.5")), substr: "GCCPUFraction: invalid value"},
		{name: "read error in records", in: io.MultiReader(strings.NewReader(recordsHead), iotest.ErrReader(errBoom)), is: errBoom, substr: "read heap?debug=1 output: boom"},
		{name: "read error in trailer", in: io.MultiReader(strings.NewReader(full[:len(full)/2+len(recordsHead)]), iotest.ErrReader(errBoom)), is: errBoom, substr: "read heap?debug=1 output: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHeapDebug(tt.in)
			if err == nil {
				t.Fatalf("ParseHeapDebug = %+v, want an error", got)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %q", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.substr) {
				t.Errorf("error %q does not contain %q", err, tt.substr)
			}
			if got != (MemStats{}) {
				t.Errorf("partial result %+v returned with the error", got)
			}
		})
	}
}

var errBoom = errors.New("boom")

func TestParseHeapDebug_errorMessage(t *testing.T) {
	_, err := ParseHeapDebug(strings.NewReader("heap profile: 0: 0 [0: 0] @ heap/1048576\n"))
	if err == nil || err.Error() != "no runtime.MemStats section in heap?debug=1 output" {
		t.Errorf("error = %v", err)
	}
}

func FuzzParseHeapDebug(f *testing.F) {
	out, _ := heapDebug(f)
	f.Add(out)
	f.Add([]byte(recordsHead + trailer(sampleMemStats(), true)))
	f.Add([]byte(trailer(MemStats{}, false)))
	f.Add([]byte("# runtime.MemStats\n# Stack = 1 / 2\n# PauseNs = [1 2 3]\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := ParseHeapDebug(bytes.NewReader(in))
		if err != nil {
			if m != (MemStats{}) {
				t.Fatal("partial result returned with an error")
			}
			return
		}
		// What parses renders back to the same figures.
		again, err := ParseHeapDebug(strings.NewReader(trailer(m, m.MaxRSS != 0)))
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if again != m {
			t.Fatalf("round trip changed the figures:\n%+v\n%+v", m, again)
		}
	})
}

// BenchmarkParseHeapDebug reads a 16 MiB heap?debug=1 body made of this
// process's records repeated, then its trailer.
func BenchmarkParseHeapDebug(b *testing.B) {
	out, _ := heapDebug(b)
	i := bytes.Index(out, []byte("\n# runtime.MemStats"))
	records, tail := out[:i+1], out[i:]
	var body bytes.Buffer
	for body.Len() < 16<<20 {
		body.Write(records)
	}
	body.Write(tail)
	in := body.Bytes()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseHeapDebug(bytes.NewReader(in)); err != nil {
			b.Fatal(err)
		}
	}
}
