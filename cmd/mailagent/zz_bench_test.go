package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// BenchmarkTriageIngest runs `mailagent triage` in process, exactly as the
// binary does, against the configuration scripts/bench-ingest.sh writes
// (the e2e Dovecot and a zero-latency fake Gemini), with a fresh state
// directory per iteration. It exists to be profiled:
//
//	BENCH_PROFILE=1 bash scripts/bench-ingest.sh
//
// which runs
//
//	MAILAGENT_BENCH_CONFIG=... MAILAGENT_BENCH_STATE=... \
//	  go test -run x -bench TriageIngest -benchtime 1x -cpuprofile cpu.out ./cmd/mailagent
//
// Without MAILAGENT_BENCH_CONFIG it is skipped.
func BenchmarkTriageIngest(b *testing.B) {
	cfg, state := os.Getenv("MAILAGENT_BENCH_CONFIG"), os.Getenv("MAILAGENT_BENCH_STATE")
	if cfg == "" || state == "" {
		b.Skip("set MAILAGENT_BENCH_CONFIG and MAILAGENT_BENCH_STATE (scripts/bench-ingest.sh with BENCH_PROFILE=1 does)")
	}
	for b.Loop() {
		b.StopTimer()
		if err := os.RemoveAll(state); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		var out, errb bytes.Buffer
		if code := Main([]string{"--config", cfg, "triage"}, strings.NewReader(""), &out, &errb); code != 0 && code != ExitPartial {
			b.Fatalf("triage: exit %d\n%s", code, errb.String())
		}
	}
}
