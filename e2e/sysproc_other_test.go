//go:build !linux

package e2e

import "syscall"

// sysProcAttr: only Linux can tie a subprocess' life to the test process.
func sysProcAttr() *syscall.SysProcAttr { return nil }
