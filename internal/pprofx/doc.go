// Package pprofx holds profile helpers on top of
// github.com/google/pprof/profile: parsing within limits (Parse,
// ParseWithin), sample type lookup (Types, SampleIndex), the allocations of a
// window from two heap profiles (AllocDelta), a profile aggregated by stack
// (Stacks, from ReadStacks or StacksOf), top sites by source line
// (Top, Stacks.Top), and profiles of one type merged one at a time
// (Merger).
//
// Everything here is pure: profiles and bytes in, values out.
//
// Parsing a profile from an untrusted source costs little however hostile
// it is. profile.Parse holds the decompressed bytes and then the decoded
// profile, 10 to 25 times their size, and a valid profile that repeats
// one sample compresses hundreds of times: 50 KB of gzip can ask for
// gigabytes. ParseWithin first streams the input, decompressing it if
// need be, through an estimate of what profile.Parse will allocate for
// it (decodeCost, tested against runtime.MemStats on real and made-up
// profiles), holding nothing but a read buffer; beyond
// Limits.MaxDecompressed or Limits.MaxDecoded it returns a
// *TooLargeError before decoding. Served as a heap profile to heapscope
// profile (bench/hostile-targets.sh), a gzip bomb that took 1 GB of RSS on
// its way to being refused now takes 27 MB, and one sample repeated over
// 15 MiB of protobuf, which took 1.9 GB, 340 to 450 MB (the run keeps the
// first snapshot and refuses the others, over its limit together); in a
// run directory, the bomb took diagnose 1 GB, now 23 MB.
//
// ReadStacks is a streaming decoder beside profile.Parse: it reads the
// protobuf field by field, with profile.Parse's wire-type and validity
// checks, and keeps only what aggregation needs (distinct stacks of dense
// location indices in chunks, their values, the location and function
// tables), resolving ids and strings at the end since the Go runtime writes
// samples before the locations, functions and strings they refer to. On a
// 54 MB heap profile (190 MB of protobuf, 2.2 million stacks of 20 to 60
// frames) it needs about 0.8 GB where profile.Parse alone needs several
// times that, and it reads it in about 2 s on a 2-core machine, with gzip
// decompression in a goroutine of its own. Its results are tested equal to
// StacksOf of profile.Parse's profile on every test profile, and
// FuzzReadStacks checks that both accept the same inputs (but for
// profiles over Parse's decoded limit: merged by stack they may be cheap).
// heapscope top and heapscope flame read profiles through it; diagnose
// reads a series unmerged, within the decoded limit of Parse
// (ReadOptions.MaxDecoded), as it turns some snapshots into profiles.
//
// Merger merges profiles as profile.Merge does (go tool pprof -proto a b
// c), for the server's merge of a range of stored profiles, through the
// same decoder: Add decodes one profile, keeping what a merged profile
// needs beyond the stacks (labels, mappings, columns, comments), folds
// its samples into the aggregate and drops it, reusing the decoder's
// buffers and tables for the next. Its memory follows the distinct
// samples of all the profiles, not their number: 96 heap profiles of
// one service (a day at one per 15 minutes, 39 MB of gzip) merge in
// about 1 s within 25 MB of RSS, where go tool pprof -proto takes 7 s and
// 3.3 GB, holding the inputs decoded together (bench/merge-vs-pprof.sh,
// docs/performance.md). WriteProfile writes the aggregate as a gzipped
// profile that profile.Parse reads as what profile.Merge returns, id for
// id (tested on real profiles of every kind, and by FuzzMergerAdd on
// arbitrary input); WriteFolded writes folded stacks, the lines
// flame.WriteFolded writes for the same profile unpruned.
//
// Top aggregates samples itself: pprof's graph and report packages are
// internal to its module. It does one pass over the stacks with
// per-location tables built on first sight, so its cost does not grow with
// allocations per sample; it matches the map-per-sample version in the
// tests (BenchmarkTop_reference) exactly. Top of a parsed profile goes
// through StacksOf, so both paths share one aggregation core.
//
// The heap profiles under testdata are written by a real Go runtime:
// regenerate them with go generate, then refresh the golden tables with
// go test -update.
package pprofx

//go:generate go run -trimpath ./internal/gen -out testdata
