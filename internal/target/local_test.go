package target

import (
	"net/url"
	"testing"
)

func TestLoopbackPort(t *testing.T) {
	tests := []struct {
		name     string
		url      string
		wantPort int
		wantOK   bool
	}{
		{name: "ipv4 loopback", url: "http://127.0.0.1:6060", wantPort: 6060, wantOK: true},
		{name: "other ipv4 loopback", url: "http://127.0.0.2:7000", wantPort: 7000, wantOK: true},
		{name: "ipv6 loopback", url: "http://[::1]:8080", wantPort: 8080, wantOK: true},
		{name: "ipv4-mapped loopback", url: "http://[::ffff:127.0.0.1]:8080", wantPort: 8080, wantOK: true},
		{name: "localhost", url: "http://localhost:9090", wantPort: 9090, wantOK: true},
		{name: "localhost in capitals", url: "http://LocalHost:9090", wantPort: 9090, wantOK: true},
		{name: "unspecified ipv4 reaches this host", url: "http://0.0.0.0:6060", wantPort: 6060, wantOK: true},
		{name: "unspecified ipv6 reaches this host", url: "http://[::]:6060", wantPort: 6060, wantOK: true},
		{name: "http default port", url: "http://localhost", wantPort: 80, wantOK: true},
		{name: "https default port", url: "https://127.0.0.1/", wantPort: 443, wantOK: true},
		{name: "http default port with path", url: "http://[::1]/svc", wantPort: 80, wantOK: true},
		{name: "public hostname", url: "http://example.com:6060"},
		{name: "public hostname default port", url: "https://example.com"},
		{name: "name that starts with localhost", url: "http://localhost.example.com:6060"},
		{name: "private ipv4", url: "http://10.0.0.1:6060"},
		{name: "lan ipv4", url: "http://192.168.1.10:6060"},
		{name: "link-local ipv6", url: "http://[fe80::1%25eth0]:6060"},
		{name: "port out of range", url: "http://127.0.0.1:99999"},
		{name: "port zero", url: "http://127.0.0.1:0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			port, ok := LoopbackPort(u)
			if ok != tc.wantOK || (ok && port != tc.wantPort) {
				t.Errorf("LoopbackPort(%s) = %d, %t; want %d, %t", tc.url, port, ok, tc.wantPort, tc.wantOK)
			}
		})
	}
}
