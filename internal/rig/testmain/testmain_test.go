package testmain

import (
	"testing"

	"github.com/mailagent/mailagent/internal/rig/testsize"
)

type fakeM int

func (m fakeM) Run() int { return int(m) }

// TestRunFailsOnALeftGoroutine: a goroutine still running after the
// tests fails the binary, and it does not exit at once.
func TestRunFailsOnALeftGoroutine(t *testing.T) {
	// sequential: goleak sees every goroutine of the process, and the
	// parallel tests' would be counted as this one's leak.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { <-stop; close(done) }()
	exited := false
	code := run(fakeM(0), func() { exited = true })
	close(stop)
	<-done
	if code != 1 || exited {
		t.Fatalf("with a goroutine left: code %d, exited at once %v; want 1 and the ordinary exit", code, exited)
	}
	// Control: the same run once the goroutine has ended passes.
	if code := run(fakeM(0), func() {}); code != 0 {
		t.Fatalf("with no goroutine left: code %d, want 0", code)
	}
}

// TestRunPassesFailuresThrough: a failing binary keeps its code and the
// ordinary exit.
func TestRunPassesFailuresThrough(t *testing.T) {
	t.Parallel()
	exited := false
	if code := run(fakeM(3), func() { exited = true }); code != 3 || exited {
		t.Fatalf("code %d, exited at once %v; want 3 and the ordinary exit", code, exited)
	}
}

// TestRunExitsAtOnceOnlyUnderRace: a passing binary with nothing left
// exits at once under the race detector, and the ordinary way without it.
func TestRunExitsAtOnceOnlyUnderRace(t *testing.T) {
	// sequential: goleak sees every goroutine of the process.
	exited := false
	if code := run(fakeM(0), func() { exited = true }); code != 0 {
		t.Fatalf("code %d, want 0", code)
	}
	if exited != (testsize.Race && testing.CoverMode() == "") {
		t.Fatalf("exited at once %v with race %v, cover mode %q", exited, testsize.Race, testing.CoverMode())
	}
}

func TestMain(m *testing.M) { Run(m) }
