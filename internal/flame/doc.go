// Package flame draws flame graphs of pprof profiles, with no external
// tool: a tree model, renderers to SVG, interactive HTML and folded
// stacks, and differential graphs.
//
// The steps:
//
//  1. Build turns a profile aggregated by stack (pprofx.Stacks, from
//     pprofx.ReadStacks or pprofx.StacksOf) into a Tree: one node per
//     function along each path from the root, with its values for one or
//     every sample type, filtered by Options.Focus and Options.Ignore and
//     pruned below Options.MinShare. Every node's Total is its Self plus
//     its children's Totals plus the value of pruned children (Elided).
//  2. Optionally, Diff colours the new profile's tree by its change
//     against a base profile's (by absolute value or by share of the total,
//     normalised by duration or requests when the caller knows them), and
//     Vanished draws the base's shape with the new values, so stacks that
//     vanished stay visible. Prune trims a tree after the fact.
//  3. WriteSVG writes a self-contained SVG in the tradition of
//     flamegraph.pl (zoom, search, tooltips; works from disk), WriteHTML a
//     page of canvas widgets (zoom, search, tooltips, reset, flame/icicle,
//     view and sample-type switches) that stays smooth with hundreds of
//     thousands of frames, and WriteFolded / WriteFoldedDiff the folded
//     stacks other tools read. WriteHTMLAssets and WriteHTMLWidget embed
//     widgets in a larger page, such as a comparison's report, and
//     WriteHTMLHead opens such a page as WriteHTML opens its own.
//
// Frames are coloured by whose code they run (Kind): the application's,
// its dependencies', the standard library's or the runtime's.
//
// Everything here is pure: stacks and trees in, bytes out. The script and
// style of the SVG and HTML outputs are plain files under assets/,
// embedded with go:embed; there is no JavaScript build step.
//
// Build sorts stacks level by level instead of inserting them into a
// trie: a frame pruned for being too small costs nothing below it, so an
// SVG of a 50 MB heap profile only walks the stacks that reach frames
// worth drawing. The small profiles under testdata are written by a real
// Go runtime (go generate runs internal/gen); regenerate the golden files
// with go test -update.
package flame

//go:generate go run -trimpath ./internal/gen -out testdata
