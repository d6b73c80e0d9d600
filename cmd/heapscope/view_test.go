package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/testserver"
)

// viewProfile is a heap profile written by a real runtime.
const viewProfile = "../../internal/flame/testdata/heap-after.pb.gz"

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestRunView_ServesUntilInterrupted(t *testing.T) {
	tests := []struct {
		name        string
		open        bool
		browseErr   error
		wantOpened  bool
		wantWarning string
	}{
		{name: "without --open"},
		{name: "with --open", open: true, wantOpened: true},
		{name: "browser fails", open: true, browseErr: errors.New("xdg-open: not found"), wantOpened: true, wantWarning: "warning: open a browser: xdg-open: not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var stdout, stderr testserver.Buffer
			ready := make(chan string, 1)
			var opened string
			o := &viewOptions{addr: defaultViewAddr, open: tt.open,
				browse: func(url string) error { opened = url; return tt.browseErr },
				ready:  func(url string) { ready <- url },
			}
			done := make(chan error, 1)
			go func() { done <- runView(ctx, &env{stdout: &stdout, stderr: &stderr}, viewProfile, o) }()
			var url string
			select {
			case url = <-ready:
			case err := <-done:
				t.Fatalf("view ended before serving: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("view did not start serving")
			}
			if !strings.HasPrefix(url, "http://127.0.0.1:") || strings.HasSuffix(url, ":0/") {
				t.Errorf("url %q, want 127.0.0.1 with the port picked", url)
			}
			if code, body := httpGet(t, url); code != 200 || !strings.Contains(body, `href="pprof/heap-after/"`) {
				t.Errorf("index: %d, want 200 with a link to pprof's UI", code)
			}
			if code, body := httpGet(t, url+"pprof/heap-after/top"); code != 200 || !strings.Contains(body, "inuse_space") {
				t.Errorf("pprof top: %d", code)
			}
			if (opened == url) != tt.wantOpened {
				t.Errorf("browser opened %q, want it opened: %v", opened, tt.wantOpened)
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("view after Ctrl-C: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("view did not stop")
			}
			if out := stdout.String(); !strings.Contains(out, "serving on "+url) || !strings.HasSuffix(out, "stopped\n") {
				t.Errorf("stdout %q, want the URL and stopped", out)
			}
			if !strings.Contains(stderr.String(), tt.wantWarning) {
				t.Errorf("stderr %q, want %q", stderr.String(), tt.wantWarning)
			}
			if _, err := http.Get(url); err == nil {
				t.Error("the server still answers after Ctrl-C")
			}
		})
	}
}

func TestView_BadInput(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pb.gz")
	if err := os.WriteFile(garbage, []byte("not a profile"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no argument", []string{"view"}, "view takes RUN_DIR or PROFILE"},
		{"all interfaces", []string{"view", viewProfile, "--addr", "0.0.0.0:0"}, "serves on 127.0.0.1 only"},
		{"no host", []string{"view", viewProfile, "--addr", ":8080"}, "serves on 127.0.0.1 only"},
		{"not an address", []string{"view", viewProfile, "--addr", "8080"}, "want 127.0.0.1:PORT"},
		{"not a profile", []string{"view", garbage}, "not a pprof profile"},
		{"not a run", []string{"view", dir}, "not a (finished) heapscope run"},
		{"missing", []string{"view", filepath.Join(dir, "nope")}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := heapscope(t, tt.args...)
			if got.code != exitUsage {
				t.Errorf("exit %d, want %d", got.code, exitUsage)
			}
			if !strings.Contains(got.stderr, tt.want) || strings.Count(strings.TrimSpace(got.stderr), "\n") > 0 {
				t.Errorf("stderr %q, want one line with %q", got.stderr, tt.want)
			}
		})
	}
}
