package view

import (
	"bytes"
	"cmp"
	"net/http/httptest"
	"net/url"
	"os"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/testserver/crawl"
)

// TestServer_everyLinkWorks crawls the UI of real run directories, as
// profile writes them and as a store keeps them (lean: its report drawn
// on request): every link answers, and no page writes a raw float.
func TestServer_everyLinkWorks(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lean, empty bool
	}{{"as profile writes it", false, false}, {"lean", true, false}, {"an allocs delta without samples", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := profiledRunDir(t, tc.lean)
			if tc.empty {
				emptyDelta(t, dir)
			}
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(s)
			defer ts.Close()
			res, err := crawl.Site(ts.Client(), ts.URL, crawl.Options{Skip: func(u *url.URL) bool {
				// pprof's source view takes seconds: the first case
				// covers it.
				return (tc.lean || tc.empty) && pathpkg.Base(u.Path) == "source"
			}, Key: func(u *url.URL) string {
				if strings.HasPrefix(u.Path, "/pprof/") {
					// pprof's links change its view's query; its source
					// view reads the sources of every function, seconds
					// a profile: once is enough.
					if v := pathpkg.Base(u.Path); v == "source" || v == "disasm" {
						return "pprof " + v
					}
					return u.Path
				}
				return ""
			}})
			if err != nil {
				t.Fatal(err)
			}
			if index := res.Pages[0].Body; tc.empty && (strings.Contains(index, `href="flamegraph/allocs-delta"`) || !strings.Contains(index, "no samples")) {
				t.Errorf("the index links the views of a profile without samples:\n%s", index)
			}
			for _, f := range res.Faults() {
				t.Error(f)
			}
			for _, want := range []string{"/flamegraph/heap-000", "/pprof/heap-000/", "/run/profiles/heap-000.pb.gz", "/run/result.json"} {
				found := false
				for _, p := range res.Pages {
					found = found || strings.HasPrefix(p.URL, want)
				}
				if !found {
					t.Errorf("no %s reached from /", want)
				}
			}
			slowest := slices.MaxFunc(res.Pages, func(a, b crawl.Page) int { return cmp.Compare(a.Elapsed, b.Elapsed) })
			t.Logf("%d URLs; the slowest %s in %s", len(res.Pages), slowest.URL, slowest.Elapsed)
		})
	}
}

// emptyDelta replaces the run's allocations delta by the same profile
// without its samples, as a quiet window leaves it.
func emptyDelta(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "profiles", "allocs-delta.pb.gz")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	p.Sample = nil
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
