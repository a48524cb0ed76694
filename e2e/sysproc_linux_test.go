package e2e

import "syscall"

// sysProcAttr makes a server subprocess die with the test process, so that a test
// binary killed by a timeout leaves no tsdb or Prometheus behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
