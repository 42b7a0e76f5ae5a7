package daemon

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/testmain"
	"github.com/mailagent/mailagent/internal/rig/testsize"
)

// waitingFactor is how many of this package's parallel tests run at once
// per CPU, unless -parallel says otherwise: some of them mostly wait (the
// kill -9 test and the idle scheduler's measurement on their child
// processes), and at go test's default of one per CPU they held the slots
// while the CPUs idled. (The due-loop tests, which timed their sends to
// within a second of real time and at four per CPU were once made late by
// the CPU-bound tests beside them, now run on a testing/synctest clock.)
const waitingFactor = 2

// TestMain sets -parallel (waitingFactor) and runs the tests through
// testmain.Run.
func TestMain(m *testing.M) {
	flag.Parse()
	if err := testsize.DefaultParallel(waitingFactor * runtime.GOMAXPROCS(0)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testmain.Run(m)
}
