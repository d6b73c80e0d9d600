package examples

import "syscall"

// childProcAttr puts the example in its own process group, so that a
// Ctrl-C at the terminal reaches the parent alone (which stops the example
// in order), and has the kernel kill it should the parent die first (a
// second Ctrl-C, a crash), so no example outlives the parent.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
