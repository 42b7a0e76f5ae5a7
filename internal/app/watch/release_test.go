package watch

import (
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/mailagent/mailagent/store"
)

// TestReleaseStartupLeavesAnExplicitGOGC: with GOGC unset, watch's
// start-up release sets its own GC percent (50) and forces a collection;
// with GOGC set, it does neither (the database pages are released either
// way). Not parallel: it sets GOGC and reads and sets the process's GC
// percent and counts its forced collections.
func TestReleaseStartupLeavesAnExplicitGOGC(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "mailagent.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	forced := func() uint32 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.NumForcedGC
	}
	for _, tc := range []struct {
		name        string
		gogc        string
		wantPercent int
		wantForced  bool
	}{
		{"GOGC unset", "", 50, true},
		{"GOGC set", "100", 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			debug.SetGCPercent(100)
			before := forced()
			releaseStartup(st, log)
			if got := forced() > before; got != tc.wantForced {
				t.Errorf("forced collection: got %v, want %v", got, tc.wantForced)
			}
			if got := debug.SetGCPercent(100); got != tc.wantPercent {
				t.Errorf("GC percent: got %d, want %d", got, tc.wantPercent)
			}
		})
	}
}
