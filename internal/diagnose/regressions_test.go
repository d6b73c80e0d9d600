package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/result"
)

// TestRegressions_eachEntry checks every entry of regressions.yaml
// against the versions it lists as affected and unaffected, and that a
// run with an affected version gets the finding.
func TestRegressions_eachEntry(t *testing.T) {
	list, err := Regressions()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) == 0 {
		t.Fatal("no regressions listed")
	}
	for _, reg := range list {
		t.Run(reg.ID, func(t *testing.T) {
			unfixed := slices.ContainsFunc(reg.Affected, func(a VersionRange) bool { return a.Fixed == "" })
			if len(reg.Examples.Affected) == 0 || len(reg.Examples.Unaffected) == 0 && !unfixed {
				t.Fatal("the entry lists no affected or no unaffected example versions")
			}
			if reg.Issue == "" || reg.Kind != KindRSS && len(reg.Signature) == 0 {
				t.Error("the entry has no upstream link, or no signature to find it in stacks by")
			}
			for _, v := range reg.Examples.Affected {
				if !reg.Affects(v) {
					t.Errorf("Affects(%s) = false, want true", v)
				}
			}
			for _, v := range reg.Examples.Unaffected {
				if reg.Affects(v) {
					t.Errorf("Affects(%s) = true, want false", v)
				}
			}
			for _, a := range reg.Affected {
				if a.Fixed != "" && reg.Affects(a.Fixed) {
					t.Errorf("the fixed version %s is affected", a.Fixed)
				}
				if !reg.Affects(a.Introduced) {
					t.Errorf("the introducing version %s is not affected", a.Introduced)
				}
			}
			run := &result.Run{Target: result.Target{Local: true}}
			if reg.Module == "go" {
				run.Target.GoVersion = reg.Examples.Affected[0]
			} else {
				run.Target.GoVersion = "go1.26.0"
				run.Target.Dependencies = []result.Module{{Path: reg.Module, Version: reg.Examples.Affected[0]}}
			}
			rep := Run(Input{Run: run})
			// On the version alone, an RSS bug is a finding, another
			// bug a note (none when no release fixes it).
			if got := hasFinding(rep.Findings, "regression."+reg.ID); got != (reg.Kind == KindRSS) {
				t.Errorf("a run of %s %s has a regression.%s finding: %v, want %v; findings %+v", reg.Module, reg.Examples.Affected[0], reg.ID, got, reg.Kind == KindRSS, rep.Findings)
			}
			noted := slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, reg.Issue) })
			if want := reg.Kind != KindRSS && !unfixed; noted != want {
				t.Errorf("a run of %s %s notes the bug: %v, want %v; notes %v", reg.Module, reg.Examples.Affected[0], noted, want, rep.Notes)
			}
			if len(reg.Examples.Unaffected) == 0 {
				return
			}
			if reg.Module == "go" {
				run.Target.GoVersion = reg.Examples.Unaffected[0]
			} else {
				run.Target.Dependencies = []result.Module{{Path: reg.Module, Version: reg.Examples.Unaffected[0]}}
			}
			if hasFinding(Run(Input{Run: run}).Findings, "regression."+reg.ID) {
				t.Errorf("a run of %s %s has the regression.%s finding", reg.Module, reg.Examples.Unaffected[0], reg.ID)
			}
		})
	}
}

func TestModuleOfFile(t *testing.T) {
	tests := []struct {
		file, path, version string
		ok                  bool
	}{
		{"/root/go/pkg/mod/github.com/gorilla/sessions@v1.1.3/sessions.go", "github.com/gorilla/sessions", "v1.1.3", true},
		{"/home/u/go/pkg/mod/github.com/!shopify/sarama@v1.36.0/broker.go", "github.com/Shopify/sarama", "v1.36.0", true},
		{"/go/pkg/mod/golang.org/x/net@v0.0.0-20211112202133-69e39bad7dc2/http2/server.go", "golang.org/x/net", "v0.0.0-20211112202133-69e39bad7dc2", true},
		{"/go/pkg/mod/github.com/jackc/pgx/v5@v5.4.1/pgconn/pgconn.go", "github.com/jackc/pgx/v5", "v5.4.1", true},
		{"/go/pkg/mod/github.com/docker/docker@v20.10.7+incompatible/client/client.go", "github.com/docker/docker", "v20.10.7+incompatible", true},
		{"/usr/local/go/src/net/http/server.go", "", "", false},
		{"/src/svc/api/api.go", "", "", false},
		{"/go/pkg/mod/github.com/a/b@notaversion/x.go", "", "", false},
		{"/go/pkg/mod/cache/download/x.go", "", "", false},
	}
	for _, tt := range tests {
		path, version, ok := ModuleOfFile(tt.file)
		if path != tt.path || version != tt.version || ok != tt.ok {
			t.Errorf("ModuleOfFile(%q) = %q, %q, %v; want %q, %q, %v", tt.file, path, version, ok, tt.path, tt.version, tt.ok)
		}
	}
}

// TestRegressions_leadTheLeakFinding: a leak whose growing stacks run
// through a known bug's signature, at a version read from the profiles'
// own module paths, leads with the upgrade, and the bug is not reported a
// second time on its own. At the fixed version it is not mentioned.
func TestRegressions_leadTheLeakFinding(t *testing.T) {
	for _, tt := range []struct {
		version string
		want    bool
	}{{"v1.1.3", true}, {"v1.2.0", false}} {
		t.Run(tt.version, func(t *testing.T) {
			set := fn{"github.com/gorilla/context.Set", "/root/go/pkg/mod/github.com/gorilla/context@v1.1.1/context.go", 30}
			registry := fn{"github.com/gorilla/sessions.GetRegistry", "/root/go/pkg/mod/github.com/gorilla/sessions@" + tt.version + "/sessions.go", 140}
			var in Input
			for i := range 6 {
				at := t0.Add(time.Duration(i) * time.Minute)
				h := newHeap(at, 512<<10)
				y := int64(i) * 4 << 20
				h.sample([4]int64{y / 256, y, y / 256, y}, set, registry, handler)
				in.Heap = append(in.Heap, Profile{Name: fmt.Sprintf("heap-%03d", i), Time: at, Profile: h.build()})
				in.Live = append(in.Live, Live{Bytes: uint64(20*mib + float64(y)), Objects: 1000})
			}
			// The library's own line inserts into its private map.
			in.Source = mapSource{{file: set.file, line: set.line}: "	data[r][key] = val"}
			rep := Run(in)
			leaks := findingsWith(rep.Findings, "leak.inuse-growth")
			if len(leaks) == 0 {
				t.Fatalf("no leak finding: %v", rep.Findings)
			}
			if strings.Contains(leaks[0].Fix, "bound the map") || strings.Contains(leaks[0].Title, "a map that only grows") {
				t.Errorf("finding %q advises bounding a library's private map: %s", leaks[0].Title, leaks[0].Fix)
			}
			const upgrade = "upgrade github.com/gorilla/sessions from v1.1.3 to v1.2.0"
			if got := strings.HasPrefix(leaks[0].Fix, upgrade); got != tt.want {
				t.Errorf("fix %q starts with %q: %v, want %v", leaks[0].Fix, upgrade, got, tt.want)
			}
			if tt.want && (!strings.Contains(leaks[0].Fix, "https://github.com/gorilla/sessions/issues/122") || !strings.Contains(leaks[0].Title, upgrade)) {
				t.Errorf("finding %q / %q does not name the upgrade and the upstream issue", leaks[0].Title, leaks[0].Fix)
			}
			if hasFinding(rep.Findings, "regression.gorilla-sessions-context-registry") {
				t.Error("the bug is reported again on its own beside the leak it explains")
			}
		})
	}
}

// TestRegressions_versionAloneIsANote: a module version with a known leak
// whose signature is not in the run's stacks is said in a note, with the
// upgrade.
func TestRegressions_versionAloneIsANote(t *testing.T) {
	run := &result.Run{Target: result.Target{Local: true, GoVersion: "go1.26.0",
		Dependencies: []result.Module{{Path: "github.com/jackc/pgx/v5", Version: "v5.4.1"}}}}
	rep := Run(Input{Run: run})
	if len(findingsWith(rep.Findings, "regression.pgx-slow-write-timer")) != 0 {
		t.Errorf("findings %+v: a bug not seen is a note, not a finding", rep.Findings)
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool {
		return strings.Contains(n, "not in this run's stacks") && strings.Contains(n, "upgrade github.com/jackc/pgx/v5 from v5.4.1 to v5.4.2")
	}) {
		t.Errorf("notes %v: want one with the upgrade", rep.Notes)
	}
}

// TestRegressions_leadByShareOfGrowth: the samples place the lead at a
// site of net/http's, but most of what grows runs through the known bug's
// signature: the lead names the bug.
func TestRegressions_leadByShareOfGrowth(t *testing.T) {
	mime := fn{"net/textproto.readMIMEHeader", "/usr/local/go/src/net/textproto/reader.go", 592}
	set := fn{"github.com/gorilla/context.Set", "/root/go/pkg/mod/github.com/gorilla/context@v1.1.1/context.go", 23}
	get := fn{"github.com/gorilla/sessions.(*Registry).Get", "/root/go/pkg/mod/github.com/gorilla/sessions@v1.1.3/sessions.go", 141}
	registry := fn{"github.com/gorilla/sessions.GetRegistry", "/root/go/pkg/mod/github.com/gorilla/sessions@v1.1.3/sessions.go", 119}
	visit := fn{"example.com/svc/main.visit", "/src/svc/main.go", 37}
	var in Input
	for i := range 6 {
		at := t0.Add(time.Duration(i) * time.Minute)
		h := newHeap(at, 512<<10)
		y := int64(i) << 20
		h.sample([4]int64{2 * y / 64, 2 * y, 2 * y / 64, 2 * y}, mime, httpRead)
		h.sample([4]int64{3 * y / 2 / 64, 3 * y / 2, 3 * y / 2 / 64, 3 * y / 2}, set, registry, handler)
		h.sample([4]int64{3 * y / 2 / 64, 3 * y / 2, 3 * y / 2 / 64, 3 * y / 2}, get, handler)
		// The per-request session map the leak keeps, at the service's
		// own line: kept with it, not a map to bound.
		h.sample([4]int64{y / 64, y, y / 64, y}, visit, handler)
		in.Heap = append(in.Heap, Profile{Name: fmt.Sprintf("heap-%03d", i), Time: at, Profile: h.build()})
		in.Live = append(in.Live, Live{Bytes: uint64(20*mib + float64(6*y)), Objects: 1000})
	}
	in.Source = mapSource{{file: visit.file, line: visit.line}: `	session.Values["n"] = 1`}
	rep := Run(in)
	leaks := findingsWith(rep.Findings, "leak.inuse-growth")
	if len(leaks) != 1 || leaks[0].Function != mime.name {
		t.Fatalf("leak findings %v, want one, led at %s, the others listed under it", leaks, mime.name)
	}
	if !strings.Contains(leaks[0].Title, "growing with it") || !strings.Contains(leaks[0].Title, "main.visit") {
		t.Errorf("title %q does not list the sites growing with the leak", leaks[0].Title)
	}
	const upgrade = "upgrade github.com/gorilla/sessions from v1.1.3 to v1.2.0"
	if !strings.HasPrefix(leaks[0].Fix, upgrade) || leaks[0].Evidence["signature_share_of_growth"] < 0.5 {
		t.Errorf("lead %q (evidence %v): want its fix to start with %q", leaks[0].Fix, leaks[0].Evidence, upgrade)
	}
}

func hasFinding(fs []result.Finding, id string) bool {
	for _, f := range fs {
		if f.ID == id {
			return true
		}
	}
	return false
}
func TestRegression_AffectsOddVersions(t *testing.T) {
	reg := Regression{Module: "go", Affected: []VersionRange{{Introduced: "go1.24.0", Fixed: "go1.24.6"}}}
	for v, want := range map[string]bool{
		"go1.24.3 X:nodwarf5": true,
		"devel +abc":          false,
		"":                    false,
		"1.24.3":              false,
		"go1.24rc1":           false,
	} {
		if got := reg.Affects(v); got != want {
			t.Errorf("Affects(%q) = %v, want %v", v, got, want)
		}
	}
}
