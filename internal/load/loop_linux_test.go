package load

import "testing"

// TestHTTPClient_canLoop checks which runs the closed model's event loops
// take: plain HTTP/1.1 keep-alive to one address, and nothing else.
func TestHTTPClient_canLoop(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want bool
	}{
		{name: "http", opts: Options{Targets: []Request{{URL: "http://127.0.0.1:1/"}}}, want: true},
		{name: "http, two targets, one address", opts: Options{Targets: []Request{{URL: "http://127.0.0.1:1/a"}, {URL: "http://127.0.0.1:1/{seq}", Method: "POST", Body: []byte("x")}}}, want: true},
		{name: "two addresses", opts: Options{Targets: []Request{{URL: "http://127.0.0.1:1/"}, {URL: "http://127.0.0.1:2/"}}}},
		{name: "https", opts: Options{Targets: []Request{{URL: "https://127.0.0.1:1/"}}, Protocol: ProtocolHTTP1}},
		{name: "http2", opts: Options{Targets: []Request{{URL: "http://127.0.0.1:1/"}}, Protocol: ProtocolHTTP2}},
		{name: "no keep-alive", opts: Options{Targets: []Request{{URL: "http://127.0.0.1:1/"}}, NoKeepAlive: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Connections, tt.opts.MaxRequests = 4, 1
			g, err := New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			c := newHTTPClient(&g.opts, g.targets)
			if got := c.canLoop(g.targets); got != tt.want {
				t.Errorf("canLoop = %v, want %v", got, tt.want)
			}
		})
	}
}
