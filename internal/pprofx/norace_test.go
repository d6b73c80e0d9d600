//go:build !race

package pprofx

// raceDetector says the race detector is on (see race_test.go).
const raceDetector = false
