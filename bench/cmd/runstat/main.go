//go:build unix

// Command runstat runs a command once and prints what it cost: wall time
// in seconds, peak resident memory in KiB and CPU time (user + system) in
// seconds, on one line, for the scripts under bench/.
//
//	runstat -- go tool pprof -top heap.pb.gz
//	0.412 152340 0.520
//
// The command's standard output is discarded (or written to -stdout FILE);
// its standard error is passed through. runstat exits with the command's
// status when the command fails. Peak memory is the rusage maximum
// resident set size, in KiB on Linux.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	stdout := flag.String("stdout", "", "file to write the command's standard output to (default: discard)")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: runstat [-stdout FILE] -- command [args...]")
		os.Exit(2)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout = io.Discard
	if *stdout != "" {
		f, err := os.Create(*stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "runstat:", err)
			os.Exit(2)
		}
		defer f.Close()
		cmd.Stdout = f
	}
	cmd.Stderr = os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "runstat:", err)
		os.Exit(2)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "runstat: no resource usage on this system")
		os.Exit(2)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	// Maxrss is in KiB on Linux.
	fmt.Printf("%.3f %d %.3f\n", wall.Seconds(), ru.Maxrss, cpu.Seconds())
	if exit != nil {
		os.Exit(exit.ExitCode())
	}
}
