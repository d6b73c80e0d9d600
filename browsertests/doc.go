// Package browsertests drives heapscope's pages in headless Chromium: the
// SVG and HTML flame graphs, a run's report.html and the compare.html of
// two runs, opened from disk, zoomed, searched and captured. The runs are
// real: short profiles of the bundled example services, each served by the
// test binary re-executed as a child process, or built from their own
// commands as their users build them (the watch of a leaking and a
// healthy service, whose pages must name the leaking service's own line).
// It is a module of its own so that chromedp, which only these
// tests need, does not weigh on the main module; a replace directive points
// it at the main module in the parent directory.
//
// The tests need Debian's chromium package (or $CHROMIUM naming a Chromium
// or Chrome binary); .ci/run installs it. Run them with
//
//	cd browsertests && go test ./...
package browsertests
