package testserver

import "syscall"

// childProcAttr puts the server in its own process group and has the
// kernel kill it should the test binary die first. The signal is set after
// the credentials change, so it holds for a server run as another user.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
