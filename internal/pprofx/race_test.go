//go:build race

package pprofx

// raceDetector says the race detector is on: its instrumentation, and a
// sync.Pool that drops a quarter of what is put back, make the same code
// allocate more, which allocation bounds allow for.
const raceDetector = true
