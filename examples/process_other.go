//go:build !linux

package examples

import "syscall"

// childProcAttr puts the example in its own process group, so that a
// Ctrl-C at the terminal reaches the parent alone, which stops the example
// in order.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
