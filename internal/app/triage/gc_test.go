package triage

import (
	"runtime/debug"
	"testing"
)

// gcSettings reads the collector's percentage and memory limit without
// changing them.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// TestBatchGC: a batch run collects at triageGOGC under a soft limit of
// batchMemLimit and puts both back when it ends; a GOGC or GOMEMLIMIT
// the user set is left alone.
func TestBatchGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	p0, l0 := gcSettings()
	restore := BatchGC()
	if p, l := gcSettings(); p != triageGOGC || l != batchMemLimit {
		t.Errorf("during the run: GOGC %d, limit %d; want %d, %d", p, l, triageGOGC, batchMemLimit)
	}
	restore()
	if p, l := gcSettings(); p != p0 || l != l0 {
		t.Errorf("after the run: GOGC %d, limit %d; want %d, %d back", p, l, p0, l0)
	}

	t.Setenv("GOGC", "50")
	t.Setenv("GOMEMLIMIT", "100MiB")
	restore = BatchGC()
	if p, l := gcSettings(); p != p0 || l != l0 {
		t.Errorf("with GOGC and GOMEMLIMIT set: GOGC %d, limit %d; want them untouched (%d, %d)", p, l, p0, l0)
	}
	restore()
}
