package main

import (
	"fmt"
	"os"
	"testing"
)

// harnessVars are the variables every harness config names (the IMAP and
// SMTP password, the Gemini key), with the values the fakes expect.
var harnessVars = [][2]string{{"MA_TEST_IMAP_PASS", ownerPass}, {"MA_TEST_GEMINI_KEY", apiKey}}

// TestMain sets the harness's variables once for the whole process, so
// that a harness can be built in a parallel test (where t.Setenv panics).
func TestMain(m *testing.M) {
	for _, kv := range harnessVars {
		if err := os.Setenv(kv[0], kv[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// harnessEnv makes sure the harness's variables hold their values for t:
// a no-op when they already do (always, unless a sequential test changed
// them: then t.Setenv sets them back for t's duration). In a parallel
// test they must not have been changed, and t.Setenv says so by
// panicking.
func harnessEnv(t *testing.T) {
	t.Helper()
	for _, kv := range harnessVars {
		if v, ok := os.LookupEnv(kv[0]); !ok || v != kv[1] {
			t.Setenv(kv[0], kv[1])
		}
	}
}
