package webguard

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// guarded serves Handler over a tiny mux on a real 127.0.0.1 listener:
// GET / answers "ok", POST /change answers "changed", /files/ serves dir.
func guarded(t *testing.T, dir string, opts Options) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("POST /change", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "changed") })
	mux.Handle("/files/", http.StripPrefix("/files", Files(dir)))
	srv := httptest.NewServer(Handler(mux, opts))
	t.Cleanup(srv.Close)
	return srv
}

// send sends one request to srv with the given Host and headers, as a
// browser or an attacker's script would, and returns the status, body and
// headers.
func send(t *testing.T, srv *httptest.Server, method, path, host string, headers map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

func TestHandler_Hosts(t *testing.T) {
	srv := guarded(t, t.TempDir(), Options{Hosts: []string{"Profiles.Example.com"}})
	port := srv.Listener.Addr().String()[strings.LastIndex(srv.Listener.Addr().String(), ":")+1:]
	tests := []struct {
		name, host string
		code       int
	}{
		{"the address it listens on", "", 200},
		{"localhost at its port", "localhost:" + port, 200},
		{"LOCALHOST in capitals", "LOCALHOST:" + port, 200},
		{"a host of the options, any case", "profiles.example.com", 200},
		{"a rebound name at its port", "evil.example.com:" + port, http.StatusMisdirectedRequest},
		{"a rebound name without port", "evil.example.com", http.StatusMisdirectedRequest},
		{"localhost at another port", "localhost:1", http.StatusMisdirectedRequest},
		{"127.0.0.1 at another port", "127.0.0.1:1", http.StatusMisdirectedRequest},
		{"localhost without port", "localhost", http.StatusMisdirectedRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := send(t, srv, "GET", "/", tt.host, nil)
			if code != tt.code {
				t.Fatalf("Host %q: %d %q, want %d", tt.host, code, body, tt.code)
			}
			if code != 200 && (strings.Contains(body, "ok") || !strings.Contains(body, "refused")) {
				t.Errorf("Host %q: body %q, want a refusal and not the page", tt.host, body)
			}
		})
	}
}

func TestHandler_CrossOrigin(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a"), []byte("secret"), 0o644)
	srv := guarded(t, dir, Options{Hosts: []string{"profiles.example.com"}})
	tests := []struct {
		name, method, path string
		headers            map[string]string
		code               int
	}{
		{"same-origin POST", "POST", "/change", map[string]string{"Sec-Fetch-Site": "same-origin"}, 200},
		{"POST without browser headers (curl)", "POST", "/change", nil, 200},
		{"POST from another site", "POST", "/change", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"POST from another port of this machine", "POST", "/change", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"POST with a foreign Origin only", "POST", "/change", map[string]string{"Origin": "http://evil.example.com"}, 403},
		{"navigation from another site", "GET", "/", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, 200},
		{"another site's script fetching a page", "GET", "/", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}, 403},
		{"another site framing a page", "GET", "/", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}, 403},
		{"typed in the address bar", "GET", "/", map[string]string{"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, 200},
		{"GET with a foreign Origin only", "GET", "/", map[string]string{"Origin": "http://evil.example.com"}, 403},
		{"HEAD with a foreign Origin only", "HEAD", "/", map[string]string{"Origin": "http://evil.example.com"}, 403},
		{"GET of a file with a foreign Origin only", "GET", "/files/a", map[string]string{"Origin": "http://evil.example.com"}, 403},
		{"GET with another port of this machine as Origin", "GET", "/", map[string]string{"Origin": "http://127.0.0.1:1"}, 403},
		{"GET with Origin null", "GET", "/", map[string]string{"Origin": "null"}, 403},
		{"GET with a foreign Origin that claims same-origin", "GET", "/", map[string]string{"Origin": "http://evil.example.com", "Sec-Fetch-Site": "same-origin"}, 403},
		{"GET with its own Origin", "GET", "/", map[string]string{"Origin": "http://{addr}"}, 200},
		{"POST with its own Origin", "POST", "/change", map[string]string{"Origin": "http://{addr}"}, 200},
		{"GET with a proxy's name as Origin", "GET", "/", map[string]string{"Origin": "https://Profiles.example.com"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			headers := map[string]string{}
			for k, v := range tt.headers {
				headers[k] = strings.ReplaceAll(v, "{addr}", srv.Listener.Addr().String())
			}
			code, body, _ := send(t, srv, tt.method, tt.path, "", headers)
			if code != tt.code {
				t.Fatalf("%s %s with %v: %d %q, want %d", tt.method, tt.path, tt.headers, code, body, tt.code)
			}
			if code == 403 && (strings.Contains(body, "changed") || strings.Contains(body, "secret")) {
				t.Errorf("a refused request reached the handler: %q", body)
			}
		})
	}
}

func TestHandler_HeadersOnEveryResponse(t *testing.T) {
	srv := guarded(t, t.TempDir(), Options{})
	for _, req := range []struct{ method, path, host string }{
		{"GET", "/", ""},
		{"GET", "/missing", ""},
		{"POST", "/change", ""},
		{"GET", "/", "evil.example.com"},
	} {
		_, _, h := send(t, srv, req.method, req.path, req.host, nil)
		for name, want := range map[string]string{
			"X-Content-Type-Options":  "nosniff",
			"Content-Security-Policy": ContentSecurityPolicy,
			"Referrer-Policy":         "no-referrer",
			"X-Frame-Options":         "DENY",
		} {
			if got := h.Get(name); got != want {
				t.Errorf("%s %s (Host %q): %s = %q, want %q", req.method, req.path, req.host, name, got, want)
			}
		}
	}
	for _, directive := range []string{"frame-ancestors 'none'", "script-src 'self' 'unsafe-inline'", "default-src 'self'"} {
		if !strings.Contains(ContentSecurityPolicy, directive) {
			t.Errorf("the policy lacks %q", directive)
		}
	}
}

func TestFiles(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o644)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "report.html"), []byte("<p>report</p>"), 0o644)
	os.Mkdir(filepath.Join(dir, "profiles"), 0o755)
	os.WriteFile(filepath.Join(dir, "profiles", "heap.txt"), []byte("heap"), 0o644)
	links := map[string]string{
		"to-file-outside":    filepath.Join(outside, "secret"),
		"to-dir-outside":     outside,
		"relative-outside":   "../" + filepath.Base(outside) + "/secret",
		"to-file-inside":     "profiles/heap.txt",
		"profiles/up-inside": "../report.html",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := guarded(t, dir, Options{})
	tests := []struct {
		name, path string
		code       int
		body       string
	}{
		{"a file", "/files/report.html", 200, "<p>report</p>"},
		{"a file in a folder", "/files/profiles/heap.txt", 200, "heap"},
		{"a symlink to a file inside", "/files/to-file-inside", 200, "heap"},
		{"a symlink up, still inside", "/files/profiles/up-inside", 200, "<p>report</p>"},
		{"a symlink to a file outside", "/files/to-file-outside", 404, ""},
		{"a relative symlink outside", "/files/relative-outside", 404, ""},
		{"a symlink to a directory outside", "/files/to-dir-outside/", 404, ""},
		{"a file through a symlinked directory outside", "/files/to-dir-outside/secret", 404, ""},
		{"the root: no listing", "/files/", 404, ""},
		{"a folder: no listing", "/files/profiles/", 404, ""},
		{"dot-dot", "/files/..%2f" + filepath.Base(outside) + "%2fsecret", 404, ""},
		{"a FIFO, answered at once", "/files/fifo", 404, ""},
		{"missing", "/files/nope", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, h := send(t, srv, "GET", tt.path, "", nil)
			if code != tt.code {
				t.Fatalf("GET %s: %d %q, want %d", tt.path, code, body, tt.code)
			}
			if tt.body != "" && body != tt.body {
				t.Errorf("GET %s: %q, want %q", tt.path, body, tt.body)
			}
			if strings.Contains(body, "SECRET") || strings.Contains(body, "heap.txt") {
				t.Errorf("GET %s shows what it must not: %q", tt.path, body)
			}
			if h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("GET %s: no nosniff header", tt.path)
			}
		})
	}
	if code, _, _ := send(t, srv, "DELETE", "/files/report.html", "", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE a file: %d, want 405", code)
	}
}

func TestReadFile(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o644)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a"), []byte("A"), 0o644)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "out"))
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)

	if got, err := ReadFile(dir, "a"); err != nil || string(got) != "A" {
		t.Errorf("ReadFile(a) = %q, %v", got, err)
	}
	if got, err := ReadFile(dir, "out"); err == nil {
		t.Errorf("ReadFile(out) read %q through a symlink out of the directory", got)
	}
	if _, err := ReadFile(dir, "sub"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(sub) = %v, want ErrNotRegular", err)
	}
}
