package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// TestReplayThroughput measures `replay --fresh` against `triage
// --dry-run` on the same mail: the first 5,000 messages of the
// SpamAssassin corpus in an imapmemserver INBOX, with owner replies in
// Sent to every fifth, the zero-latency Gemini fake, llm.concurrency 3.
// Runs alternate; it prints each time, the best and the median, and the
// ratios (BENCHMARKS.md, "Replay throughput"). Skipped unless
// MAILAGENT_BENCH_REPLAY=1 (RUNS sets the number of rounds, default 3):
//
//	MAILAGENT_BENCH_REPLAY=1 RUNS=5 [MAILAGENT_CORPORA=dir] go test -run TestReplayThroughput -v ./cmd/mailagent
func TestReplayThroughput(t *testing.T) {
	t.Parallel()
	if os.Getenv("MAILAGENT_BENCH_REPLAY") != "1" {
		t.Skip("set MAILAGENT_BENCH_REPLAY=1 to run the replay benchmark")
	}
	runs := 3
	if n, err := strconv.Atoi(os.Getenv("RUNS")); err == nil && n > 0 {
		runs = n
	}
	dir := os.Getenv("MAILAGENT_CORPORA") // else ../shared/corpora beside the repository
	if dir == "" {
		dir = e2e.CorpusDir(t)
	}
	var files []string
	for _, sub := range []string{"easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"} {
		m, _ := filepath.Glob(filepath.Join(dir, "spamassassin", sub, "*"))
		files = append(files, m...)
	}
	slices.Sort(files)
	const total = 5000
	if len(files) < total {
		t.Skipf("corpus has %d messages, want %d", len(files), total)
	}
	h := newHarness(t, classifyReply, "")
	ctx := context.Background()
	now := time.Now()
	replies := 0
	for i, f := range files[:total] {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raw = e2e.StripMboxFrom(raw)
		if _, err := h.imap.Append(ctx, ownerAddr, "INBOX", raw, nil, now); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if i%5 != 0 {
			continue
		}
		m := mail.Parse(raw)
		if m.From.Email == "" || m.Synthesized {
			continue
		}
		re := fmt.Sprintf("From: Ada <ada@example.com>\r\nTo: %s\r\nSubject: Re: x\r\nIn-Reply-To: <%s>\r\nMessage-ID: <r%d@example.com>\r\nDate: %s\r\n\r\nThanks, noted.\r\n",
			m.From.Email, m.MessageID, i, now.Format(time.RFC1123Z))
		if _, err := h.imap.Append(ctx, ownerAddr, "Sent", []byte(re), nil, now); err != nil {
			t.Fatal(err)
		}
		replies++
	}
	var tri, rep []time.Duration
	for r := range runs {
		start := time.Now()
		if _, stderr, code := h.run("triage", "--dry-run"); code != 0 && code != ExitPartial {
			t.Fatalf("triage: exit %d: %s", code, stderr)
		}
		tri = append(tri, time.Since(start))
		start = time.Now()
		out, stderr, code := h.run("replay", "--fresh", "--json")
		if code != 0 {
			t.Fatalf("replay: exit %d: %s", code, stderr)
		}
		rep = append(rep, time.Since(start))
		j := decodeReplay(t, out)
		if j.Messages != total {
			t.Fatalf("replay scored %d messages, want %d", j.Messages, total)
		}
		t.Logf("round %d: triage --dry-run %.3f s, replay %.3f s (owner replied to %d, precision %v)", r+1,
			tri[r].Seconds(), rep[r].Seconds(), j.Owner.Replied, ptrStr(j.NeedsReply.Precision))
	}
	best := func(d []time.Duration) time.Duration { return slices.Min(d) }
	median := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		if len(s)%2 == 1 {
			return s[len(s)/2]
		}
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	secs := func(d []time.Duration) string {
		parts := make([]string, len(d))
		for i, x := range d {
			parts[i] = fmt.Sprintf("%.3f", x.Seconds())
		}
		return strings.Join(parts, " · ")
	}
	t.Logf("%d messages, %d owner replies in Sent, %d rounds", total, replies, runs)
	t.Logf("triage --dry-run: %s s; best %.3f, median %.3f", secs(tri), best(tri).Seconds(), median(tri).Seconds())
	t.Logf("replay --fresh:   %s s; best %.3f, median %.3f", secs(rep), best(rep).Seconds(), median(rep).Seconds())
	t.Logf("ratio replay/triage: best %.2f×, median %.2f×; replay %.0f msg/s at its best",
		best(rep).Seconds()/best(tri).Seconds(), median(rep).Seconds()/median(tri).Seconds(), float64(total)/best(rep).Seconds())
}

func ptrStr(p *float64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprintf("%.3f", *p)
}
