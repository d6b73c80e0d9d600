package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/testserver"
)

func TestServer_usageErrors(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "tokens")
	os.WriteFile(short, []byte("secret\n"), 0o600)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no store", []string{"server"}, "--data DIR is required"},
		{"not a store", []string{"server", "--data", dir}, "is not a heapscope store"},
		{"beyond loopback without credentials", []string{"server", "--data", dir, "--listen", "0.0.0.0:7070"},
			"listen address 0.0.0.0:7070 is not loopback: give --auth-tokens FILE or --htpasswd FILE"},
		{"a token too short", []string{"server", "--data", dir, "--auth-tokens", short}, "--auth-tokens: " + short + ":1: a token is one word of at least 32 characters"},
		{"an argument", []string{"server", "--data", dir, "extra"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantUsageError(t, heapscope(t, tt.args...), tt.want)
		})
	}
}

// serving runs a command that serves until the test ends, and returns
// the URL it says it serves on (the first http://127.0.0.1:PORT/ of its
// output).
func serving(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out testserver.Buffer
	done := make(chan int, 1)
	go func() { done <- execute(ctx, args, strings.NewReader(""), &out, &out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("%v: exit %d after Ctrl-C: %s", args, code, out.String())
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%v did not stop", args)
		}
	})
	addr := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if u := addr.FindString(out.String()); u != "" {
			return u
		}
		select {
		case code := <-done:
			t.Fatalf("%v: exit %d: %s", args, code, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("%v: no address after 30s: %s", args, out.String())
	return ""
}

// getJSON fetches url and decodes its JSON body.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, body)
	}
}

// TestServer_servesWhatWatchStored runs watch --once into a store, then
// heapscope server over it, and watch --listen, which serves the same
// API beside its /metrics.
func TestServer_servesWhatWatchStored(t *testing.T) {
	svc, err := startExample(t.Context(), "leaky")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	data := t.TempDir()
	if got := heapscope(t, "watch", svc.URL, "--data", data, "--once", "--window", "1s"); got.code != exitOK {
		t.Fatalf("watch --once: exit %d: %s", got.code, got.stderr)
	}
	var targets struct {
		Targets []struct{ Target, Health string }
	}
	check := func(base string) {
		t.Helper()
		getJSON(t, base+"api/v1/targets", &targets)
		if len(targets.Targets) != 1 || !strings.Contains(targets.Targets[0].Target, strings.TrimPrefix(svc.URL, "http://")) || targets.Targets[0].Health != "ok" {
			t.Errorf("targets %+v: want the watched example, healthy", targets.Targets)
		}
	}
	check(serving(t, "server", "--data", data, "--listen", "127.0.0.1:0"))

	base := serving(t, "watch", svc.URL, "--data", data, "--listen", "127.0.0.1:0", "--every", "1h", "--window", "1s")
	check(base)
	for path, want := range map[string]int{"metrics": 200, "healthz": 200, "findings": 200, "static/app.js": 200, "debug/pprof/": 404} {
		resp, err := http.Get(base + path)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("watch --listen /%s: %v %v, want %d (watch's own pprof only with --debug-pprof)", path, resp, err, want)
		}
		resp.Body.Close()
	}
	// Its own routes refuse a rebound name, as the API's do.
	req, _ := http.NewRequest(http.MethodGet, base+"metrics", nil)
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("watch --listen /metrics for Host evil.example: %v %v, want 421", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
}
