package config

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// writeFile writes a file whole, through a rename, as a careful generator
// of file_sd files does.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// sdConfig writes a config with one static target and a file_sd entry
// over dir/*.json, refreshed every minute, and loads it.
func sdConfig(t *testing.T, dir string, warn func(error)) *Config {
	t.Helper()
	path := filepath.Join(dir, "heapscope.yaml")
	writeFile(t, path, `groups:
  - name: api
    labels: {team: payments}
    static:
      - targets: [127.0.0.1:6060]
    file_sd:
      - files: ["sd/*.json"]
        refresh_interval: 1m
`)
	if err := os.Mkdir(filepath.Join(dir, "sd"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, Options{Warn: warn})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func keys(ts []Target) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = strings.TrimSuffix(strings.TrimPrefix(t.Key, "http://"), "/debug/pprof/")
	}
	return out
}

// recorder keeps what Watch delivers and what it warns of.
type recorder struct {
	mu     sync.Mutex
	lists  [][]Target
	warned []string
}

func (r *recorder) deliver(ts []Target) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists = append(r.lists, ts)
}

func (r *recorder) warn(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warned = append(r.warned, err.Error())
}

// take returns what was delivered and warned since the last take.
func (r *recorder) take() ([][]Target, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lists, warned := r.lists, r.warned
	r.lists, r.warned = nil, nil
	return lists, warned
}

func TestWatch_FollowsFileSD(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		rec := &recorder{}
		c := sdConfig(t, dir, rec.warn)
		sd := filepath.Join(dir, "sd")
		writeFile(t, filepath.Join(sd, "a.json"), `[{"targets": ["10.0.0.1:6060"], "labels": {"env": "prod"}}]`)

		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- c.Watch(ctx, rec.deliver) }()
		// step lets a refresh come and go; then checks what Watch said.
		step := func(name string, wantLists [][]string, wantWarned ...string) {
			t.Helper()
			time.Sleep(time.Minute + time.Second)
			synctest.Wait()
			lists, warned := rec.take()
			var got [][]string
			for _, l := range lists {
				got = append(got, keys(l))
			}
			if !slices.EqualFunc(got, wantLists, slices.Equal) {
				t.Errorf("%s: delivered %v, want %v", name, got, wantLists)
			}
			if len(warned) != len(wantWarned) {
				t.Errorf("%s: warned %q, want %d warnings", name, warned, len(wantWarned))
				return
			}
			for i, w := range wantWarned {
				if !strings.Contains(warned[i], w) {
					t.Errorf("%s: warning %q does not say %q", name, warned[i], w)
				}
			}
		}

		synctest.Wait()
		lists, _ := rec.take()
		if len(lists) != 1 || !slices.Equal(keys(lists[0]), []string{"127.0.0.1:6060", "10.0.0.1:6060"}) {
			t.Fatalf("first delivery %v, want the static target then the file's", lists)
		}
		if l := lists[0][1].Labels; l["env"] != "prod" || l["team"] != "payments" || l["group"] != "api" || l["instance"] != "10.0.0.1:6060" {
			t.Errorf("discovered target's labels %v: want the file's over the group's, and group and instance", l)
		}

		step("nothing changed", nil)
		writeFile(t, filepath.Join(sd, "a.json"), `[{"targets": ["10.0.0.1:6060", "10.0.0.2:6060"]}]`)
		step("a target added", [][]string{{"127.0.0.1:6060", "10.0.0.1:6060", "10.0.0.2:6060"}})
		writeFile(t, filepath.Join(sd, "b.json"), `[{"targets": ["10.0.0.3:6060"]}]`)
		step("a new file", [][]string{{"127.0.0.1:6060", "10.0.0.1:6060", "10.0.0.2:6060", "10.0.0.3:6060"}})

		// A broken edit: the file's last good targets stay, and the
		// problem is said once, with the file and line.
		writeFile(t, filepath.Join(sd, "a.json"), "[\n  {\"targets\": [\"10.0.0.9:6060\",\n")
		step("a broken file", nil, "group api: file_sd: "+filepath.Join(sd, "a.json")+":3: not JSON: unexpected end of JSON input; its last good targets are kept")
		step("still broken", nil)
		writeFile(t, filepath.Join(sd, "a.json"), `[{"targets": ["10.0.0.1:6060", "bad target"]}]`)
		step("a bad target", nil, filepath.Join(sd, "a.json")+`:1: [0].targets[1]: target "bad target": want a URL`)
		writeFile(t, filepath.Join(sd, "a.json"), "")
		step("an empty file", nil, "is empty (write [] for no targets)")

		// A target given twice: the first is kept, and it is said.
		writeFile(t, filepath.Join(sd, "a.json"), `[{"targets": ["10.0.0.1:6060", "127.0.0.1:6060"]}]`)
		step("a duplicate", [][]string{{"127.0.0.1:6060", "10.0.0.1:6060", "10.0.0.3:6060"}},
			filepath.Join(sd, "a.json")+":1: http://127.0.0.1:6060/debug/pprof/ is already a target at "+filepath.Join(dir, "heapscope.yaml")+":5: the first is watched")

		// Removing a file is how file_sd removes targets.
		if err := os.Remove(filepath.Join(sd, "b.json")); err != nil {
			t.Fatal(err)
		}
		step("a file removed", [][]string{{"127.0.0.1:6060", "10.0.0.1:6060"}})
		writeFile(t, filepath.Join(sd, "a.json"), `[]`)
		step("no targets", [][]string{{"127.0.0.1:6060"}})

		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch = %v, want nil when its context is done", err)
		}
	})
}

func TestWatch_EachEntryAtItsOwnInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.yaml")
		writeFile(t, path, `groups:
  - name: fast
    file_sd: [{files: [fast.yaml], refresh_interval: 10s}]
  - name: slow
    file_sd: [{files: [slow.yaml], refresh_interval: 1h}]
`)
		writeFile(t, filepath.Join(dir, "fast.yaml"), "- targets: [10.0.0.1:1]\n")
		writeFile(t, filepath.Join(dir, "slow.yaml"), "- targets: [10.0.0.2:1]\n")
		c, err := Load(path, Options{Warn: func(err error) { t.Errorf("warned: %v", err) }})
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go c.Watch(ctx, rec.deliver)
		synctest.Wait()
		rec.take()
		writeFile(t, filepath.Join(dir, "fast.yaml"), "- targets: [10.0.0.1:2]\n")
		writeFile(t, filepath.Join(dir, "slow.yaml"), "- targets: [10.0.0.2:2]\n")
		time.Sleep(11 * time.Second)
		synctest.Wait()
		if lists, _ := rec.take(); len(lists) != 1 || !slices.Equal(keys(lists[0]), []string{"10.0.0.1:2", "10.0.0.2:1"}) {
			t.Errorf("after 11s: delivered %v, want the fast file read again, not the slow", lists)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if lists, _ := rec.take(); len(lists) != 1 || !slices.Equal(keys(lists[0]), []string{"10.0.0.1:2", "10.0.0.2:2"}) {
			t.Errorf("after an hour: delivered %v, want the slow file read again", lists)
		}
	})
}

func TestWatch_WithoutFileSD(t *testing.T) {
	c, err := ForURLs([]string{"127.0.0.1:6060"}, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	done := make(chan error)
	go func() {
		done <- c.Watch(ctx, func(ts []Target) {
			calls++
			cancel()
		})
	}()
	if err := <-done; err != nil || calls != 1 {
		t.Errorf("Watch = %v after %d calls, want nil after 1", err, calls)
	}
}

func TestTargets_ReportsWhatItCannotRead(t *testing.T) {
	dir := t.TempDir()
	c := sdConfig(t, dir, nil)
	writeFile(t, filepath.Join(dir, "sd", "a.yml.json"), `[{"targets": ["10.0.0.1:6060"], "labels": {"__meta_x": "dropped", "env": "x"}}]`)
	writeFile(t, filepath.Join(dir, "sd", "b.json"), `{"targets": ["10.0.0.2:6060"]}`)
	writeFile(t, filepath.Join(dir, "sd", "c.json"), `[{"targets": ["10.0.0.3:6060"], "labels": {"instance": "x"}}]`)
	writeFile(t, filepath.Join(dir, "sd", "d.json"), `[{"targets": ["10.0.0.4:6060"], "lables": {}}]`)
	// Escaped surrogate pairs are JSON the YAML parser does not read.
	writeFile(t, filepath.Join(dir, "sd", "e.json"), `[{"targets": ["10.0.0.5:6060"], "labels": {"owner": "\ud83d\ude00"}}]`)
	ts, err := c.Targets(t.Context())
	if got := keys(ts); !slices.Equal(got, []string{"127.0.0.1:6060", "10.0.0.1:6060", "10.0.0.5:6060"}) {
		t.Errorf("targets %v, want the static one and those of the good files", got)
	}
	if _, ok := ts[1].Labels["__meta_x"]; ok || ts[1].Labels["env"] != "x" {
		t.Errorf("labels %v: want Prometheus' meta labels dropped, the others kept", ts[1].Labels)
	}
	if ts[2].Labels["owner"] != "\U0001F600" {
		t.Errorf("labels %v: want the escaped emoji", ts[2].Labels)
	}
	sd := filepath.Join(dir, "sd")
	want := []string{
		"group api: file_sd: " + filepath.Join(sd, "b.json") + ":1: want a list of {targets: [...], labels: {...}}, not a mapping; its last good targets are kept",
		"group api: file_sd: " + filepath.Join(sd, "c.json") + ":1: [0].labels.instance: label instance is heapscope's: every target has it; its last good targets are kept",
		"group api: file_sd: " + filepath.Join(sd, "d.json") + ":1: [0].lables: unknown key (did you mean labels?); its last good targets are kept",
	}
	var got []string
	for _, e := range unjoin(err) {
		got = append(got, e.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestTargets_MissingFileNamedAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	writeFile(t, path, "groups:\n  - name: a\n    file_sd: [{files: [gone.json, none-*.json]}]\n")
	c, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := c.Targets(t.Context())
	if len(ts) != 0 || err == nil || !strings.Contains(err.Error(), "gone.json: no such file") || strings.Contains(err.Error(), "none-") {
		t.Errorf("Targets = %v, %v: want an error for the file named, none for the pattern matching nothing", ts, err)
	}
}

// TestTargets_SkipsWhatIsNotAFile plants a FIFO and a directory where a
// file_sd pattern matches: discovery must not wait for a writer, and
// must say what it skipped while keeping the good file's targets.
func TestTargets_SkipsWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	c := sdConfig(t, dir, nil)
	sd := filepath.Join(dir, "sd")
	writeFile(t, filepath.Join(sd, "a.json"), `[{"targets": ["10.0.0.1:6060"]}]`)
	if err := syscall.Mkfifo(filepath.Join(sd, "b.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(sd, "c.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	type result struct {
		ts  []Target
		err error
	}
	done := make(chan result, 1)
	go func() {
		ts, err := c.Targets(t.Context())
		done <- result{ts, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		// Unblock the open so the test ends: a writer for the FIFO.
		if f, err := os.OpenFile(filepath.Join(sd, "b.json"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatal("Targets still waiting after 10 s: a FIFO matching a file_sd pattern holds discovery")
	}
	if got := keys(r.ts); !slices.Equal(got, []string{"127.0.0.1:6060", "10.0.0.1:6060"}) {
		t.Errorf("targets %v, want the static one and the regular file's", got)
	}
	want := []string{
		"group api: file_sd: " + filepath.Join(sd, "b.json") + ": not a regular file: a FIFO; its last good targets are kept",
		"group api: file_sd: " + filepath.Join(sd, "c.json") + ": not a regular file: a directory; its last good targets are kept",
	}
	var got []string
	for _, e := range unjoin(r.err) {
		got = append(got, e.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestRefresh_ReadsOnlyWhatChanged refreshes a file_sd entry again and
// again: a file is read again only when its stamp changed (written,
// replaced) or when it was written too lately to trust its stamp, and a
// broken file's error is kept with it.
func TestRefresh_ReadsOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	c := sdConfig(t, dir, func(err error) { t.Errorf("warned: %v", err) })
	s := newDiscovery(c).sources[0]
	a := filepath.Join(dir, "sd", "a.json")
	old := time.Now().Add(-time.Hour)
	// write puts content in the file in place (same inode), dated at.
	write := func(content string, at time.Time) {
		t.Helper()
		if err := os.WriteFile(a, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(a, at, at); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, wantReads int, wantKeys ...string) {
		t.Helper()
		s.refresh()
		if s.reads != wantReads {
			t.Errorf("%s: %d reads in all, want %d", step, s.reads, wantReads)
		}
		var got []string
		for _, ts := range s.files {
			got = append(got, keys(ts)...)
		}
		if !slices.Equal(got, wantKeys) {
			t.Errorf("%s: targets %v, want %v", step, got, wantKeys)
		}
	}

	write(`[{"targets": ["10.0.0.1:6060"]}]`, old)
	check("first", 1, "10.0.0.1:6060")
	check("unchanged", 1, "10.0.0.1:6060")
	write(`[{"targets": ["10.0.0.2:6060"]}]`, old.Add(time.Second)) // same size, written again
	check("written again", 2, "10.0.0.2:6060")
	writeFile(t, a, `[{"targets": ["10.0.0.3:6060"]}]`) // replaced: a new inode
	if err := os.Chtimes(a, old.Add(time.Second), old.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	check("replaced, its time kept", 3, "10.0.0.3:6060")
	write(`[{"targets": ["10.0.0.4:6060"]}]`, time.Now())
	check("written just now", 4, "10.0.0.4:6060")
	check("still recent: not trusted", 5, "10.0.0.4:6060")

	write(`[{"targets": [`, old)
	s.refresh()
	s.refresh()
	if s.reads != 6 || len(s.problems) != 1 || !strings.Contains(s.problems[0].Error(), "a.json") {
		t.Errorf("a broken file refreshed twice: %d reads, problems %v; want it read once and its error kept", s.reads, s.problems)
	}
}
