package agente2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/internal/rig/testmain"
	"github.com/mailagent/mailagent/internal/rig/testsize"
)

// binary is the mailagent executable built by TestMain ("" when the
// end-to-end tests are disabled and nothing was built).
var binary string

func TestMain(m *testing.M) {
	testmain.Run(testmain.RunFunc(func() int { return run(m) }))
}

func run(m *testing.M) int {
	flag.Parse()
	if err := testsize.DefaultParallel(parallelTests); err != nil {
		fmt.Fprintf(os.Stderr, "agente2e: %v\n", err)
		return 1
	}
	if err := testsize.NoExitSleepInChildren(); err != nil {
		fmt.Fprintf(os.Stderr, "agente2e: %v\n", err)
		return 1
	}
	if os.Getenv("MAILAGENT_E2E") != "1" {
		return m.Run() // every test skips through e2e.Require
	}
	dir, err := os.MkdirTemp("", "mailagent-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "agente2e: temp dir: %v\n", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	binary = filepath.Join(dir, "mailagent")
	if err := build(binary); err != nil {
		fmt.Fprintf(os.Stderr, "agente2e: %v\n", err)
		return 1
	}
	return m.Run()
}

// build compiles ./cmd/mailagent from the repository root into out, with
// the race detector when this test binary has it.
func build(out string) error {
	root, err := e2e.FindRepoRoot()
	if err != nil {
		return err
	}
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/mailagent")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %w\n%s", args, err, b)
	}
	return nil
}

// parallelTests is how many tests run at once when go test is not told
// (-parallel): its default, GOMAXPROCS, suits tests that use the CPU, and
// these mostly wait on Postfix, Dovecot and IDLE (a whole -race run used a
// third of a core on average at 8). At 32 the start of as many -race
// binaries at once starved a loaded 2-core machine (tmux screens and
// watch --once missed their deadlines), and in CI another package's
// -race binary shares the two cores. The long waits do not queue for a
// slot (onEachServer). Each test has its own state directory, folders
// and fake model (newEnv).
const parallelTests = 8
