//go:build !linux

package main

import (
	"fmt"
	"runtime"
)

// rssSupported reports whether rss can read processes here: it reads
// /proc, which only Linux has.
func rssSupported() error {
	return fmt.Errorf("rss reads /proc/PID/smaps: Linux only (this is %s)", runtime.GOOS)
}
