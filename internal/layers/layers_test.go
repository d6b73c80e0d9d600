package layers

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/heapscope/heapscope/"

// layer gives each package directory (relative to the module) its layer.
// A package imports only packages of lower layers, or of its own layer
// where the pair is listed in sideways.
var layer = map[string]int{
	// 0: data types and leaf helpers, importing nothing of heapscope's.
	"internal/humanize": 0, "internal/units": 0, "internal/goldenfile": 0, "internal/webguard": 0,
	"internal/escape": 0, "internal/gcstats": 0, "internal/sysmem": 0,
	"internal/pprofx": 0, "internal/gate": 0, "internal/layers": 0,
	"internal/atomicfile": 0, "internal/option": 0, "internal/progress": 0,
	// 0 also: Kubernetes discovery, client-go's one importer (kube/kubetest,
	// its fake for tests, with it).
	"internal/kube": 0,
	// 0 also: helpers for tests, imported by tests alone (testserver/pgtest
	// and testserver/s3test, real PostgreSQL and S3 servers, with it).
	"internal/cgrouptest": 0, "internal/clock": 0, "internal/testserver": 0,
	// 0 also: build tools, run by make, not by heapscope.
	"internal/tools": 0,
	// 1: the result.json types, over the data they carry.
	"internal/result": 1,
	// 2: analyses, readers and clients: values in, values out.
	"internal/diagnose": 2, "internal/compare": 2, "internal/bench": 2,
	"internal/allocbench": 2, "internal/exectrace": 2, "internal/flame": 2,
	"internal/rss": 2, "internal/rundir": 2, "internal/load": 2, "internal/target": 2,
	"internal/gcrun": 2, "internal/trigger": 2, "internal/store": 2,
	// 2 also: problems, the findings of a target's captures that share a
	// cause.
	"internal/problem": 2,
	// 2 also: a fleet's membership, over the shared store's database.
	"internal/fleet": 2,
	// 3: rendering, for the terminal, files and HTTP alike.
	"internal/report": 3,
	// 3 also: stored captures exported to other tools (Pyroscope), read
	// through rundir.
	"internal/export": 3,
	// 4: the collector, the web UI of a run, the history server.
	"internal/run": 4, "internal/view": 4, "internal/server": 4,
	// 4 also: the bundled example services that demo starts.
	"examples": 4,
	// 5: the watcher, which captures through run; internal/watch/config,
	// its configuration, shares its layer.
	"internal/watch": 5,
	// 6: the command.
	"cmd/heapscope": 6,
}

// sideways lists the imports allowed within one layer.
var sideways = [][2]string{
	{"internal/compare", "internal/bench"},
	{"internal/compare", "internal/flame"},
	{"internal/compare", "internal/rundir"}, // a side read from run directories
	{"internal/diagnose", "internal/rss"},   // the one RSS reconciliation
	{"internal/rss", "internal/target"},     // a live process's MemStats
	// A remote target's /metrics.
	{"internal/trigger", "internal/target"},
	{"internal/store", "internal/rundir"},     // the one reader of a run directory
	{"internal/store", "internal/problem"},    // captures as problems, the one cause key
	{"internal/problem", "internal/diagnose"}, // the one cause key and severity order
	{"internal/fleet", "internal/store"},      // leases in the shared store's database
	{"internal/server", "internal/view"},      // a stored run's page is view's
}

// TestLayers checks every import of heapscope's own packages in non-test
// code against the layers.
func TestLayers(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, base := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, base), func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			rel, _ := filepath.Rel(root, path)
			pkg := filepath.ToSlash(rel)
			imports := importsOf(t, path)
			if len(imports) == 0 && !hasGo(path) {
				return nil
			}
			from, known := layerOf(pkg)
			if !known {
				t.Errorf("%s: not in the layers of internal/layers: give it one", pkg)
				return nil
			}
			for _, imp := range imports {
				if top(imp) == top(pkg) {
					continue // a package and its subpackages
				}
				to, ok := layerOf(imp)
				if !ok {
					t.Errorf("%s imports %s, which has no layer", pkg, imp)
					continue
				}
				if to < from || to == from && slices.Contains(sideways, [2]string{top(pkg), top(imp)}) {
					continue
				}
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only layers below its own", pkg, from, imp, to)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// layerOf gives the layer of a package directory or of one below it (an
// internal/gen, a subpackage), which shares its parent's.
func layerOf(pkg string) (int, bool) {
	l, ok := layer[top(pkg)]
	return l, ok
}

// top trims pkg to the directory that layer names: internal/x or cmd/x,
// or examples.
func top(pkg string) string {
	parts := strings.Split(pkg, "/")
	if parts[0] == "examples" {
		return "examples"
	}
	return strings.Join(parts[:min(2, len(parts))], "/")
}

// importsOf returns the heapscope packages imported by the non-test Go
// files of dir, relative to the module.
func importsOf(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		for _, spec := range parsed.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if rel, ok := strings.CutPrefix(p, module); ok && !slices.Contains(out, rel) {
				out = append(out, rel)
			}
		}
	}
	return out
}

func hasGo(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	return len(files) > 0
}
