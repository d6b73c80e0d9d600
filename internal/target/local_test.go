package target

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	httppprof "net/http/pprof"
	"net/url"
	"strconv"
	"strings"
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

// portOf returns the port a test server listens on.
func portOf(t *testing.T, srv *httptest.Server) int {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// closedPort returns a port of 127.0.0.1 nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestLocal_FindMemStats(t *testing.T) {
	pprofA := portOf(t, newServer(t, pprofMux()))
	pprofB := portOf(t, newServer(t, pprofMux()))
	admin := http.NewServeMux()
	admin.Handle("/admin/pprof/heap", httppprof.Handler("heap"))
	adminPort := portOf(t, newServer(t, admin))
	plain := portOf(t, newServer(t, http.NotFoundHandler()))
	closed := closedPort(t)
	lowPprof := min(pprofA, pprofB)

	tests := []struct {
		name      string
		local     Local
		ports     []int
		wantPort  int    // of the pprof found; 0 for none
		wantPath  string // of the pprof found
		wantError []string
		notFound  bool
	}{
		{name: "the port that serves pprof among others", ports: []int{plain, closed, pprofA}, wantPort: pprofA, wantPath: "/debug/pprof/"},
		{name: "the lowest of two", ports: []int{max(pprofA, pprofB), lowPprof}, wantPort: lowPprof, wantPath: "/debug/pprof/"},
		{name: "another pprof path", local: Local{PprofPath: "admin/pprof"}, ports: []int{pprofA, adminPort}, wantPort: adminPort, wantPath: "/admin/pprof/"},
		{name: "an HTTP server without pprof", ports: []int{plain},
			wantError: []string{"none of the process's listening ports (" + strconv.Itoa(plain) + ")", "http://127.0.0.1:PORT/debug/pprof/heap?debug=1", "one answered 404"}, notFound: true},
		{name: "nothing that answers", ports: []int{closed, closed},
			wantError: []string{"none of the process's listening ports (" + strconv.Itoa(closed) + ", " + strconv.Itoa(closed) + ") serves"}},
		{name: "no port", wantError: []string{"none of the process's listening ports () serves"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, at, err := tt.local.FindMemStats(t.Context(), tt.ports)
			if tt.wantPort == 0 {
				var ne *NoPprofError
				if !errors.As(err, &ne) || ne.NotFound != tt.notFound || ms != nil {
					t.Fatalf("FindMemStats = %v, %q, %v; want a NoPprofError, 404 seen %v", ms, at, err, tt.notFound)
				}
				checkErr(t, err, tt.wantError...)
				// "answered 404", not "404": a port number may hold those digits.
				if !tt.notFound && strings.Contains(err.Error(), "answered 404") {
					t.Errorf("error %q speaks of a 404 none answered", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("FindMemStats: %v", err)
			}
			if want := "http://127.0.0.1:" + strconv.Itoa(tt.wantPort) + tt.wantPath; at != want {
				t.Errorf("found at %q, want %q", at, want)
			}
			if ms == nil || ms.HeapSys == 0 || ms.Sys < ms.HeapSys {
				t.Errorf("MemStats %+v: not this process's", ms)
			}
		})
	}

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, _, err := Local{}.FindMemStats(ctx, []int{pprofA})
		var ne *NoPprofError
		if !errors.As(err, &ne) {
			t.Errorf("FindMemStats after cancel: %v, want a NoPprofError", err)
		}
	})
}

func TestClient_MemStats(t *testing.T) {
	srv := newServer(t, pprofMux())
	c := newClient(t, Options{BaseURL: srv.URL})
	ms, err := c.MemStats(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	if ms.HeapSys == 0 || ms.Sys < ms.HeapSys+ms.StackInuse {
		t.Errorf("MemStats %+v: Sys is not the sum of the classes", ms)
	}

	junk := http.NewServeMux()
	junk.HandleFunc("/debug/pprof/heap", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("heap profile: 0: 0 [0: 0] @ heap/1\n"))
	})
	c = newClient(t, Options{BaseURL: "http://user:secret@" + strings.TrimPrefix(newServer(t, junk).URL, "http://")})
	_, err = c.MemStats(t.Context(), false)
	checkErr(t, err, "fetch MemStats: read http://", "/debug/pprof/heap?debug=1", "no runtime.MemStats section")
	if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "user@") {
		t.Errorf("error %q shows the user information", err)
	}
	if got := c.PprofURL(); strings.Contains(got, "user") || !strings.HasSuffix(got, "/debug/pprof/") {
		t.Errorf("PprofURL() = %q, want the pprof URL without user information", got)
	}
}
