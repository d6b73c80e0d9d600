package tunedkv

import (
	"encoding/json"
	"testing"

	"github.com/heapscope/heapscope/examples/internal/kvtest"
)

func TestAppendJSONString(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "abc", `"abc"`},
		{"empty", "", `""`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		{"short escapes", "\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"other controls", "\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"del kept", "\x7f", "\"\x7f\""},
		{"html", "<a&b>", `"\u003ca\u0026b\u003e"`},
		{"non-ascii kept", "é日🎉", `"é日🎉"`},
		{"line separators", "\u2028\u2029", `"\u2028\u2029"`},
		{"invalid bytes", "a\xffb\xe2\x82", `"a\ufffdb\ufffd\ufffd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := appendJSONString([]byte("prefix:"), tt.in)
			if string(got) != "prefix:"+tt.want {
				t.Errorf("appendJSONString(%q) = %s, want %s", tt.in, got[len("prefix:"):], tt.want)
			}
		})
	}
}

// FuzzAppendJSONString checks appendJSONString against encoding/json, byte
// for byte.
func FuzzAppendJSONString(f *testing.F) {
	for _, tc := range kvtest.JSONCases() {
		f.Add(tc.Text)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, encoding/json gives %s", s, got, want)
		}
	})
}

func BenchmarkAppendJSONString(b *testing.B) {
	s := PreloadValue(42)
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = appendJSONString(buf[:0], s)
	}
}
