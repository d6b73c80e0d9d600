package target

import (
	"bytes"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
)

// endless is a reader that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

func TestReadBody(t *testing.T) {
	body := bytes.Repeat([]byte("profile"), 100<<10)
	tests := []struct {
		name  string
		r     io.Reader
		size  int64 // Content-Length, -1 when unknown
		limit int64
		want  int // bytes read
	}{
		{name: "length known", r: bytes.NewReader(body), size: int64(len(body)), limit: 1 << 20, want: len(body)},
		{name: "length unknown", r: bytes.NewReader(body), size: -1, limit: 1 << 20, want: len(body)},
		{name: "a byte at a time", r: iotest.OneByteReader(bytes.NewReader(body[:1000])), size: -1, limit: 1 << 20, want: 1000},
		{name: "empty", r: bytes.NewReader(nil), size: 0, limit: 1 << 20, want: 0},
		{name: "exactly the limit", r: bytes.NewReader(body), size: -1, limit: int64(len(body)), want: len(body)},
		{name: "over the limit", r: bytes.NewReader(body), size: -1, limit: 1000, want: 1001},
		{name: "never ends", r: endless{}, size: -1, limit: 1 << 20, want: 1<<20 + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readBody(tt.r, tt.size, tt.limit)
			if err != nil {
				t.Fatalf("readBody: %v", err)
			}
			if len(got) != tt.want {
				t.Fatalf("read %d bytes, want %d", len(got), tt.want)
			}
			if tt.want <= len(body) && !bytes.Equal(got, body[:tt.want]) {
				t.Error("the bytes read differ from the body")
			}
			if got == nil {
				t.Error("nil body")
			}
		})
	}
}

func TestReadBody_EndlessCostsUnderTwiceTheLimit(t *testing.T) {
	const limit = 16 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := readBody(endless{}, -1, limit)
	runtime.ReadMemStats(&after)
	if err != nil || len(got) != limit+1 {
		t.Fatalf("read %d bytes, %v: want the limit and one", len(got), err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 2*limit+1<<20 {
		t.Errorf("reading allocated %d bytes, more than twice the limit of %d", allocated, limit)
	}
}
