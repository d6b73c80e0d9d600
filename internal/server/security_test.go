package server_test

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/heapscope/heapscope/internal/server"
)

const testToken = "0123456789abcdef0123456789abcdef"

// credentials writes a tokens file and an htpasswd file (user ada,
// password lovelace) and loads both.
func credentials(t *testing.T) *server.Auth {
	t.Helper()
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("lovelace"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	tokens, htpasswd := filepath.Join(dir, "tokens"), filepath.Join(dir, "htpasswd")
	os.WriteFile(tokens, []byte("# the CI's token\n"+testToken+"\n"), 0o600)
	os.WriteFile(htpasswd, []byte("ada:"+string(hash)+"\n"), 0o600)
	var a server.Auth
	if err := a.LoadTokens(tokens); err != nil {
		t.Fatal(err)
	}
	if err := a.LoadHtpasswd(htpasswd); err != nil {
		t.Fatal(err)
	}
	return &a
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func TestAuth_requiredOfEveryRequest(t *testing.T) {
	s := newServer(t, server.Options{Auth: credentials(t)})
	tests := []struct {
		name, authorization string
		status              int
	}{
		{"none", "", 401},
		{"the token", "Bearer " + testToken, 200},
		{"the token, the scheme in lower case", "bearer " + testToken, 200},
		{"another token", "Bearer " + strings.Repeat("f", 32), 401},
		{"a prefix of the token", "Bearer " + testToken[:31], 401},
		{"the user's password", basic("ada", "lovelace"), 200},
		{"a wrong password", basic("ada", "babbage"), 401},
		{"an unknown user", basic("charles", "lovelace"), 401},
		{"the token as a password", basic("ada", testToken), 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/api/v1/targets", "/api/v1/problems", "/api/v1/openapi.json", "/api/v1/nothing"} {
				var hdr []string
				if tt.authorization != "" {
					hdr = []string{"Authorization", tt.authorization}
				}
				resp := get(t, s, path, hdr...)
				want := tt.status
				if want == 200 && path == "/api/v1/nothing" {
					want = 404
				}
				if resp.StatusCode != want {
					t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
				}
				if resp.StatusCode == 401 && len(resp.Header.Values("WWW-Authenticate")) != 2 {
					t.Errorf("%s: 401 with challenges %q, want Basic and Bearer", path, resp.Header.Values("WWW-Authenticate"))
				}
				if c := resp.Header.Values("Set-Cookie"); len(c) > 0 {
					t.Errorf("%s: sets cookies %q", path, c)
				}
			}
		})
	}
}

func TestAuth_badFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		return p
	}
	md5 := write("md5", "ada:$apr1$x$y\n")
	short := write("short", "secret\n")
	empty := write("empty", "# nothing\n\n")
	twice := write("twice", "ada:$2y$04$abcdefghijklmnopqrstuu5Kzp2zS8e9Pq8n3ET0Hq2Y3ZzKCkV8i\nada:$2y$04$abcdefghijklmnopqrstuu5Kzp2zS8e9Pq8n3ET0Hq2Y3ZzKCkV8i\n")
	tests := []struct {
		name string
		load func(*server.Auth) error
		want string
	}{
		{"htpasswd not bcrypt", func(a *server.Auth) error { return a.LoadHtpasswd(md5) }, md5 + ":1: user ada: not a bcrypt hash (create it with htpasswd -B)"},
		{"user twice", func(a *server.Auth) error { return a.LoadHtpasswd(twice) }, twice + ":2: user ada is given twice"},
		{"short token", func(a *server.Auth) error { return a.LoadTokens(short) }, short + ":1: a token is one word of at least 32 characters"},
		{"no credential", func(a *server.Auth) error { return a.LoadTokens(empty) }, empty + " holds no credential"},
		{"missing file", func(a *server.Auth) error { return a.LoadTokens(filepath.Join(dir, "none")) }, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a server.Auth
			if err := tt.load(&a); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestCheckListen(t *testing.T) {
	auth := credentials(t)
	tests := []struct {
		addr string
		auth *server.Auth
		ok   bool
	}{
		{"127.0.0.1:7070", nil, true},
		{"localhost:7070", nil, true},
		{"[::1]:7070", nil, true},
		{"0.0.0.0:7070", nil, false},
		{":7070", nil, false},
		{"10.0.0.5:7070", &server.Auth{}, false},
		{"0.0.0.0:7070", auth, true},
		{"7070", nil, false},
	}
	for _, tt := range tests {
		err := server.CheckListen(tt.addr, tt.auth)
		if (err == nil) != tt.ok {
			t.Errorf("server.CheckListen(%q) = %v, want ok=%v", tt.addr, err, tt.ok)
		}
		if err != nil && tt.ok == false && strings.Contains(tt.addr, ":") && tt.addr != "7070" && !strings.Contains(err.Error(), "--auth-tokens FILE or --htpasswd FILE") {
			t.Errorf("server.CheckListen(%q) = %v: want it to say how to give credentials", tt.addr, err)
		}
	}
}

func TestHeaders_everyResponse(t *testing.T) {
	s := newServer(t, server.Options{Loopback: true})
	for _, path := range []string{"/api/v1/targets", "/api/v1/series", "/api/v1/nothing"} {
		r := httpRequest(path, "127.0.0.1:7070")
		w := &recorder{header: http.Header{}}
		s.ServeHTTP(w, r)
		h := w.header
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q: want scripts from files of the server only, no framing", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v: want nosniff and no referrer", path, h)
		}
	}
	// A rebound name is refused on loopback.
	r := httpRequest("/api/v1/targets", "evil.example:7070")
	w := &recorder{header: http.Header{}}
	s.ServeHTTP(w, r)
	if w.status != http.StatusMisdirectedRequest {
		t.Errorf("Host evil.example: %d, want 421", w.status)
	}
}

// httpRequest is a GET of path that reached 127.0.0.1:7070 naming host.
func httpRequest(path, host string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "http://"+host+path, nil)
	addr, _ := net.ResolveTCPAddr("tcp", "127.0.0.1:7070")
	return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(addr)))
}

// recorder keeps a response's status and headers.
type recorder struct {
	header http.Header
	status int
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = 200
	}
	return len(b), nil
}
func (r *recorder) WriteHeader(status int) { r.status = status }
