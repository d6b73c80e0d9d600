package shared

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heapscope/heapscope/internal/store"
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

// testCache opens a cache over a fresh directory, closed when the test
// ends.
func testCache(t *testing.T, limit int64) *cache {
	t.Helper()
	c, err := openCache(t.TempDir(), limit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	return c
}

// writeRun writes a whole run into dir: a profile, then its entry.json.
// Downloads call it on their own goroutine: it returns its error rather
// than end the test.
func writeRun(dir string, profile string) error {
	if err := os.MkdirAll(filepath.Join(dir, "profiles"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "profiles", "heap.pb.gz"), []byte(profile), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, store.EntryFile), []byte("{}\n"), 0o644)
}

// blockedFetch is a download that waits for release (or its context's
// end) before it writes the run, and counts how often it is called.
type blockedFetch struct {
	release  chan struct{}
	calls    atomic.Int64
	deadline time.Time
}

func newBlockedFetch() *blockedFetch {
	return &blockedFetch{release: make(chan struct{})}
}

func (f *blockedFetch) fetch(ctx context.Context, dir string) error {
	f.calls.Add(1)
	f.deadline, _ = ctx.Deadline()
	select {
	case <-f.release:
	case <-ctx.Done():
		return fmt.Errorf("download: %w", ctx.Err())
	}
	return writeRun(dir, "heap")
}

// TestCache_getOutlivesItsCallers checks that the download is no one
// caller's: a caller that gives up fails alone, the others get the run,
// and the run lands in the cache after every caller has left.
func TestCache_getOutlivesItsCallers(t *testing.T) {
	tests := []struct {
		name string
		// stay says which callers wait to the end; the others give up
		// while the download is under way.
		stay []bool
	}{
		{"the first caller gives up, the second gets the run", []bool{false, true}},
		{"the second caller gives up, the first gets the run", []bool{true, false}},
		{"every caller gives up", []bool{false, false}},
		{"one caller stays", []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := testCache(t, 1<<20)
				f := newBlockedFetch()
				start := time.Now()
				type result struct {
					dir string
					err error
				}
				results := make([]result, len(tt.stay))
				var cancels []context.CancelFunc
				for i := range tt.stay {
					ctx, cancel := context.WithCancel(t.Context())
					cancels = append(cancels, cancel)
					go func() { results[i].dir, results[i].err = c.get(ctx, "runs/svc/a", f.fetch) }()
					synctest.Wait()
				}
				for i, stay := range tt.stay {
					if !stay {
						cancels[i]()
					}
				}
				synctest.Wait()
				close(f.release)
				synctest.Wait()
				want := filepath.Join(c.dir, "runs", "svc", "a")
				for i, stay := range tt.stay {
					r := results[i]
					switch {
					case stay && (r.err != nil || r.dir != want):
						t.Errorf("caller %d, who waited: %q, %v; want %s", i, r.dir, r.err, want)
					case !stay && !errors.Is(r.err, context.Canceled):
						t.Errorf("caller %d, who gave up: %q, %v; want its context's error", i, r.dir, r.err)
					}
				}
				if n := f.calls.Load(); n != 1 {
					t.Errorf("%d downloads, want 1", n)
				}
				if !f.deadline.Equal(start.Add(downloadTimeout)) {
					t.Errorf("the download's deadline is %v, want %v after it started", f.deadline.Sub(start), downloadTimeout)
				}
				// The run is in the cache: the next reader does not download it.
				dir, err := c.get(t.Context(), "runs/svc/a", func(context.Context, string) error {
					return errors.New("downloaded again")
				})
				if err != nil || dir != want {
					t.Errorf("after the download: %q, %v; want %s from the cache", dir, err, want)
				}
				for _, cancel := range cancels {
					cancel()
				}
			})
		})
	}
}

// TestCache_closeEndsDownloads checks that close ends the downloads in
// flight and waits for them, and that none starts after it.
func TestCache_closeEndsDownloads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testCache(t, 1<<20)
		f := newBlockedFetch()
		var err error
		go func() { _, err = c.get(t.Context(), "runs/svc/a", f.fetch) }()
		synctest.Wait()
		c.close()
		synctest.Wait()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a download in flight at close: %v, want context.Canceled", err)
		}
		if _, err := c.get(t.Context(), "runs/svc/b", f.fetch); err == nil {
			t.Error("a download started after close")
		}
		if n := f.calls.Load(); n != 1 {
			t.Errorf("%d downloads, want 1", n)
		}
	})
}

// TestCache_fillKeepsAWholeCopy checks how a download is placed when the
// run's directory is already there: a whole copy another process placed
// meanwhile stays (it may be reading it) and the download goes; what a
// crash left, without entry.json, is replaced.
func TestCache_fillKeepsAWholeCopy(t *testing.T) {
	tests := []struct {
		name string
		// before is there when the download starts, during is placed
		// while it runs (by another process): "whole", "partial" (no
		// entry.json), "empty" or "" (nothing).
		before, during string
		want           string // whose profile the cache serves
	}{
		{"nothing there", "", "", "ours"},
		{"a whole copy placed meanwhile stays", "", "whole", "theirs"},
		{"a partial leftover is replaced", "partial", "", "ours"},
		{"an empty leftover is replaced", "empty", "", "ours"},
		{"a partial leftover, then a whole copy placed meanwhile", "partial", "whole", "theirs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testCache(t, 1<<20)
			dir := filepath.Join(c.dir, "runs", "svc", "a")
			other := t.TempDir()
			place := func(what string) error {
				if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
					return err
				}
				switch what {
				case "whole":
					// Another process's download, renamed into place
					// over what a crash left, and last read a while ago.
					if err := writeRun(filepath.Join(other, "a"), "theirs"); err != nil {
						return err
					}
					old := time.Now().Add(-time.Hour)
					if err := os.Chtimes(filepath.Join(other, "a"), old, old); err != nil {
						return err
					}
					os.RemoveAll(dir)
					return os.Rename(filepath.Join(other, "a"), dir)
				case "partial":
					if err := writeRun(dir, "leftover"); err != nil {
						return err
					}
					return os.Remove(filepath.Join(dir, store.EntryFile))
				case "empty":
					return os.Mkdir(dir, 0o755)
				}
				return nil
			}
			if err := place(tt.before); err != nil {
				t.Fatal(err)
			}
			got, err := c.get(t.Context(), "runs/svc/a", func(_ context.Context, tmp string) error {
				if err := writeRun(tmp, "ours"); err != nil {
					return err
				}
				return place(tt.during)
			})
			if err != nil || got != dir {
				t.Fatalf("get: %q, %v; want %s", got, err, dir)
			}
			if _, err := os.Stat(filepath.Join(dir, store.EntryFile)); err != nil {
				t.Errorf("the run served has no %s: %v", store.EntryFile, err)
			}
			if profile, _ := os.ReadFile(filepath.Join(dir, "profiles", "heap.pb.gz")); string(profile) != tt.want {
				t.Errorf("the run served holds %q's profile, want %q's", profile, tt.want)
			}
			if des, _ := os.ReadDir(filepath.Join(c.dir, store.TempDir)); len(des) != 0 {
				t.Errorf(".tmp holds %d entries after the download, want none", len(des))
			}
			if info, err := os.Stat(dir); err != nil || time.Since(info.ModTime()) > time.Minute {
				t.Errorf("the run served is not marked read now: %v", err)
			}
		})
	}
}

// addRun adopts into c a run of runBytes at runs/svc/<name>, read age
// ago, and returns its directory in the cache.
func addRun(t *testing.T, c *cache, name string, age time.Duration) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, store.EntryFile), []byte(strings.Repeat("x", runBytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-age)
	if err := os.Chtimes(src, at, at); err != nil {
		t.Fatal(err)
	}
	c.adopt(src, "runs/svc/"+name, runBytes)
	return filepath.Join(c.dir, "runs", "svc", name)
}

// runBytes is the size of addRun's runs.
const runBytes = 1000

// TestCache_evictSparesRunsReadWithinGrace checks that eviction never
// removes a run read within the grace period, even when that leaves the
// cache above its bound.
func TestCache_evictSparesRunsReadWithinGrace(t *testing.T) {
	const minute = time.Minute
	tests := []struct {
		name  string
		grace time.Duration
		// ages are how long ago runs 0…9 were read; get lists those read
		// through the cache since.
		ages []time.Duration
		get  []int
		// The eleventh run passes the bound (ten runs): want are the runs
		// that remain of the first ten.
		want []int
	}{
		{
			name:  "no grace: the two read least recently go",
			grace: 0,
			ages:  []time.Duration{10 * minute, 9 * minute, 8 * minute, 7 * minute, 6 * minute, 5 * minute, 4 * minute, 3 * minute, 2 * minute, minute},
			want:  []int{2, 3, 4, 5, 6, 7, 8, 9},
		},
		{
			name:  "every run read within grace: none goes, the cache stays above its bound",
			grace: 15 * minute,
			ages:  []time.Duration{10 * minute, 9 * minute, 8 * minute, 7 * minute, 6 * minute, 5 * minute, 4 * minute, 3 * minute, 2 * minute, minute},
			want:  []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
		},
		{
			name:  "one run read before grace: it alone goes",
			grace: 15 * minute,
			ages:  []time.Duration{time.Hour, 9 * minute, 8 * minute, 7 * minute, 6 * minute, 5 * minute, 4 * minute, 3 * minute, 2 * minute, minute},
			want:  []int{1, 2, 3, 4, 5, 6, 7, 8, 9},
		},
		{
			name:  "half read before grace: the two read least recently go",
			grace: 15 * minute,
			ages:  []time.Duration{5 * time.Hour, 4 * time.Hour, 3 * time.Hour, 2 * time.Hour, time.Hour, 5 * minute, 4 * minute, 3 * minute, 2 * minute, minute},
			want:  []int{2, 3, 4, 5, 6, 7, 8, 9},
		},
		{
			name:  "a merge reads nine of ten old runs: only the tenth goes",
			grace: 15 * minute,
			ages:  []time.Duration{10 * time.Hour, 9 * time.Hour, 8 * time.Hour, 7 * time.Hour, 6 * time.Hour, 5 * time.Hour, 4 * time.Hour, 3 * time.Hour, 2 * time.Hour, time.Hour},
			get:   []int{0, 1, 2, 3, 4, 6, 7, 8, 9},
			want:  []int{0, 1, 2, 3, 4, 6, 7, 8, 9},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testCache(t, 10*runBytes)
			c.grace = tt.grace
			var dirs []string
			for i, age := range tt.ages {
				dirs = append(dirs, addRun(t, c, fmt.Sprint(i), age))
			}
			for _, i := range tt.get {
				if _, err := c.get(t.Context(), "runs/svc/"+fmt.Sprint(i), func(context.Context, string) error {
					return errors.New("downloaded a cached run")
				}); err != nil {
					t.Fatal(err)
				}
			}
			if eleventh := addRun(t, c, "10", 0); !cached(eleventh) {
				t.Error("the run just added was evicted")
			}
			var got []int
			for i, d := range dirs {
				if cached(d) {
					got = append(got, i)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("runs left %v, want %v", got, tt.want)
			}
			if n := dirBytes(c.dir); c.size != n {
				t.Errorf("the cache counts %d bytes, holds %d", c.size, n)
			}
		})
	}
}

// cached says whether a run's directory is in the cache.
func cached(dir string) bool {
	_, err := os.Stat(dir)
	return err == nil
}

// TestCache_evictWaitsOutGrace checks that when the runs read within
// grace keep the cache above its bound, runs added meanwhile cost no walk
// of the cache until those runs age past grace, and are evicted then.
func TestCache_evictWaitsOutGrace(t *testing.T) {
	c := testCache(t, 10*runBytes)
	c.grace = 10 * time.Minute
	var dirs []string
	for i := range 11 {
		dirs = append(dirs, addRun(t, c, fmt.Sprint(i), time.Minute))
	}
	if got := c.walks.Load(); got != 2 {
		t.Fatalf("%d walks after passing the bound, want 2 (at open, then the eviction)", got)
	}
	dirs = append(dirs, addRun(t, c, "11", 0))
	if got := c.walks.Load(); got != 2 {
		t.Errorf("%d walks after a run added within grace of all the others, want still 2", got)
	}
	for i, d := range dirs {
		if !cached(d) {
			t.Errorf("run %d, read within grace, was evicted", i)
		}
	}
	// Grace has passed for the first twelve.
	c.now = func() time.Time { return time.Now().Add(time.Hour) }
	dirs = append(dirs, addRun(t, c, "12", 0))
	if got := c.walks.Load(); got != 3 {
		t.Errorf("%d walks after grace has passed, want 3", got)
	}
	var left []int
	for i, d := range dirs {
		if cached(d) {
			left = append(left, i)
		}
	}
	if want := "[4 5 6 7 8 9 10 11 12]"; fmt.Sprint(left) != want {
		t.Errorf("runs left %v, want %s", left, want)
	}
}

// TestCache_evictNeverShowsHalfARun checks that a run being evicted is
// never in view half removed: whenever its entry.json is there, so is
// every other file of it.
func TestCache_evictNeverShowsHalfARun(t *testing.T) {
	const files = 400
	for round := range 2 {
		c := testCache(t, 2*files*10)
		c.grace = 0
		// The run evicted: entry.json, and files spread over directories
		// listed before and after it.
		src := filepath.Join(t.TempDir(), "old")
		for i := range files {
			name := filepath.Join(src, fmt.Sprintf("d%d", i%8), fmt.Sprintf("f%03d", i))
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, []byte("0123456789"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(src, store.EntryFile), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		os.Chtimes(src, old, old)
		c.adopt(src, "runs/svc/old", files*10)
		dir := filepath.Join(c.dir, "runs", "svc", "old")

		stop := make(chan struct{})
		half := make(chan string, 1)
		go func() {
			defer close(half)
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Counted between two sightings of entry.json, the run was
				// in view all along: a count cut short by its move out of
				// view ends with entry.json gone.
				entry := filepath.Join(dir, store.EntryFile)
				if _, err := os.Stat(entry); err != nil {
					continue
				}
				n := fileCount(dir)
				if _, err := os.Stat(entry); err == nil && n < files+1 {
					half <- fmt.Sprintf("%d of its %d files", n, files+1)
					return
				}
			}
		}()
		// A run that passes the bound evicts the old one.
		big := filepath.Join(t.TempDir(), "new")
		if err := writeRun(big, strings.Repeat("x", 2*files*10)); err != nil {
			t.Fatal(err)
		}
		c.adopt(big, "runs/svc/new", 2*files*10)
		close(stop)
		if h, ok := <-half; ok {
			t.Fatalf("round %d: the run being evicted was in view with its %s and %s", round, store.EntryFile, h)
		}
		if cached(dir) {
			t.Fatalf("round %d: the old run was not evicted", round)
		}
	}
}

// fileCount counts the files under dir.
func fileCount(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(_ string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// TestCache_cleansTemp checks what the cache removes of .tmp, at open and
// when it evicts: what crashed processes left (old downloads and
// captures, removals at any age), never a capture or download that may
// be in progress.
func TestCache_cleansTemp(t *testing.T) {
	entries := []struct {
		name string
		age  time.Duration
		kept bool
	}{
		{"run-00a1b2c3d4e5f607", time.Minute, true},            // a capture in progress
		{"bundle-00a1b2c3d4e5f607", 5 * time.Hour, true},       // a long one
		{"10a1b2c3d4e5f607", time.Minute, true},                // a download in progress
		{"20a1b2c3d4e5f607", 7 * time.Hour, false},             // a crashed download
		{"run-30a1b2c3d4e5f607", 7 * time.Hour, false},         // a crashed capture
		{"removed-40a1b2c3d4e5f607", time.Minute, false},       // a crashed removal
		{"removed-50a1b2c3d4e5f607", 7 * time.Hour, false},     // an old one
		{"record-60a1b2c3d4e5f607.json", 7 * time.Hour, false}, // a file
	}
	leave := func(t *testing.T, dir string) {
		t.Helper()
		for _, e := range entries {
			p := filepath.Join(dir, store.TempDir, e.name)
			var err error
			if strings.HasSuffix(e.name, ".json") {
				err = os.WriteFile(p, []byte("{}"), 0o644)
			} else {
				err = writeRun(p, "left")
			}
			if err != nil {
				t.Fatal(err)
			}
			at := time.Now().Add(-e.age)
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name  string
		clean func(t *testing.T) string // leaves the entries, cleans, returns the cache's directory
	}{
		{"at open", func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, store.TempDir), 0o755); err != nil {
				t.Fatal(err)
			}
			leave(t, dir)
			c, err := openCache(dir, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			c.close()
			return dir
		}},
		{"when evicting", func(t *testing.T) string {
			c := testCache(t, 2*runBytes)
			leave(t, c.dir)
			for i := range 3 {
				addRun(t, c, fmt.Sprint(i), time.Hour)
			}
			if c.walks.Load() != 2 {
				t.Fatal("no eviction")
			}
			return c.dir
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.clean(t)
			for _, e := range entries {
				_, err := os.Stat(filepath.Join(dir, store.TempDir, e.name))
				if kept := err == nil; kept != e.kept {
					t.Errorf(".tmp/%s, %v old: kept %v, want %v", e.name, e.age, kept, e.kept)
				}
			}
		})
	}
}
