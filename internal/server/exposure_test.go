package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	httppprof "net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/server"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/testserver"
)

// secretTarget is what watch's detailed /healthz names: a target and its
// error, which a caller without credentials must not read.
const secretTarget = "http://10.1.2.3:6060/debug/pprof/"

// ownRoutes stands for watch's own routes: /metrics, a detailed /healthz
// whose status is healthy's, and its /debug/pprof/.
func ownRoutes(healthy *bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "heapscope_watch_captures_total 1\n")
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		status := "ok"
		if !*healthy {
			status = "degraded"
		}
		json.NewEncoder(w).Encode(map[string]any{"status": status,
			"targets": []map[string]string{{"target": secretTarget, "last_error": "dial tcp 10.1.2.3:6060: refused"}}})
	})
	mux.HandleFunc("GET /debug/pprof/", httppprof.Index)
	return mux
}

// exposed serves server.Handler of cfg, given the watch routes and an
// empty store, on a real 127.0.0.1 listener; cfg.Listen only says which
// address the server believes it listens on.
func exposed(t *testing.T, cfg server.Config, healthy *bool) *httptest.Server {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg.Own = ownRoutes(healthy)
	h, err := server.Handler(cfg, st)
	if err != nil {
		t.Fatalf("server.Handler: %v", err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// tokensFile writes a tokens file holding testToken.
func tokensFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// fetch GETs path of srv with the given headers, naming the Host a
// remote client would.
func fetch(t *testing.T, srv *httptest.Server, path string, headers ...string) (int, string) {
	t.Helper()
	return testserver.Fetch(t, srv.Client(), srv.URL+path, headers...)
}

func TestHandler_offLoopbackNeedsCredentials(t *testing.T) {
	healthy := true
	for _, debug := range []bool{false, true} {
		srv := exposed(t, server.Config{Listen: "0.0.0.0:7071", TokensFile: tokensFile(t), DebugPprof: debug}, &healthy)
		bearer := []string{"Authorization", "Bearer " + testToken}
		pprofWith := http.StatusNotFound
		if debug {
			pprofWith = 200
		}
		tests := []struct {
			name, path string
			headers    []string
			code       int
		}{
			{"pprof without credential", "/debug/pprof/", nil, 401},
			{"pprof's heap without credential", "/debug/pprof/heap", nil, 401},
			{"pprof with a wrong token", "/debug/pprof/", []string{"Authorization", "Bearer " + strings.Repeat("0", 32)}, 401},
			{"pprof with the token", "/debug/pprof/", bearer, pprofWith},
			{"metrics without credential", "/metrics", nil, 401},
			{"metrics with the token", "/metrics", bearer, 200},
			{"API without credential", "/api/v1/targets", nil, 401},
			{"pages without credential", "/", nil, 401},
			{"static files without credential", "/static/app.js", nil, 401},
			{"API with the token", "/api/v1/targets", bearer, 200},
		}
		for _, tt := range tests {
			code, body := fetch(t, srv, tt.path, tt.headers...)
			if code != tt.code {
				t.Errorf("debug-pprof %v: %s: GET %s: %d, want %d: %.200s", debug, tt.name, tt.path, code, tt.code, body)
			}
			if code == 401 && (strings.Contains(body, "goroutine") || strings.Contains(body, "heapscope_watch")) {
				t.Errorf("debug-pprof %v: %s: a refusal served the route: %.200s", debug, tt.name, body)
			}
		}
	}
}

func TestHandler_healthzBareWithoutCredential(t *testing.T) {
	healthy := true
	srv := exposed(t, server.Config{Listen: "0.0.0.0:7071", TokensFile: tokensFile(t)}, &healthy)
	tests := []struct {
		name    string
		healthy bool
		headers []string
		code    int
		body    string
	}{
		{"healthy, no credential", true, nil, 200, `{"status":"ok"}` + "\n"},
		{"degraded, no credential", false, nil, 503, `{"status":"not ok"}` + "\n"},
		{"healthy, a wrong token", true, []string{"Authorization", "Bearer " + strings.Repeat("0", 32)}, 200, `{"status":"ok"}` + "\n"},
		{"healthy, the token", true, []string{"Authorization", "Bearer " + testToken}, 200, secretTarget},
		{"degraded, the token", false, []string{"Authorization", "Bearer " + testToken}, 200, "degraded"},
	}
	for _, tt := range tests {
		healthy = tt.healthy
		code, body := fetch(t, srv, "/healthz", tt.headers...)
		if code != tt.code || !strings.Contains(body, tt.body) {
			t.Errorf("%s: /healthz %d %q, want %d with %q", tt.name, code, body, tt.code, tt.body)
		}
		if len(tt.headers) == 0 && body != tt.body {
			t.Errorf("%s: /healthz says %q, want only %q", tt.name, body, tt.body)
		}
	}
}

func TestHandler_loopbackWithoutCredentials(t *testing.T) {
	healthy := true
	srv := exposed(t, server.Config{Listen: "127.0.0.1:7071"}, &healthy)
	for path, want := range map[string]int{"/metrics": 200, "/api/v1/targets": 200, "/debug/pprof/": 404} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s on loopback: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func TestHandler_refusesOffLoopbackWithoutCredentials(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	healthy := true
	for _, addr := range []string{"0.0.0.0:7071", ":7071", "10.0.0.5:7071"} {
		_, err := server.Handler(server.Config{Listen: addr, Own: ownRoutes(&healthy), DebugPprof: true}, st)
		if err == nil || !strings.Contains(err.Error(), "--auth-tokens FILE or --htpasswd FILE") {
			t.Errorf("server.Handler at %s without credentials: %v, want a refusal that says how to give them", addr, err)
		}
	}
}

func TestHandler_foreignOriginRefused(t *testing.T) {
	healthy := true
	srv := exposed(t, server.Config{Listen: "0.0.0.0:7071", TokensFile: tokensFile(t), DebugPprof: true}, &healthy)
	bearer := "Bearer " + testToken
	for _, path := range []string{"/healthz", "/metrics", "/debug/pprof/", "/api/v1/targets", "/", "/static/app.js", "/findings"} {
		for _, origin := range []string{"http://evil.example", "null", "http://heapscope.example:1"} {
			code, body := fetch(t, srv, path, "Authorization", bearer, "Origin", origin)
			if code != http.StatusForbidden {
				t.Errorf("GET %s with Origin %s: %d, want 403: %.200s", path, origin, code, body)
			}
		}
		if code, body := fetch(t, srv, path, "Authorization", bearer, "Origin", "http://heapscope.example:7071"); code == http.StatusForbidden {
			t.Errorf("GET %s with its own Origin: 403: %.200s", path, body)
		}
	}
}
