package view

import (
	"io/fs"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestPprofUI_writesNothing drives every route of pprof's UI, its saved
// configurations among them, with HOME, XDG_CONFIG_HOME, PPROF_TMPDIR and
// TMPDIR pointing into an empty directory: the settings routes are
// refused, and no route leaves a file there (pprof would write
// $XDG_CONFIG_HOME/pprof/settings.json).
func TestPprofUI_writesNothing(t *testing.T) {
	home := t.TempDir()
	for _, name := range []string{"HOME", "XDG_CONFIG_HOME", "PPROF_TMPDIR", "TMPDIR"} {
		t.Setenv(name, filepath.Join(home, strings.ToLower(name)))
	}
	for _, embedded := range []bool{false, true} {
		s, err := Open(heapProfile, Options{Embedded: embedded})
		if err != nil {
			t.Fatal(err)
		}
		long := "x" + strings.Repeat("y", 4000)
		tests := []struct {
			method, path string
			code         int
		}{
			{"GET", "/pprof/heap-after/saveconfig?config=mine&f=" + url.QueryEscape(long), 403},
			{"POST", "/pprof/heap-after/saveconfig?config=mine&f=" + url.QueryEscape(long), 403},
			{"GET", "/pprof/heap-after/deleteconfig?config=mine", 403},
			{"POST", "/pprof/heap-after/deleteconfig?config=mine", 403},
			{"GET", "/pprof/heap-after/flamegraph", 200},
			{"GET", "/pprof/heap-after/top", 200},
			{"GET", "/pprof/heap-after/peek?f=main", 200},
			{"GET", "/pprof/heap-after/download", 200},
		}
		for _, tt := range tests {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, localRequest(tt.method, tt.path, nil))
			if rec.Code != tt.code {
				t.Errorf("embedded=%v: %s %.60s: %d, want %d: %.200s", embedded, tt.method, tt.path, rec.Code, tt.code, rec.Body)
			}
			if tt.code == 403 && !strings.Contains(rec.Body.String(), "writes no files") {
				t.Errorf("embedded=%v: %s %.60s: body %q, want it to say why", embedded, tt.method, tt.path, rec.Body)
			}
		}
	}
	filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
		if path != home {
			t.Errorf("pprof's UI wrote %s", path)
		}
		return err
	})
}
