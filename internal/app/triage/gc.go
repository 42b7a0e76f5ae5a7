package triage

import (
	"os"
	"runtime/debug"
)

// BatchGC sets the garbage collector for a batch run (triage, replay)
// and returns what restores it. The live heap of one is small (the
// threader, the records held for the next commit), so the collector runs
// when the heap is triageGOGC % above it, not 100 %: that saves about a
// third of triage's CPU at 400 (some 35 MB more at peak) and a tenth more
// at 800 (some 80 MB more; BENCHMARKS.md, section 2). A soft memory limit
// makes the collector work harder before the heap passes batchMemLimit,
// whatever the mailbox's size. An explicit GOGC or GOMEMLIMIT wins.
func BatchGC() (restore func()) {
	restore = func() {}
	if os.Getenv("GOGC") == "" {
		old := debug.SetGCPercent(triageGOGC)
		restore = func() { debug.SetGCPercent(old) }
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		old := debug.SetMemoryLimit(batchMemLimit)
		prev := restore
		restore = func() { debug.SetMemoryLimit(old); prev() }
	}
	return restore
}

const (
	// triageGOGC is the garbage collector's target percentage during a
	// batch run.
	triageGOGC = 800
	// batchMemLimit is the soft memory limit of a batch run.
	batchMemLimit = 1 << 30
)
