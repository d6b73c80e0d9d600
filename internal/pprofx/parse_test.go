package pprofx

import (
	"bytes"
	"errors"
	"runtime/pprof"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	gz := readTestdata(t, "heap-end.pb.gz")
	raw := gunzipBytes(t, gz)
	tests := []struct {
		name  string
		data  []byte
		limit int64
	}{
		{name: "gzip", data: gz, limit: DefaultMaxDecompressed},
		{name: "uncompressed", data: raw, limit: DefaultMaxDecompressed},
		{name: "limit exactly the size", data: gz, limit: int64(len(raw))},
		{name: "default limit", data: gz, limit: 0},
		{name: "uncompressed beyond the limit", data: raw, limit: 1}, // the limit is about decompression
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.data, tt.limit)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got, want := strings.Join(Types(p), ","), "alloc_objects,alloc_space,inuse_objects,inuse_space"; got != want {
				t.Errorf("sample types %s, want %s", got, want)
			}
			if len(p.Sample) == 0 {
				t.Error("no samples")
			}
		})
	}
}

func TestParse_errors(t *testing.T) {
	gz := readTestdata(t, "heap-end.pb.gz")
	raw := gunzipBytes(t, gz)
	bomb := gzipBytes(t, make([]byte, 10<<20))
	tests := []struct {
		name       string
		data       []byte
		limit      int64
		notProfile bool   // wraps ErrNotProfile
		tooLarge   int64  // a *TooLargeError with this limit
		contains   string // in the message
	}{
		{name: "empty", data: nil, notProfile: true, contains: "not a pprof profile: empty input"},
		{name: "blank", data: []byte(" \n\t\n"), notProfile: true, contains: "blank"},
		{name: "html", data: []byte("<!DOCTYPE html>\n<html><body>Sign in</body></html>\n"), notProfile: true, contains: "HTML"},
		{name: "html after whitespace", data: []byte("\n\n  <html>404 page not found</html>"), notProfile: true, contains: "HTML"},
		{name: "json", data: []byte(`{"error":"unauthorized"}`), notProfile: true, contains: "JSON"},
		{name: "json array", data: []byte(`[1,2,3]`), notProfile: true, contains: "JSON"},
		{name: "text", data: []byte("404 page not found\n"), notProfile: true, contains: `text starting "404 page not found"`},
		{name: "binary", data: []byte{0xff, 0xff, 0xff, 0xff, 0x00, 0x01}, notProfile: true, contains: "not a pprof profile: "},
		{name: "truncated protobuf", data: raw[:len(raw)/2], notProfile: true},
		{name: "gzipped html", data: gzipBytes(t, []byte("<html></html>")), notProfile: true, contains: "HTML"},
		{name: "gzipped empty", data: gzipBytes(t, nil), notProfile: true, contains: "empty after decompression"},
		{name: "gzip inside gzip", data: gzipBytes(t, gz), notProfile: true, contains: "gzip inside gzip"},
		{name: "gzip header only", data: gz[:10], contains: "decompress profile: gzip stream is truncated"},
		{name: "truncated gzip", data: gz[:len(gz)/2], contains: "decompress profile: gzip stream is truncated"},
		{name: "gzip without trailer", data: gz[:len(gz)-4], contains: "decompress profile: gzip stream is truncated"},
		{name: "gzip magic only", data: []byte{0x1f, 0x8b}, contains: "decompress profile:"},
		{name: "corrupt gzip", data: append(append([]byte{}, gz[:20]...), bytes.Repeat([]byte{0xff}, 100)...), contains: "decompress profile:"},
		{name: "gzip bomb", data: bomb, limit: 1 << 20, tooLarge: 1 << 20, contains: "profile decompresses to more than 1048576 bytes"},
		{name: "profile over the limit", data: gz, limit: int64(len(raw)) - 1, tooLarge: int64(len(raw)) - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := tt.limit
			if limit == 0 {
				limit = DefaultMaxDecompressed
			}
			p, err := Parse(tt.data, limit)
			if err == nil {
				t.Fatalf("Parse succeeded with %d samples, want an error", len(p.Sample))
			}
			if got := errors.Is(err, ErrNotProfile); got != tt.notProfile {
				t.Errorf("errors.Is(%q, ErrNotProfile) = %v, want %v", err, got, tt.notProfile)
			}
			var tl *TooLargeError
			if errors.As(err, &tl) != (tt.tooLarge != 0) {
				t.Errorf("errors.As(%q, *TooLargeError) = %v, want %v", err, !(tt.tooLarge != 0), tt.tooLarge != 0)
			} else if tl != nil && tl.Limit != tt.tooLarge {
				t.Errorf("TooLargeError.Limit = %d, want %d", tl.Limit, tt.tooLarge)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	gz := readTestdata(f, "heap-start.pb.gz")
	raw := gunzipBytes(f, gz)
	f.Add(gz)
	f.Add(raw)
	for _, n := range []int{2, 10, 11, 64, len(gz) / 2, len(gz) - 8, len(gz) - 1} {
		f.Add(gz[:n])
	}
	for _, n := range []int{1, 2, 16, len(raw) / 3, len(raw) - 1} {
		f.Add(raw[:n])
	}
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff})
	f.Add([]byte("heap profile: 1: 16 [1: 16] @ heap/1048576\n1: 16 [1: 16] @ 0x1 0x2\n"))
	f.Add([]byte("<html></html>"))
	f.Add(handEncoded())
	// The legacy text formats profile.ParseData falls back to.
	var legacy bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&legacy, 1); err != nil {
		f.Fatal(err)
	}
	f.Add(legacy.Bytes())
	f.Add([]byte("--- contention:\ncycles/second=2000000000\n1000 10 @ 0x1 0x2\n"))
	f.Add([]byte("--- threadz 1 ---\n\n--- Thread 7eff063fd700 (name: main/25376) stack: ---\n  PC: 0x40b0e8 0x4165d1\n"))
	f.Add([]byte("goroutine profile: total 2\n1 @ 0x1 0x2\n#\t0x1\tmain.f+0x1\tmain.go:3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1 << 20
		p, decoded, err := ParseWithin(data, Limits{MaxDecompressed: limit})
		if err != nil {
			if p != nil {
				t.Fatal("profile and error both returned")
			}
			return
		}
		if err := p.CheckValid(); err != nil {
			t.Fatalf("Parse returned an invalid profile: %v", err)
		}
		// The estimate saw every sample profile.Parse decoded: its pass
		// over the input follows the decoding, or charges more.
		if min := int64(len(p.Sample)) * costSample; decoded < min {
			t.Fatalf("estimate %d for %d samples, want at least %d", decoded, len(p.Sample), min)
		}
	})
}
