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
// per CPU, unless -parallel says otherwise: many of them mostly wait (the
// due-loop tests on their timers, for seconds each; the kill -9 test on
// its children), and at go test's default of one per CPU they held the
// slots while the CPUs idled: the package took about twice as long as it
// computed. Not more than two: the due-loop tests time their sends to
// within a second, and at four per CPU the CPU-bound tests beside them
// made one late on a loaded machine.
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
