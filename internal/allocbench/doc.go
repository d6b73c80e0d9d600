// Package allocbench is heapscope's allocator lab: it runs a matrix of
// allocation patterns, each in a child process of its own, under several Go
// toolchains, and compares what the runtime accounts for with what the
// kernel keeps resident.
//
// The pipeline:
//
//  1. Matrix lists the patterns: object size (small, at most 32 KiB, or
//     large), pointer-holding or not, container (slice, buffered channel,
//     map), retained or short-lived, fully written or mostly untouched.
//  2. Lab.Prepare writes the child program (child/main.go, embedded) into a
//     module of its own whose go line is old enough for every toolchain,
//     and builds it with GOTOOLCHAIN set to the toolchain asked for, which
//     the go command fetches from the module proxy.
//  3. Build.Run runs one pattern: the child allocates it with the GC off,
//     prints runtime.MemStats as JSON and waits; meanwhile the lab reads the
//     child's VmRSS and, through sysmem.GoHeap, the resident size of its Go
//     heap mappings from /proc/PID/smaps.
//  4. Analyse (pure) turns the samples into medians with confidence
//     intervals per pattern and toolchain, and flags the patterns whose
//     heap RSS per heap byte differs between two toolchains both
//     significantly (Mann-Whitney U test, as benchstat) and by at least a
//     minimum effect.
//  5. report.Allocbench renders the report (text, Markdown, JSON, SVG,
//     HTML); ReadSaved reads its JSON back.
//
// Why the GC is off in the child: a GC cycle reads every pointer-holding
// object, and on kernels that do not map the shared zero page on a read
// fault (as on the machine this lab was developed on) that read alone makes
// untouched pages resident under every toolchain. With the GC off, what is
// resident is what the allocator and the program wrote, which is what
// differs between toolchains (golang/go#72991).
package allocbench
