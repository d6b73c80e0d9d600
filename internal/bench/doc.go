// Package bench compares the output of go test -bench -benchmem between an
// old and a new version of some code, and gates CI on regressions.
//
// Compare is the pure core, in steps:
//
//  1. read both inputs with golang.org/x/perf/benchfmt (configuration
//     lines, sub-benchmarks, custom units, -count repetitions); lines that
//     do not parse come back as warnings, an input without a single
//     benchmark result is an error;
//  2. group the results as benchstat does, with golang.org/x/perf/benchproc:
//     one table per file configuration (goos, goarch, pkg, cpu, …) and
//     unit, one row per full benchmark name, keys named in Options.Ignore
//     left out of the grouping;
//  3. summarise each side and compare the two with
//     golang.org/x/perf/benchmath under the unit's assumption: the median
//     with its confidence interval and a Mann-Whitney U test, or the exact
//     value for units declared exact. Deltas, p-values and the "~" of an
//     insignificant change are benchstat's own (a test runs benchstat on
//     the same files and checks);
//  4. evaluate the gates (ParseGate): a gate fails only when a delta is
//     significant and beyond its threshold; a delta beyond the threshold
//     that is not significant is a warning.
//
// The Report holds every number, the decisions and the warnings as data,
// and encodes itself as JSON; report.Bench renders it (text, Markdown,
// JSON, JUnit XML). Gates and their outcomes are internal/gate's.
//
// Run is the side-effecting half behind heapscope bench run: it runs the
// benchmarks of a working tree and of a git ref checked out in a temporary
// worktree, alternately, then compares them, and for every benchmark whose
// B/op or allocs/op grew significantly reruns it once per side with a
// memory profile and attributes the change to allocation sites (Attribute).
// Git and go test are reached through the Toolchain interface; ExecToolchain
// is the real one.
//
// The benchmark files under testdata/bench are real go test output of the
// bundled example services: regenerate them with go generate, then refresh
// the golden files with go test -update (here and in internal/report).
package bench

//go:generate go run ./internal/gen -out testdata/bench
