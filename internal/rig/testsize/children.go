package testsize

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// NoExitSleepInChildren makes the race-detector programs this test binary
// starts (itself as a command, a mailagent built with -race, a crash
// test's child) exit at once: by default every one of them sleeps a second
// on exit (GORACE's atexit_sleep_ms=1000, to catch races of goroutines
// still running), and a package that starts hundreds waits minutes for
// nothing. The children's own races are still reported as they happen.
// Call it from TestMain, before any test runs; it keeps any GORACE
// options already set, and an atexit_sleep_ms among them.
func NoExitSleepInChildren() error {
	cur := os.Getenv("GORACE")
	if strings.Contains(cur, "atexit_sleep_ms") {
		return nil
	}
	return os.Setenv("GORACE", strings.TrimSpace(cur+" atexit_sleep_ms=0"))
}

// DefaultParallel sets -test.parallel to n unless the command line set
// it: go test's default, GOMAXPROCS, suits tests that use the CPU, and a
// package whose tests mostly wait (on servers, undo windows, children)
// says how many of them may wait at once. Call it from TestMain after
// flag.Parse.
func DefaultParallel(n int) error {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if set {
		return nil
	}
	if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
		return fmt.Errorf("set -test.parallel: %w", err)
	}
	return nil
}
