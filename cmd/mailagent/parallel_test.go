package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/testmain"
	"github.com/mailagent/mailagent/internal/rig/testsize"
)

// harnessVars are the variables every harness config names (the IMAP and
// SMTP password, the Gemini key), with the values the fakes expect.
var harnessVars = [][2]string{{"MA_TEST_IMAP_PASS", ownerPass}, {"MA_TEST_GEMINI_KEY", apiKey}}

// serviceManagerVars are the variables by which watch knows it runs under
// a service manager (systemd's INVOCATION_ID, launchd's LAUNCHD) and then
// keeps quiet on stderr. TestMain unsets them for the whole process, so
// that watch talks on a test's stand-in terminal (startWatch) even when
// go test itself runs under systemd, without a t.Setenv in the test,
// which would keep it out of the parallel tests.
// TestWatchQuietUnderServiceManager (sequential) sets them for itself.
var serviceManagerVars = []string{"INVOCATION_ID", "LAUNCHD"}

// waitingFactor is how many of this package's parallel tests run at once
// per CPU, unless -parallel says otherwise: most of their time is spent
// waiting (on loopback servers, undo windows, subprocesses, tmux), not
// computing, so go test's default of one per CPU would leave the CPUs
// idle behind a few tests that sleep. Four per CPU took the package alone
// from 54 s to 35–39 s on two cores, but gained nothing in a whole-tree
// run, where the other go test slot links and the CPUs are already busy,
// and timing tests missed their marks at that load beside the e2e stack
// (BENCHMARKS.md, issue 27's third and seventh sessions): two it stays.
const waitingFactor = 2

// TestMain sets the harness's variables once for the whole process, so
// that a harness can be built in a parallel test (where t.Setenv panics),
// unsets the service manager's (serviceManagerVars),
// runs waitingFactor parallel tests per CPU when -parallel is not given,
// and lets the race programs it starts (this binary as mailagent) exit
// without the race detector's one-second sleep.
func TestMain(m *testing.M) {
	for _, kv := range harnessVars {
		if err := os.Setenv(kv[0], kv[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	for _, k := range serviceManagerVars {
		if err := os.Unsetenv(k); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if os.Getenv(cliEnv) != "1" {
		// One process, many commands at once: watch's start-up percent
		// and forced collection, and a batch run's percent, would apply
		// to all of them (a full collection of the shared heap at each
		// of some 200 watch starts). An explicit GOGC, the runtime's
		// default unless go test was given one, leaves the collector
		// alone (and is what the programs started from here inherit).
		if os.Getenv("GOGC") == "" {
			if err := os.Setenv("GOGC", "100"); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		flag.Parse()
		if err := testsize.DefaultParallel(waitingFactor * runtime.GOMAXPROCS(0)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := testsize.NoExitSleepInChildren(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	testmain.Run(m)
}

// harnessEnv makes sure the harness's variables hold their values for t:
// a no-op when they already do (always, unless a sequential test changed
// them: then t.Setenv sets them back for t's duration). In a parallel
// test they must not have been changed, and t.Setenv says so by
// panicking.
func harnessEnv(t *testing.T) {
	t.Helper()
	// parallel-safe: t.Setenv runs only when a sequential test changed a
	// variable, and panics if that ever happens in a parallel test.
	for _, kv := range harnessVars {
		if v, ok := os.LookupEnv(kv[0]); !ok || v != kv[1] {
			t.Setenv(kv[0], kv[1])
		}
	}
}

// cliBinary returns the path of a mailagent executable for a test that
// needs one on disk (a client that starts `mailagent mcp` itself): a
// script that runs this test binary as the command (cliEnv), built as the
// tests are (with -race under -race), instead of a go build of its own.
func cliBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "mailagent")
	quoted := "'" + strings.ReplaceAll(self, "'", `'\''`) + "'"
	script := "#!/bin/sh\n" + cliEnv + "=1 exec " + quoted + " \"$@\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return bin
}

// refusedPort is a loopback port that refuses connections for the rest
// of the test: a socket bound to it that never listens. A port merely
// closed a moment ago is no such thing: another listener may take it, or
// a connection to it from the ephemeral range may pick it as its own
// source port and connect to itself, and then a client waits out its
// greeting timeout (two minutes) instead of being refused.
func refusedPort(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}
