// Package escape explains why values live on the heap: it runs the Go
// compiler's escape analysis over a module (go build -gcflags=-m=2) and
// indexes its verdicts by source line, so a hot allocation site found in a
// profile can carry the compiler's reason ("make([]byte, n) escapes to heap",
// "moved to heap: u", and the flow that leads there).
//
// The pipeline has two steps:
//
//  1. [Analyze] builds the packages of a module directory with -m=2 (the go
//     command's build cache replays the compiler's output, so a second
//     analysis of an unchanged module costs little) and streams the output
//     into [Parse].
//  2. [Parse] keeps the notes that explain heap allocations, with their flow
//     lines, and drops the rest (inlining decisions, leaking parameters).
//
// [Report.At] then answers for one file and line, matching the file by its
// module-relative path, so profiles built with or without -trimpath match.
package escape
