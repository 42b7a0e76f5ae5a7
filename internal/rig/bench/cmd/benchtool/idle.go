package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/rig/bench"
	"github.com/mailagent/mailagent/store"
)

// seedSends writes sends finished outbox records (appended to Sent, with
// their raw message, as the watcher leaves them) and queue items into
// st, as a mailbox that has been answered for a long time would hold
// them. Queue items cycle through the statuses a history has: mostly
// closed (sent, resolved, rejected), some pending, and some snoozed until
// days from now, so the watcher's timer always has a next due time in
// the future. A few sends are scheduled days ahead too. Their keys point
// at the seeded message records (mailbox Archive, UID i).
func seedSends(st *store.Store, account string, sends, queue, writers int) error {
	g := errgroup.Group{}
	g.SetLimit(writers)
	now := time.Now()
	body := strings.Repeat("Thanks, Thursday at 3pm works for me. I will send the agenda beforehand.\r\n", 12)
	for i := 1; i <= sends; i++ {
		status := store.OutboxAppended
		var sendAt time.Time
		if i%2000 == 0 {
			status, sendAt = store.OutboxScheduled, now.Add(time.Duration(i/2000)*24*time.Hour)
		}
		mid := fmt.Sprintf("seed-reply-%08d@bench.example", i)
		raw := "From: Bench Owner <bob@example.test>\r\nTo: sender" + strconv.Itoa(i%500) + "@example.com\r\n" +
			"Subject: Re: quarterly planning meeting, item " + strconv.Itoa(i) + "\r\nMessage-ID: <" + mid + ">\r\n" +
			"X-Mailagent-Trace: seed-trace-" + strconv.Itoa(i) + "\r\n\r\n" + body
		r := &store.OutboxRecord{
			ID: fmt.Sprintf("ob_seed%08d", i), Account: account, From: "bob@example.test", MessageID: mid,
			Message: store.MessageKey{Account: account, Mailbox: "Archive", UIDValidity: 1, UID: uint32(i)},
			Subject: fmt.Sprintf("Re: quarterly planning meeting, item %d", i), Body: body,
			To: []string{fmt.Sprintf("sender%d@example.com", i%500)}, Raw: []byte(raw),
			Status: status, SendAt: sendAt, Attempts: 1, Auto: i%3 == 0,
			SentAt: now.Add(-time.Duration(sends-i) * time.Minute),
		}
		if status == store.OutboxScheduled {
			r.Attempts, r.SentAt = 0, time.Time{}
		}
		g.Go(func() error { return st.PutOutbox(r) })
	}
	statuses := []string{store.QueueSent, store.QueueResolved, store.QueueRejected, store.QueueResolved, store.QueueSent,
		store.QueuePending, store.QueueResolved, store.QueueSent, store.QueueRejected, store.QueueSnoozed}
	for i := 1; i <= queue; i++ {
		status := statuses[i%len(statuses)]
		q := &store.QueueItem{
			ID: fmt.Sprintf("q_seed%08d", i), Kind: store.KindDraft, Account: account,
			Message:   store.MessageKey{Account: account, Mailbox: "Archive", UIDValidity: 1, UID: uint32(i)},
			MessageID: fmt.Sprintf("seed-q-%08d@history.example", i),
			From:      mail.Address{Name: "Sender Name", Email: fmt.Sprintf("sender%d@example.com", i%500)},
			To:        []mail.Address{{Email: fmt.Sprintf("sender%d@example.com", i%500)}},
			Subject:   fmt.Sprintf("Question %d", i), Draft: body, Status: status,
			Reasons: []string{"seeded history"}, IMAPDraftUID: uint32(i),
		}
		if i%7 == 0 {
			q.Kind, q.Draft, q.IMAPDraftUID = store.KindNotify, "", 0
		}
		if status == store.QueueSnoozed {
			q.SnoozeUntil = now.Add(time.Duration(1+i%30) * 24 * time.Hour)
		}
		g.Go(func() error { return st.PutQueueItem(q) })
	}
	return g.Wait()
}

// procCPU reads a process's CPU time (utime + stime, children excluded)
// from /proc/PID/stat, and its context switches summed over its threads
// (each voluntary switch is a thread going to sleep: a proxy for wake-ups).
func procCPU(pid int) (cpu time.Duration, voluntary, involuntary int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0, 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	// After the name: state(3) ... utime(14) stime(15), so f[11], f[12].
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	stt, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, 0, fmt.Errorf("parse /proc/%d/stat times", pid)
	}
	const clkTck = 100 // USER_HZ: 100 on every Linux architecture Go supports
	cpu = time.Duration(ut+stt) * time.Second / clkTck
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	for _, t := range tasks {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue // the thread ended meanwhile
		}
		for _, line := range strings.Split(string(st), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch k {
			case "voluntary_ctxt_switches":
				voluntary += n
			case "nonvoluntary_ctxt_switches":
				involuntary += n
			}
		}
	}
	return cpu, voluntary, involuntary, nil
}

// cpuUse measures a running process for a while: the CPU time it used as
// a percentage of one core, and its voluntary context switches per second.
func cpuUse(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cpu", flag.ExitOnError)
	pid := fs.Int("pid", 0, "process id")
	dur := fs.Duration("for", time.Minute, "how long to measure")
	_ = fs.Parse(args)
	c0, v0, i0, err := procCPU(*pid)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := bench.WaitDone(ctx, *dur); err != nil {
		return err
	}
	c1, v1, i1, err := procCPU(*pid)
	if err != nil {
		return fmt.Errorf("the process ended during the measurement: %w", err)
	}
	el := time.Since(t0)
	fmt.Printf("cpu_s=%.2f wall_s=%.1f pct_core=%.3f wakeups_per_s=%.1f involuntary_per_s=%.1f\n",
		(c1 - c0).Seconds(), el.Seconds(), 100*(c1-c0).Seconds()/el.Seconds(),
		float64(v1-v0)/el.Seconds(), float64(i1-i0)/el.Seconds())
	return nil
}
