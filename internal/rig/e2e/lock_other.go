//go:build !unix

package e2e

import "testing"

// Without flock, restarts are not coordinated between test binaries.
func holdSharedLock(testing.TB, string) {}

func withExclusiveLock(_ testing.TB, _ string, fn func()) { fn() }
