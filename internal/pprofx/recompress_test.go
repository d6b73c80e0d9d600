package pprofx

import (
	"bytes"
	"runtime/pprof"
	"testing"
)

func TestRecompress(t *testing.T) {
	var real bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&real, 0); err != nil {
		t.Fatal(err)
	}
	var bomb bytes.Buffer
	bomb.Write(gzipBytes(t, make([]byte, 8<<20)))
	truncated := real.Bytes()[:real.Len()/2]

	tests := []struct {
		name   string
		in     []byte
		max    int64
		shrink bool // else it comes back as it is
	}{
		{name: "a profile the runtime wrote", in: real.Bytes(), shrink: true},
		{name: "not gzip", in: []byte("heap profile: 1: 2 [3: 4] @ heap/1")},
		{name: "over the decompressed limit", in: bomb.Bytes(), max: 1 << 20},
		{name: "truncated", in: truncated},
		{name: "empty", in: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Recompress(tt.in, tt.max)
			if !tt.shrink {
				if !bytes.Equal(got, tt.in) {
					t.Errorf("Recompress changed the input: %d bytes to %d", len(tt.in), len(got))
				}
				return
			}
			if len(got) >= len(tt.in) {
				t.Errorf("Recompress: %d bytes to %d, want fewer", len(tt.in), len(got))
			}
			if !bytes.Equal(gunzipBytes(t, got), gunzipBytes(t, tt.in)) {
				t.Error("the recompressed profile decompresses to other bytes")
			}
		})
	}
}
