// Package compare puts profiling runs side by side: before and after a
// change, one run per side or several.
//
// Compare takes the runs of each side (their result.json values and
// allocs-delta profiles) and returns a Comparison:
//
//  1. the headline figures of result.Figures, each side's median and range,
//     with absolute and relative deltas;
//  2. notes where the runs differ in more than the code under test
//     (duration, target, load, Go version, dependency versions, runtime
//     settings);
//  3. per-site deltas of the allocs-delta profiles, normalised per request
//     when both sides ran load (per second otherwise): the sites that grew
//     most and shrank most, by function and file:line;
//  4. the findings that appeared and disappeared;
//  5. with several runs on a side, a Mann-Whitney U test (benchmath, as
//     benchstat) for every figure and every site, so that only changes
//     outside noise are marked significant;
//  6. the gates' decisions (gate.Gate on figures by their JSON name).
//
// The package is pure: values in, a value out. Reading run directories is
// internal/run's; rendering is internal/report's.
package compare
