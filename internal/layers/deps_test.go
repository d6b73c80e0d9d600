package layers

import (
	"os/exec"
	"strings"
	"testing"
)

// boundaries lists what a package must not link, directly or through
// another: the history server and the reports read what was collected,
// and do not carry the collector (the load generator and its HTTP
// client, its histograms, the command's flags); the analyses do not
// fetch what they analyse.
var boundaries = []struct {
	pkg   string
	never []string
}{
	{"internal/server", []string{module + "internal/load", module + "internal/run", "github.com/valyala/fasthttp", "github.com/HdrHistogram/hdrhistogram-go", "github.com/spf13/pflag"}},
	{"internal/report", []string{module + "internal/load", "github.com/valyala/fasthttp", "github.com/HdrHistogram/hdrhistogram-go", "github.com/spf13/pflag"}},
	{"internal/compare", []string{module + "internal/load", module + "internal/run", "github.com/spf13/pflag"}},
	// The analyses take data: the HTTP client that fetches it from a
	// target (and package rss/live, which gathers rss's input) are not
	// theirs.
	{"internal/diagnose", []string{module + "internal/target", module + "internal/rss/live", "net/http", "github.com/spf13/pflag"}},
	{"internal/rss", []string{module + "internal/target", module + "internal/rss/live", "net/http"}},
}

// TestBoundaries checks the packages each package links, as go list
// -deps gives them, against what it must never link.
func TestBoundaries(t *testing.T) {
	for _, b := range boundaries {
		out, err := exec.Command("go", "list", "-deps", "../../"+b.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", b.pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, never := range b.never {
			for _, d := range deps {
				if d == never || strings.HasPrefix(d, never+"/") {
					t.Errorf("%s links %s: it must not; find the import that brings it (go list -deps) and move the code it needs down", b.pkg, d)
					break
				}
			}
		}
	}
}

// TestWatchAPIHasNoDatabase: watch's exported API does not name the
// database driver the shared store and the fleet use (their guards say
// what a commit is stored under), so that a watch caller, or another
// store, is not tied to it.
func TestWatchAPIHasNoDatabase(t *testing.T) {
	out, err := exec.Command("go", "doc", "-all", "../../internal/watch").Output()
	if err != nil {
		t.Fatalf("go doc internal/watch: %v", err)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, "pgx") {
			t.Errorf("watch's API names pgx: %s", strings.TrimSpace(line))
		}
	}
}
