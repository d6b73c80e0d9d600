// Package diagnose turns what a profiling run collected into findings: a
// named problem at a function and file:line, the numbers behind it, a fix
// and a confidence.
//
// Run takes values only (the run's summary, parsed profiles, the end
// MemStats, a source reader the caller fills) and returns findings and
// notes; it reads no file, network or clock, so every check is tested on
// synthetic and recorded inputs. The checks, each in its own file:
//
//  1. leak.inuse-growth: inuse_space per site and per stack growing
//     steadily across ≥ 3 heap snapshots of one process (growth.go);
//  2. leak.goroutine-growth: goroutines per stack growing across ≥ 3
//     goroutine profiles (growth.go);
//  3. alloc.hot-spot: allocation sites ranked by absolute cost — bytes
//     and objects per second and per request, estimated GC CPU (hotspot.go);
//  4. pattern.*: known costly patterns from allocation stacks, CPU frames
//     and the source line (patterns.go);
//  5. gc.pressure and gc.pause: GC frequency, CPU share and pauses, with
//     GOGC/GOMEMLIMIT advice and the sites that cause it (gc.go);
//  6. rss.breakdown: the kernel's view of resident memory beside the
//     runtime's, reconciled (rss.go);
//  7. contention.lock: delay per second from block and mutex profiles
//     (contention.go);
//  8. escape-analysis explanations attached to findings through the
//     Escapes hook, when the service's source is at hand;
//  9. regression.*: known runtime and library memory regressions matched
//     against the target's Go and module versions (regressions.go, with
//     the list itself in regressions.yaml).
//
// Every threshold is a field of Thresholds, with its default and the
// reason for it in one place (thresholds.go); a YAML file overrides them.
// docs/findings.md is the catalogue of finding ids.
//
// Besides synthetic series, the tests read real ones: heap snapshots of
// the leaky and the optimized cache under load, recorded into
// testdata/series by the program in testdata/gen (from this directory:
// go run -trimpath ./testdata/gen; about 10 s once built, 100 KB of
// profiles).
package diagnose
