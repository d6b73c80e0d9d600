//go:build !linux

package testserver

import "syscall"

// childProcAttr puts the server in its own process group.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
