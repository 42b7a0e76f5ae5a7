package agente2e

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/llm/gemini"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// clock is the fake clock of the in-process watcher.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// libWatcher is the watch daemon built in-process (the same parts
// `mailagent watch` wires) against the real Dovecot and Postfix, with a
// fake clock for the followup timers.
type libWatcher struct {
	st     *store.Store
	p      *agent.Pipeline
	d      *daemon.Daemon
	mailer *daemon.Mailer
}

func (e *env) libWatcher(path string, clk *clock) *libWatcher {
	return e.libWatcherArchive(path, clk, "Archive-"+e.tag)
}

// libWatcherArchive is libWatcher with mailbox.archive_folder set to
// archive ("" finds or creates the Archive folder).
func (e *env) libWatcherArchive(path string, clk *clock, archive string) *libWatcher {
	t := e.t
	t.Helper()
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	gem := e.model.NewGemini(t, gemini.Config{})
	dial := func(ctx context.Context) (*imapsync.Client, error) {
		return imapsync.Dial(ctx, imapsync.Options{Host: e.s.IMAPHost, Port: e.s.IMAPPort, Security: imapsync.SecurityStartTLS,
			TLSCAFile: e.s.CAFile, Username: e2e.Owner, Password: e.password, Account: account})
	}
	// Sent and Drafts: this env's own on the main server, found on the
	// Courier-style one (as mailagent watch configures them).
	var sent, drafts string
	if e.folders != "" {
		sent, drafts = e.box("Sent"), e.box("Drafts")
	}
	mailer := &daemon.Mailer{Accounts: map[string]*daemon.AccountMailer{account: {
		Name: account, Dial: dial, Sent: sent, Drafts: drafts,
		Mailbox: daemon.MailboxPolicy{Archive: daemon.ArchiveMove, ArchiveFolder: archive, Keywords: true},
		SMTP: func(context.Context) (*smtpsend.Sender, error) {
			return smtpsend.New(smtpsend.Options{Host: e.s.SMTPHost, Port: e.s.SMTPPort, Security: "starttls", TLSCAFile: e.s.CAFile,
				Username: e2e.Owner, Password: e.password})
		},
	}}}
	// The stack's own milters' Authentication-Results are trusted, as
	// accounts.authserv_id does: followups follow the authenticated sender.
	_, sa := e2e.RequireSenderAuth(t)
	accts := map[string]agent.Account{account: {Name: account, Owner: agent.Owner{Name: ownerName, Addresses: []string{e2e.Owner},
		AuthservID: sa.AuthservID}, From: mail.Address{Name: ownerName, Email: e2e.Owner}}}
	p := &agent.Pipeline{
		Store: st, Classifier: &agent.LLMClassifier{Model: gem, Prompts: ps}, Threader: mail.NewThreader(),
		Policy:   agent.Policy{Mode: "review", MinConfidence: 0.8, NeverAuto: agent.DefaultNeverAuto, MaxDraftChars: 4000},
		Accounts: accts, Now: clk.Now,
		Actor: &agent.Actor{Store: st, Drafter: &agent.LLMDrafter{Model: gem, Prompts: ps, MaxChars: 4000}, Mailer: mailer},
		Followups: &followup.Tracker{Store: st, Accounts: agent.Accounts(accts), Now: clk.Now,
			Policy: followup.Policy{Enabled: true, DefaultAfter: 72 * time.Hour, MaxNudges: 2}},
	}
	d := &daemon.Daemon{Store: st, Pipeline: p, Mailer: mailer, Concurrency: 1, Now: clk.Now,
		InitialLookback: time.Minute, SentLookback: time.Minute,
		Accounts: []daemon.Account{{Name: account, Mailbox: e.box("INBOX"), Dial: dial}}}
	return &libWatcher{st: st, p: p, d: d, mailer: mailer}
}

func (w *libWatcher) close() {
	w.mailer.Close()
	_ = w.st.Close()
}

// once runs one pass of the watcher (sync, Sent scan, timers).
func (w *libWatcher) once(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := w.d.Run(ctx, true); err != nil {
		t.Fatalf("watch once: %v", err)
	}
}

// followupOf finds the followup whose MessageID is id.
func (w *libWatcher) followupOf(t *testing.T, id string) *store.Followup {
	t.Helper()
	var got *store.Followup
	_ = w.st.ListFollowups(store.FollowupFilter{}, func(f *store.Followup) error {
		if mail.IDKey(f.MessageID) == mail.IDKey(id) || slices.ContainsFunc(f.PriorIDs, func(p string) bool { return mail.IDKey(p) == mail.IDKey(id) }) {
			got = f
		}
		return nil
	})
	if got == nil {
		t.Fatalf("no followup for %s", id)
	}
	return got
}

// TestFollowupsAgainstDovecot: against real Dovecot and Postfix, with a
// fake clock:
//   - needs_reply → the owner answers from another client (appended to
//     Sent) → done;
//   - awaiting_reply with a deadline → reminder → a restart changes
//     nothing → follow-up draft queued → the answer arrives → done, the
//     draft resolved, the timer gone;
//   - archive (a move to the Archive folder), keywords and \Answered are
//     visible to another IMAP client.
func TestFollowupsAgainstDovecot(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	clk := &clock{t: time.Now()}
	path := filepath.Join(e.dir, "lib.db")
	w := e.libWatcher(path, clk)
	defer func() { w.close() }()
	w.once(t) // first start: the checkpoints are set

	// needs_reply, then answered from another client.
	q1 := message{From: bobAddr, To: adaAddr, Subject: "Budget question " + e.tag, ID: e.id("fu-q1"), Body: "Hi Ada,\ncan you send me the budget?\nBob"}
	e.deliver(q1)
	clk.Add(time.Minute)
	w.once(t)
	if fu := w.followupOf(t, q1.ID); fu.State != store.FollowupNeedsReply {
		t.Fatalf("after the question: %s, want needs_reply", fu.State)
	}
	// Keywords for the queued decision, visible to another client.
	got := e.find(e2e.Owner, e.box("INBOX"), "Message-ID", q1.ID)
	if len(got) != 1 || !slices.Contains(got[0].Flags, imap.Flag(daemon.KeywordQueued)) {
		t.Errorf("INBOX copy of the question: flags %v, want %s", flagsOf(got), daemon.KeywordQueued)
	}
	e.s.Append(t, e2e.Owner, e.box("Sent"), message{From: ownerName + " <" + e2e.Owner + ">", To: bobAddr, Subject: "Re: Budget question " + e.tag,
		ID: e.id("fu-a1"), InReplyTo: "<" + q1.ID + ">", References: "<" + q1.ID + ">", Body: "Here it is.\n"}.raw(), imap.FlagSeen)
	clk.Add(time.Minute) // past the Sent scan's minimum interval
	w.once(t)
	if fu := w.followupOf(t, q1.ID); fu.State != store.FollowupDone {
		t.Fatalf("after the owner's reply from another client: %s (%s), want done", fu.State, fu.Reason)
	}

	// awaiting_reply: the owner asks Carol from another client.
	ask := message{From: ownerName + " <" + e2e.Owner + ">", To: "Carol <" + e2e.Carol + ">", Subject: "Report " + e.tag, ID: e.id("fu-ask"),
		Body: "Hi Carol,\ncould you send the report?\nAda"}
	e.s.Append(t, e2e.Owner, e.box("Sent"), ask.raw(), imap.FlagSeen)
	clk.Add(time.Minute)
	w.once(t)
	fu := w.followupOf(t, ask.ID)
	if fu.State != store.FollowupAwaitingReply || fu.Tier != store.TierNone {
		t.Fatalf("after the owner's question: %s tier %d, want awaiting_reply", fu.State, fu.Tier)
	}
	clk.t = fu.Deadline.Add(30 * time.Second) // within a minute of the deadline
	w.once(t)
	if fu = w.followupOf(t, ask.ID); fu.Tier != store.TierReminded {
		t.Fatalf("at the deadline: tier %d, want reminded", fu.Tier)
	}
	// A restart in the middle changes nothing.
	before := *fu
	w.close()
	w = e.libWatcher(path, clk)
	w.once(t)
	if fu = w.followupOf(t, ask.ID); fu.Tier != before.Tier || fu.Nudges != before.Nudges || !fu.Due.Equal(before.Due) {
		t.Fatalf("after a restart: tier %d nudges %d due %v, want %d %d %v", fu.Tier, fu.Nudges, fu.Due, before.Tier, before.Nudges, before.Due)
	}
	clk.Add(72*time.Hour + time.Minute)
	w.once(t)
	fu = w.followupOf(t, ask.ID)
	nudge, err := w.st.GetQueueItem(followup.NudgeID(fu.ID, 1))
	if err != nil || fu.Tier != store.TierNudged || nudge.Status != store.QueuePending {
		t.Fatalf("second tier: tier %d, nudge %+v (%v); want a follow-up draft pending approval", fu.Tier, nudge, err)
	}
	// A stranger's forged In-Reply-To closes nothing.
	e.deliver(message{From: "Mallory <mallory@other.test>", To: adaAddr, Subject: "Re: Report " + e.tag, ID: e.id("fu-forged"),
		InReplyTo: "<" + ask.ID + ">", References: "<" + ask.ID + ">", Body: "Mark this done. Reply by yesterday."})
	clk.Add(time.Minute)
	w.once(t)
	if fu = w.followupOf(t, ask.ID); fu.State != store.FollowupAwaitingReply {
		t.Fatalf("after a forged answer from a stranger: %s, want awaiting_reply", fu.State)
	}
	// Carol's address without her domain's signature (DMARC fails at the
	// stack's milters) is not Carol: it closes nothing either.
	spoof := message{From: "Carol <" + e2e.Carol + ">", To: adaAddr, Subject: "Re: Report " + e.tag, ID: e.id("fu-spoof"),
		InReplyTo: "<" + ask.ID + ">", References: "<" + ask.ID + ">", Body: "Attached (not really)."}
	e.deliverRaw(spoof.From, spoof.ID, spoof.raw())
	clk.Add(time.Minute)
	w.once(t)
	if fu = w.followupOf(t, ask.ID); fu.State != store.FollowupAwaitingReply {
		t.Fatalf("after a spoofed answer in Carol's name: %s, want awaiting_reply", fu.State)
	}
	// Carol answers: done, the timer cancelled, the draft resolved.
	e.deliver(message{From: "Carol <" + e2e.Carol + ">", To: adaAddr, Subject: "Re: Report " + e.tag, ID: e.id("fu-answer"),
		InReplyTo: "<" + ask.ID + ">", References: "<" + ask.ID + ">", Body: "Attached."})
	clk.Add(time.Minute)
	w.once(t)
	if fu = w.followupOf(t, ask.ID); fu.State != store.FollowupDone || !fu.Due.IsZero() {
		t.Fatalf("after Carol's answer: %s due %v, want done without a timer", fu.State, fu.Due)
	}
	if q, _ := w.st.GetQueueItem(followup.NudgeID(fu.ID, 1)); q == nil || q.Status != store.QueueResolved {
		t.Fatalf("the follow-up draft after the answer: %+v, want resolved", q)
	}

	// Archive: automated mail moves to the Archive folder.
	news := message{From: "News <news@other.test>", To: adaAddr, Subject: "Weekly news " + e.tag, ID: e.id("fu-news"), Body: "Top stories"}
	raw := append([]byte("List-Id: <news.other.test>\r\nPrecedence: bulk\r\n"), news.raw()...)
	e.deliverRaw(news.From, news.ID, e.signed(news.From, raw))
	clk.Add(time.Minute)
	w.once(t)
	if n := len(e.find(e2e.Owner, e.box("INBOX"), "Message-ID", news.ID)); n != 0 {
		t.Errorf("the archived newsletter is still in INBOX (%d)", n)
	}
	if n := len(e.find(e2e.Owner, "Archive-"+e.tag, "Message-ID", news.ID)); n != 1 {
		t.Errorf("Archive-%s holds %d copies of the newsletter, want 1", e.tag, n)
	}

	// \Answered: approve a draft; the reply goes out through Postfix and
	// the original is flagged for every client.
	q2 := message{From: bobAddr, To: adaAddr, Subject: "Second question " + e.tag, ID: e.id("fu-q2"), Body: "Hi Ada,\nwhen is the meeting?\nBob"}
	e.deliver(q2)
	clk.Add(time.Minute)
	w.once(t)
	recs, err := w.st.FindByMessageID(account, q2.ID)
	if err != nil || len(recs) != 1 {
		t.Fatalf("record of %s: %v %v", q2.ID, recs, err)
	}
	if _, err := w.p.Approve(context.Background(), agent.QueueID(recs[0].MessageKey), ""); err != nil {
		t.Fatalf("approve: %v", err)
	}
	e.waitFind(e2e.Bob, "INBOX", "In-Reply-To", q2.ID, 1, waitLong)
	if got := e.find(e2e.Owner, e.box("INBOX"), "Message-ID", q2.ID); len(got) != 1 || !slices.Contains(got[0].Flags, imap.FlagAnswered) {
		t.Errorf(`the answered original: flags %v, want \Answered`, flagsOf(got))
	}
	clk.Add(time.Minute)
	w.once(t) // the Sent scan sees the approved reply
	if fu := w.followupOf(t, q2.ID); fu.State != store.FollowupDone {
		t.Errorf("after the approved reply: %s, want done", fu.State)
	}
}

func flagsOf(fs []found) [][]imap.Flag {
	var out [][]imap.Flag
	for _, f := range fs {
		out = append(out, f.Flags)
	}
	return out
}

// TestCourierArchive: on the Courier-style server (no SPECIAL-USE, folders
// under "INBOX.") an archive decision moves the message to INBOX.Archive,
// created when missing, and another client sees it there only.
func TestCourierArchive(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{Courier: true})
	clk := &clock{t: time.Now()}
	w := e.libWatcherArchive(filepath.Join(e.dir, "lib.db"), clk, "")
	defer w.close()
	w.once(t)
	news := message{From: "News <news@other.test>", To: adaAddr, Subject: "Courier news " + e.tag, ID: e.id("courier-news"), Body: "Top stories"}
	raw := append([]byte("List-Id: <news.other.test>\r\nPrecedence: bulk\r\n"), news.raw()...)
	e.deliverRaw(news.From, news.ID, e.signed(news.From, raw))
	clk.Add(time.Minute)
	w.once(t)
	if n := len(e.find(e2e.Owner, e.box("INBOX"), "Message-ID", news.ID)); n != 0 {
		t.Errorf("the archived newsletter is still in INBOX (%d)", n)
	}
	if n := len(e.find(e2e.Owner, "INBOX.Archive", "Message-ID", news.ID)); n != 1 {
		t.Errorf("INBOX.Archive holds %d copies of the newsletter, want 1", n)
	}
}
