package storm

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
// end-to-end test is disabled and nothing was built).
var binary string

func TestMain(m *testing.M) {
	testmain.Run(testmain.RunFunc(func() int { return run(m) }))
}

func run(m *testing.M) int {
	flag.Parse()
	if err := testsize.NoExitSleepInChildren(); err != nil {
		fmt.Fprintf(os.Stderr, "storm: %v\n", err)
		return 1
	}
	if os.Getenv("MAILAGENT_E2E") != "1" || testing.Short() {
		return m.Run() // the storm skips
	}
	dir, err := os.MkdirTemp("", "mailagent-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "storm: temp dir: %v\n", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	binary = filepath.Join(dir, "mailagent")
	if err := build(binary); err != nil {
		fmt.Fprintf(os.Stderr, "storm: %v\n", err)
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
