package main

import "syscall"

// exampleProcAttr puts the example in its own process group, so that a
// Ctrl-C at the terminal reaches heapscope alone (which stops the example in
// order, after the report), and has the kernel kill it should heapscope
// die first (a second Ctrl-C, a crash), so no example outlives a demo.
func exampleProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
