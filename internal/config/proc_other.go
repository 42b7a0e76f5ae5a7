//go:build !unix

package config

import "os/exec"

// setProcessGroup is a no-op where process groups do not exist; WaitDelay
// still bounds the wait.
func setProcessGroup(*exec.Cmd) {}
