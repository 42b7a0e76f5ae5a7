// Package testmain is every test binary's TestMain: each package with
// tests calls Run from its TestMain (internal/rig/archtest checks that
// they all do).
//
// Contract:
//   - Run runs the tests, then fails the binary when a goroutine the tests
//     started is still running (go.uber.org/goleak, which waits a moment
//     for goroutines that are ending): every goroutine has an owner that
//     stops it, and a test that leaves one behind has lost that owner.
//   - Under the race detector, when the tests passed and none of their
//     goroutines is left, the binary exits without the detector's
//     one-second grace sleep (GORACE atexit_sleep_ms, default 1000). That
//     sleep only gives goroutines still running a chance to report a race;
//     races during the tests have already failed them (testing checks the
//     detector's count after each test and at the end), and no goroutine is
//     left to race. Two cores ran about 80 such sleeps per `go test -race
//     ./...`, some 40 s of the run. A failing or leaking binary, or one
//     writing a coverage profile, exits the ordinary way, sleep and all.
package testmain

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/mailagent/mailagent/internal/rig/testsize"
)

// libraryGoroutines are goroutines of libraries that outlive their owner
// by design and end by themselves; each with why.
var libraryGoroutines = []goleak.Option{
	// bubbletea's Tick command waits for its timer in a goroutine of its
	// own even after the program quit; it ends when the timer fires (the
	// TUI's ticks are at most a few seconds).
	goleak.IgnoreTopFunction("charm.land/bubbletea/v2.Tick.func1"),
	// The goroutine of a batch of commands waits for each of them, such a
	// Tick among them.
	goleak.IgnoreAnyFunction("charm.land/bubbletea/v2.(*Program).execBatchMsg"),
	// teatest's NewTestModel waits for a SIGINT in a goroutine that
	// nothing stops, one per test model.
	goleak.IgnoreTopFunction("github.com/charmbracelet/x/exp/teatest/v2.NewTestModel.func2"),
}

// M runs a package's tests and returns the exit code: a *testing.M, or a
// RunFunc that sets up around it.
type M interface{ Run() int }

// RunFunc is an M from a function: a TestMain that starts something
// before the tests and stops it after passes
// testmain.RunFunc(func() int { start(); defer stop(); return m.Run() }),
// so that what it stopped is not counted as left running.
type RunFunc func() int

// Run calls f.
func (f RunFunc) Run() int { return f() }

// Run runs m's tests and exits with their result: see the package
// contract. Call it last in TestMain, in place of os.Exit(m.Run()).
func Run(m M) {
	os.Exit(run(m, exitAtOnce))
}

// run is Run up to the exit: the exit code, or no return at all when
// exit (exitAtOnce) ended the process.
func run(m M, exit func()) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	if err := goleak.Find(libraryGoroutines...); err != nil {
		fmt.Fprintf(os.Stderr, "testmain: goroutines outlived the tests (each needs an owner that stops it: a context, a Close, a t.Cleanup):\n%v\n", err)
		return 1
	}
	if testsize.Race && testing.CoverMode() == "" {
		exit()
	}
	return 0
}

// exitAtOnce ends a passing race-detector binary without the detector's
// finalizer, and so without its grace sleep: syscall.Exit is the exit
// os.Exit makes after its hooks (coverage, when on, is excluded above)
// and the detector's finalizer.
func exitAtOnce() { syscall.Exit(0) }
