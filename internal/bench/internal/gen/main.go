// Command gen writes the benchmark files under internal/bench/testdata/bench
// by running real go test -bench invocations on the bundled example
// services, so the tests read numbers a Go toolchain produced:
//
//	leakycache.txt      BenchmarkWorker_Process of examples/leakycache, -count 10
//	optimizedcache.txt  the same benchmark of examples/optimizedcache
//	services-a.txt      every Worker_Process benchmark of both services with
//	services-b.txt      -cpu 1,2: several configurations (two pkg blocks,
//	                    two GOMAXPROCS), two independent runs
//
// Every run uses a fixed iteration count (-benchtime 20000x): the leaky
// worker's bytes per op grow with the iterations, so a time-based benchtime
// would make its B/op depend on the machine's speed.
//
// Run it through go generate in internal/bench.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

const module = "github.com/heapscope/heapscope"

// file is one benchmark file and the go test arguments that produce it.
type file struct {
	name string
	args []string
}

func main() {
	out := flag.String("out", "testdata/bench", "directory to write the files to")
	flag.Parse()
	leaky, optimized := module+"/examples/leakycache", module+"/examples/optimizedcache"
	common := []string{"test", "-run", "^$", "-benchmem", "-count", "10", "-benchtime", "20000x"}
	files := []file{
		{"leakycache.txt", append(common, "-bench", "^BenchmarkWorker_Process$", leaky)},
		{"optimizedcache.txt", append(common, "-bench", "^BenchmarkWorker_Process$", optimized)},
		{"services-a.txt", append(common, "-bench", "Worker_Process", "-cpu", "1,2", leaky, optimized)},
		{"services-b.txt", append(common, "-bench", "Worker_Process", "-cpu", "1,2", leaky, optimized)},
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	for _, f := range files {
		if err := write(filepath.Join(*out, f.name), f.args); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}

// write runs go with args and writes its standard output to path.
func write(path string, args []string) error {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %v: %w: %s", args, err, stderr.Bytes())
	}
	return os.WriteFile(path, stdout.Bytes(), 0o644)
}
