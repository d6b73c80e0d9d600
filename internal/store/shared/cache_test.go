package shared

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCache_walksOnlyOverItsBound checks that the cache counts the runs
// added without walking itself, and that past its bound it removes the
// runs read least recently down to nine tenths of it, in one walk.
func TestCache_walksOnlyOverItsBound(t *testing.T) {
	const runBytes = 1000
	c, err := openCache(t.TempDir(), 10*runBytes)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	origin := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	add := func(i int) string {
		t.Helper()
		dir := filepath.Join(src, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "result.json.gz"), []byte(strings.Repeat("x", runBytes)), 0o644); err != nil {
			t.Fatal(err)
		}
		// Read in the order added: the oldest is evicted first.
		at := origin.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(dir, at, at); err != nil {
			t.Fatal(err)
		}
		path := fmt.Sprintf("runs/svc/%04d", i)
		c.adopt(dir, path, runBytes)
		return filepath.Join(c.dir, filepath.FromSlash(path))
	}
	cached := func(dir string) bool {
		_, err := os.Stat(dir)
		return err == nil
	}
	var dirs []string
	for i := range 10 {
		dirs = append(dirs, add(i))
	}
	if got := c.walks.Load(); got != 1 {
		t.Errorf("%d walks of the cache after 10 runs within its bound, want 1 (at open)", got)
	}
	for _, d := range dirs {
		if !cached(d) {
			t.Errorf("%s was evicted from a cache within its bound", d)
		}
	}
	// The eleventh passes the bound: one walk evicts the two oldest, down
	// to 9 runs.
	dirs = append(dirs, add(10))
	if got := c.walks.Load(); got != 2 {
		t.Errorf("%d walks after the bound was passed, want 2", got)
	}
	for i, d := range dirs {
		if want := i >= 2; cached(d) != want {
			t.Errorf("run %d cached: %v, want %v", i, cached(d), want)
		}
	}
	if c.size != 9*runBytes {
		t.Errorf("the cache counts %d bytes, holds %d", c.size, 9*runBytes)
	}
	// The tenth fits again without a walk.
	add(11)
	if got := c.walks.Load(); got != 2 {
		t.Errorf("%d walks after a run that fits, want still 2", got)
	}
}
