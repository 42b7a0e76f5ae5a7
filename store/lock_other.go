//go:build !unix

package store

import "os"

// lockExclusive is a no-op where bbolt does not use flock.
func lockExclusive(*os.File) error { return nil }
