//go:build !unix

package store

import (
	"os"
	"time"
)

// lockExclusive is a no-op where bbolt does not use flock.
func lockExclusive(*os.File, time.Duration) error { return nil }

// lockShared is a no-op where bbolt does not use flock.
func lockShared(*os.File, time.Duration) error { return nil }
