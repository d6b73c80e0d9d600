package shared

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heapscope/heapscope/internal/store"
)

// cache holds runs downloaded from the bucket, each at dir/<entry path>,
// whole or absent: a download goes into dir/.tmp and is renamed into
// place, and a run removed is renamed into dir/.tmp before it is removed
// there; what a crash leaves in dir/.tmp, cleanTemp removes once it is
// old. Beyond its bound it removes the runs least recently read, down
// to nine tenths of the bound, but never one read within grace: a reader
// may still be at it (a server's merge over many runs, a bundle's
// comparison with its baseline). Until such runs age past grace the
// cache may exceed its bound.
//
// Several processes may share the directory (two watchers or servers of
// one store on one host): each places a run only by rename, and keeps a
// whole copy another process placed first.
//
// It keeps its size in memory, added to as runs come in, so that a run
// added costs a walk of that run alone: only when the size passes the
// bound does evict walk the whole cache (and count it afresh). Walking
// it on every run added, as it once did, cost 0.1 ms of CPU per cached
// run on every commit (BenchmarkIngest): seconds a commit for a cache
// of tens of thousands of runs.
type cache struct {
	dir   string
	limit int64
	// fetchTimeout bounds a download (downloadTimeout).
	fetchTimeout time.Duration
	// grace is how long a run read is safe from eviction (evictGrace).
	grace time.Duration
	// now is the clock reads are marked and eviction goes by.
	now func() time.Time

	// base ends the downloads in flight when the cache closes; loads
	// counts them.
	base  context.Context
	stop  context.CancelFunc
	loads sync.WaitGroup

	mu sync.Mutex
	// closed is set by close: no download starts after it.
	closed bool
	// loading holds the downloads in flight, so that two readers of one
	// run wait for one download.
	loading map[string]*load
	// size is the bytes of the cached runs as last counted, plus those
	// of the runs added since; an overestimate after removals, which the
	// next eviction corrects.
	size int64
	// calm is when the runs that kept the last eviction above nine tenths
	// of the bound, all read within grace, begin to age past it: until
	// then an eviction could remove nothing, and none walks the cache.
	calm time.Time

	// evicting is held by the one eviction that runs at a time.
	evicting sync.Mutex
	// walks counts the walks of the whole cache (tests).
	walks atomic.Int64
}

type load struct {
	done chan struct{}
	err  error
}

// evictGrace is how long after it is read a run is safe from eviction.
const evictGrace = 10 * time.Minute

// tempAge is how old an entry of .tmp must be before the cache takes it
// for a crashed process's leftover: a download (<hex>) lasts at most
// downloadTimeout, but a pending capture of Begin (<kind>-<hex>) may
// last a capture window, minutes.
const tempAge = 6 * time.Hour

// downloadTimeout bounds a download, which runs on after the reader that
// started it has given up, for the others waiting on it.
const downloadTimeout = 5 * time.Minute

func openCache(dir string, limit int64) (*cache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(abs, store.TempDir), 0o755); err != nil {
		return nil, fmt.Errorf("cache %s: %w", abs, err)
	}
	base, stop := context.WithCancel(context.Background())
	c := &cache{dir: abs, limit: limit, fetchTimeout: downloadTimeout, grace: evictGrace, now: time.Now, base: base, stop: stop, loading: map[string]*load{}}
	c.cleanTemp()
	for _, r := range c.runs() {
		c.size += r.bytes
	}
	return c, nil
}

// close ends the downloads in flight and waits for them.
func (c *cache) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.stop()
	c.loads.Wait()
}

// RunDir returns the entry's run, downloaded into the cache when it is
// not there yet. An entry the index no longer holds is an error.
func (s *Store) RunDir(ctx context.Context, e store.Entry) (string, error) {
	if !fs.ValidPath(e.Path) || e.Path == "." {
		return "", fmt.Errorf("run of %s: %q is not a stored run's path", e.Target, e.Path)
	}
	if _, ok, err := s.EntryAt(e.Path); err != nil || !ok {
		if err == nil {
			err = fs.ErrNotExist
		}
		return "", fmt.Errorf("run of %s at %s: %w", e.Target, e.Path, err)
	}
	dir, err := s.cache.get(ctx, e.Path, func(ctx context.Context, tmp string) error {
		return s.objects.getDir(ctx, e.Path, tmp)
	})
	if err != nil {
		return "", fmt.Errorf("run of %s at %s: %w", e.Target, e.Path, err)
	}
	return dir, nil
}

// get returns the cached run at path, calling fetch to fill a fresh
// directory with it when the cache does not hold it.
//
// The download is no one caller's: it runs detached from their contexts,
// bounded by fetchTimeout, and each caller waits for it or for its own
// ctx, whichever ends first. A caller that gives up gets its ctx's error
// alone; the download goes on for the others.
func (c *cache) get(ctx context.Context, path string, fetch func(ctx context.Context, dir string) error) (string, error) {
	dir := filepath.Join(c.dir, filepath.FromSlash(path))
	c.mu.Lock()
	if c.touch(dir) {
		c.mu.Unlock()
		return dir, nil
	}
	if err := ctx.Err(); err != nil {
		c.mu.Unlock()
		return "", err
	}
	if c.closed {
		c.mu.Unlock()
		return "", errors.New("the store is closed")
	}
	l, ok := c.loading[path]
	if !ok {
		l = &load{done: make(chan struct{})}
		c.loading[path] = l
		c.loads.Add(1)
		go c.load(context.WithoutCancel(ctx), path, dir, l, fetch)
	}
	c.mu.Unlock()
	select {
	case <-l.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if l.err != nil {
		return "", l.err
	}
	return dir, nil
}

// touch says whether the cache holds the run at dir whole, and if so
// marks it read now, so that it is evicted last.
func (c *cache) touch(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, store.EntryFile)); err != nil {
		return false
	}
	now := c.now()
	os.Chtimes(dir, now, now)
	return true
}

// load downloads the run at path into dir for the callers waiting on l,
// until fetchTimeout or the cache's close.
func (c *cache) load(ctx context.Context, path, dir string, l *load, fetch func(context.Context, string) error) {
	defer c.loads.Done()
	ctx, cancel := context.WithTimeout(ctx, c.fetchTimeout)
	defer cancel()
	defer context.AfterFunc(c.base, cancel)()
	l.err = c.fill(ctx, dir, fetch)
	if l.err == nil {
		// Read now, for the callers waiting: the copy served may be
		// another process's, placed a while ago.
		c.mu.Lock()
		c.touch(dir)
		c.mu.Unlock()
		c.added(dir, dirBytes(dir))
	}
	c.mu.Lock()
	delete(c.loading, path)
	c.mu.Unlock()
	close(l.done)
}

// fill downloads into a temporary directory and renames it into place.
// A whole copy already there (another process's, placed meanwhile) stays,
// for that process may be reading it, and the download goes; what a
// crash left there, without entry.json, is moved aside and replaced.
func (c *cache) fill(ctx context.Context, dir string, fetch func(context.Context, string) error) error {
	tmp := c.tempName("")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := fetch(ctx, tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	for range 3 {
		err := os.Rename(tmp, dir)
		if err == nil || !errors.Is(err, fs.ErrExist) {
			return err
		}
		if _, err := os.Stat(filepath.Join(dir, store.EntryFile)); err == nil {
			return nil
		}
		if err := c.remove(dir); err != nil {
			return err
		}
	}
	return fmt.Errorf("place %s: something else keeps placing an incomplete copy there", dir)
}

// removedPrefix begins the names in .tmp of the runs being removed.
const removedPrefix = "removed-"

// tempName returns a fresh name in .tmp, beginning with prefix.
func (c *cache) tempName(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return filepath.Join(c.dir, store.TempDir, prefix+hex.EncodeToString(b[:]))
}

// remove removes the run at dir, first moving it into .tmp in one
// rename, so that no reader ever finds it half removed. Once moved it is
// out of view, even what a crash or a failure leaves of it there, which
// cleanTemp removes. A run already gone is no error.
func (c *cache) remove(dir string) error {
	aside, err := c.moveAside(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	os.RemoveAll(aside)
	return nil
}

// moveAside moves the run at dir into .tmp and returns where.
func (c *cache) moveAside(dir string) (string, error) {
	aside := c.tempName(removedPrefix)
	if err := os.Rename(dir, aside); err != nil {
		return "", err
	}
	return aside, nil
}

// cleanTemp removes what crashed processes left in .tmp: a removal's
// leftover at any age (a run once moved aside is no one's), any other
// entry once it is tempAge old, by its modification time.
func (c *cache) cleanTemp() {
	tmp := filepath.Join(c.dir, store.TempDir)
	des, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	now := c.now()
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), removedPrefix) {
			info, err := de.Info()
			if err != nil || now.Sub(info.ModTime()) < tempAge {
				continue
			}
		}
		os.RemoveAll(filepath.Join(tmp, de.Name()))
	}
}

// cachedRun is a run in the cache.
type cachedRun struct {
	dir   string
	bytes int64
	read  time.Time
}

// runs walks the cache: every run in it, whole.
func (c *cache) runs() []cachedRun {
	c.walks.Add(1)
	var runs []cachedRun
	// Runs are at <kind>/<target>/<name>: three levels down.
	tops, _ := filepath.Glob(filepath.Join(c.dir, "*", "*", "*"))
	for _, d := range tops {
		if rel, _ := filepath.Rel(c.dir, d); strings.HasPrefix(rel, store.TempDir+string(filepath.Separator)) {
			continue // a download in progress
		}
		info, err := os.Stat(d)
		if err != nil || !info.IsDir() {
			continue
		}
		runs = append(runs, cachedRun{d, dirBytes(d), info.ModTime()})
	}
	return runs
}

// dirBytes returns the bytes of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			if fi, err := de.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// added counts n bytes of a run just placed at dir, and evicts when the
// cache is over its bound.
func (c *cache) added(dir string, n int64) {
	c.mu.Lock()
	c.size += n
	over := c.size > c.limit && !c.now().Before(c.calm)
	c.mu.Unlock()
	if over {
		c.evict(dir)
	}
}

// evict removes the runs read least recently until the cache is within
// nine tenths of its bound, never keep (the run just added) nor a run
// read within grace. When an eviction is already under way it leaves
// the work to it.
func (c *cache) evict(keep string) {
	if !c.evicting.TryLock() {
		return
	}
	defer c.evicting.Unlock()
	c.cleanTemp()
	c.mu.Lock()
	before := c.size
	c.mu.Unlock()
	runs := c.runs()
	var total int64
	for _, r := range runs {
		total += r.bytes
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].read.Before(runs[j].read) })
	low := c.limit - c.limit/10
	now := c.now()
	var calm time.Time
	for _, r := range runs {
		if total <= low {
			break
		}
		if r.dir == keep {
			continue
		}
		if c.recent(r.read, now) {
			// So are the runs after it.
			calm = now.Add(c.grace)
			if r.read.Before(now) {
				calm = r.read.Add(c.grace)
			}
			break
		}
		if c.evictRun(r.dir, now) {
			total -= r.bytes
		}
	}
	c.mu.Lock()
	// The runs added during the walk, which it may have counted too:
	// counted twice, they only bring the next eviction nearer.
	c.size = total + c.size - before
	c.calm = calm
	c.mu.Unlock()
}

// recent says whether a run read at read is within grace at now.
func (c *cache) recent(read, now time.Time) bool {
	return c.grace > 0 && now.Sub(read) < c.grace
}

// evictRun removes the run at dir unless it has been read within grace
// (since the walk, too), and says whether the run is gone. Under c.mu
// the check and the move out of view are one step against get's reads.
func (c *cache) evictRun(dir string, now time.Time) bool {
	c.mu.Lock()
	info, err := os.Stat(dir)
	if err != nil {
		c.mu.Unlock()
		return errors.Is(err, fs.ErrNotExist)
	}
	if c.recent(info.ModTime(), now) {
		c.mu.Unlock()
		return false
	}
	aside, err := c.moveAside(dir)
	c.mu.Unlock()
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	os.RemoveAll(aside)
	return true
}

// adopt moves a run of n bytes just committed from src into the cache at
// path.
func (c *cache) adopt(src, path string, n int64) {
	dir := filepath.Join(c.dir, filepath.FromSlash(path))
	if os.MkdirAll(filepath.Dir(dir), 0o755) != nil || os.Rename(src, dir) != nil {
		return
	}
	c.added(dir, n)
}
