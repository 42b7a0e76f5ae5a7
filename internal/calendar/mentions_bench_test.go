package calendar

import (
	"strings"
	"testing"
	"time"
)

// BenchmarkCheckTimesReply checks a scheduling reply against the offered
// slots and its thread (a question, the quoted mail before it), the
// thread of 0.4 KB and of 1.6 KB.
func BenchmarkCheckTimesReply(b *testing.B) {
	thread := "Re: Meeting next week?\nHi Ada,\n\nCould we meet to go over the Q3 budget? I'm free Tuesday afternoon or Wednesday 1 April between 10 and 12. " +
		"If that doesn't work, Thursday at 3pm is fine too. The report is 25 pages and covers 2025-2026; I'll bring 3 copies.\n\nThanks,\nCarol\n\n" +
		"On Mon, 23 Mar 2026 at 09:14, Ada <ada@example.com> wrote:\n> Happy to meet. Let me know what suits you.\n> Best, Ada\n"
	draft := "Hi Carol,\n\nTuesday 31 March at 14:00 works for me; I'll send an invitation. Otherwise Monday 30 March 10:00–10:30.\n\nBest,\nAda"
	for _, bc := range []struct {
		name   string
		thread string
	}{{"thread_0.4KB", thread}, {"thread_1.6KB", strings.Repeat(thread, 4)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if c := CheckTimes(draft, bc.thread, offeredFixture, 30*time.Minute, mentionRef, berlin); c.Mentions != 2 || !c.OK() {
					b.Fatalf("got %+v, want 2 mentions, both offered", c)
				}
			}
		})
	}
}
