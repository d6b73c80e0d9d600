//go:build !linux

package main

import "syscall"

// exampleProcAttr puts the example in its own process group, so that a
// Ctrl-C at the terminal reaches heapscope alone, which stops the example in
// order, after the report.
func exampleProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
