package pprofx

import "testing"

func TestPackagePath(t *testing.T) {
	tests := []struct{ name, function, want string }{
		{"method", "github.com/heapscope/heapscope/examples/leakycache.(*Worker).Process", "github.com/heapscope/heapscope/examples/leakycache"},
		{"closure", "net/http.(*conn).serve.func1", "net/http"},
		{"standard library", "runtime.mallocgc", "runtime"},
		{"command", "main.main", "main"},
		{"dotted last element", "gopkg.in/yaml%2ev3.(*decoder).unmarshal", "gopkg.in/yaml.v3"},
		{"generic with a path in its type arguments", "example.com/m/lru.(*Cache[go.shape.string,example.com/m/item.T]).Add", "example.com/m/lru"},
		{"no package", "0x4a1b2c", "0x4a1b2c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PackagePath(tt.function); got != tt.want {
				t.Errorf("PackagePath(%q) = %q, want %q", tt.function, got, tt.want)
			}
		})
	}
}
