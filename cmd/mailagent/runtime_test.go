package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/store"
)

// faults injects IMAP server failures into a memimap server: FETCH
// answered NO [UNAVAILABLE], LOGIN answered NO with a code.
type faults struct {
	mu        sync.Mutex
	refuseUID imap.UID                     // always answer NO for a FETCH that includes this UID
	fetchNO   int                          // answer this many FETCH commands NO [UNAVAILABLE]
	loginNO   map[string]int               // per user: answer this many LOGINs NO
	loginErr  map[string]imap.ResponseCode // the code of those NOs
	fetches   int
	// refuseAppend: answer NO to an APPEND to this mailbox.
	refuseAppend string
}

func (f *faults) wrap(o *memimap.Options) {
	o.Wrap = func(s imapserver.SessionIMAP4rev2) imapserver.SessionIMAP4rev2 {
		return &faultSession{SessionIMAP4rev2: s, f: f}
	}
}

func (f *faults) setFetchNO(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetchNO = n
}

type faultSession struct {
	imapserver.SessionIMAP4rev2
	f *faults
}

func (s *faultSession) Fetch(w *imapserver.FetchWriter, numSet imap.NumSet, options *imap.FetchOptions) error {
	s.f.mu.Lock()
	s.f.fetches++
	fail := s.f.fetchNO > 0
	if fail {
		s.f.fetchNO--
	}
	if us, ok := numSet.(imap.UIDSet); ok && s.f.refuseUID != 0 && us.Contains(s.f.refuseUID) {
		fail = true
	}
	s.f.mu.Unlock()
	if fail {
		return &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeUnavailable, Text: "Temporary failure, try again later"}
	}
	return s.SessionIMAP4rev2.Fetch(w, numSet, options)
}

func (s *faultSession) Append(mailbox string, r imap.LiteralReader, options *imap.AppendOptions) (*imap.AppendData, error) {
	s.f.mu.Lock()
	refuse := s.f.refuseAppend != "" && mailbox == s.f.refuseAppend
	s.f.mu.Unlock()
	if refuse {
		return nil, &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeServerBug, Text: "Append refused (fault injected)"}
	}
	return s.SessionIMAP4rev2.Append(mailbox, r, options)
}

func (s *faultSession) Login(username, password string) error {
	s.f.mu.Lock()
	n := s.f.loginNO[username]
	code := s.f.loginErr[username]
	if n > 0 {
		s.f.loginNO[username] = n - 1
	}
	s.f.mu.Unlock()
	if n > 0 {
		return &imap.Error{Type: imap.StatusResponseTypeNo, Code: code, Text: "refused by the fault injector"}
	}
	return s.SessionIMAP4rev2.Login(username, password)
}

// Defect 1: a UID FETCH answered NO was taken for "expunged": the UIDs
// were skipped and the checkpoint moved past them, losing the mail.
func TestFetchRefusedLosesNoMail(t *testing.T) {
	t.Parallel()
	// The batch, then each of the three messages alone: all refused once.
	f := &faults{fetchNO: 4}
	h := newHarness(t, compromisedModel, "", f.wrap)
	for _, s := range []string{"Alpha", "Beta", "Gamma"} {
		h.deliver(rawMail("Bob <bob@example.org>", s, "question "+s+"?"))
	}
	_, stderr, code := h.run("watch", "--once")
	if code == 0 {
		t.Fatalf("watch --once after a refused FETCH: exit 0, want a failure (stderr %s)", stderr)
	}
	if !strings.Contains(stderr, "UNAVAILABLE") {
		t.Errorf("stderr does not carry the server's answer: %s", stderr)
	}
	st := h.openStore(t)
	cp, _, err := st.Checkpoint("personal", "INBOX")
	_ = st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if cp.LastUID != 0 {
		t.Errorf("checkpoint moved to %d past mail never fetched", cp.LastUID)
	}
	// The server is back: every message is handled.
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("second watch --once: exit %d: %s", code, stderr)
	}
	got := h.states(t)
	for _, s := range []string{"Alpha", "Beta", "Gamma"} {
		if got[s] != store.StateDone {
			t.Errorf("%s: state %q, want done (mail lost after a refused FETCH); all: %v", s, got[s], got)
		}
	}
}

// runDaemon builds the watch daemon as watchRun does and runs it until
// the test ends. mod adjusts it before it starts.
func (h *harness) runDaemon(t *testing.T, mod func(*daemon.Daemon)) *daemon.Daemon {
	t.Helper()
	f, cfg := h.factory(t)
	_, accts, err := configAccounts(f, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.OpenStore(false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	parts, err := buildAgent(ctx, f, cfg, st, false)
	if err != nil {
		t.Fatal(err)
	}
	d := newDaemon(f, cfg, st, parts, accts)
	if mod != nil {
		mod(d)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, false) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("daemon Run: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("daemon did not stop")
		}
		parts.Mailer.Close()
		_ = st.Close()
		f.Close()
	})
	return d
}

// appendConfig adds text at the end of the harness's config file.
func (h *harness) appendConfig(t *testing.T, text string) {
	t.Helper()
	fh, err := os.OpenFile(h.cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fh.Close() }()
	if _, err := fh.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond (for state reached by background goroutines)
// until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling background state, not asserting on time
	}
}

// recordState reads one message's state while the daemon runs (the store
// is shared through the daemon's handle).
func recordStates(d *daemon.Daemon) map[string]store.State {
	out := map[string]store.State{}
	_ = d.Store.ListMessages(store.MessageFilter{}, func(r *store.MessageRecord) error {
		out[r.Subject] = r.State
		return nil
	})
	return out
}

// Defects 7 and 13f: a sync that failed on a healthy connection was
// retried only when new mail arrived. Here the server refuses one FETCH
// and no further mail comes: the timer retry must handle the mail.
func TestFailedSyncRetriedWithoutNewMail(t *testing.T) {
	t.Parallel()
	f := &faults{}
	h := newHarness(t, compromisedModel, "", f.wrap)
	// The first start learns the mailbox, then mail arrives and the
	// server stumbles on its FETCH.
	var synced sync.WaitGroup
	synced.Add(1)
	var once sync.Once
	d := h.runDaemon(t, func(d *daemon.Daemon) {
		d.SyncRetry = 50 * time.Millisecond
		d.OnSynced = func(string) { once.Do(synced.Done) }
	})
	synced.Wait()
	f.setFetchNO(1)
	for _, s := range []string{"One", "Two", "Three", "Four"} {
		h.deliver(rawMail("Bob <bob@example.org>", s, "question "+s+"?"))
	}
	eventually(t, "all four messages done without another mail arriving", func() bool {
		got := recordStates(d)
		for _, s := range []string{"One", "Two", "Three", "Four"} {
			if got[s] != store.StateDone {
				return false
			}
		}
		return true
	})
	f.mu.Lock()
	left := f.fetchNO
	f.mu.Unlock()
	if left != 0 {
		t.Fatalf("the injected FETCH failure never happened (%d left): the test proves nothing", left)
	}
}

// Defects 5 and 11: one account's login failure stopped every account;
// a temporary NO [UNAVAILABLE] was taken for a wrong password.
func TestAccountsFailIndependently(t *testing.T) {
	const (
		workAddr   = "work@example.com"
		brokenAddr = "broken@example.com"
	)
	f := &faults{loginErr: map[string]imap.ResponseCode{workAddr: imap.ResponseCodeUnavailable}}
	t.Setenv("MA_TEST_WORK_PASS", "work-pass-1")
	t.Setenv("MA_TEST_BROKEN_PASS", "not-the-password")
	extra := ""
	for _, a := range []struct{ name, addr, env string }{{"work", workAddr, "MA_TEST_WORK_PASS"}, {"broken", brokenAddr, "MA_TEST_BROKEN_PASS"}} {
		extra += `
[[accounts]]
name = "` + a.name + `"
email = "` + a.addr + `"
  [accounts.imap]
  host = "127.0.0.1"
  port = IMAPPORT
  security = "insecure"
  password_env = "` + a.env + `"
  [accounts.smtp]
  host = "127.0.0.1"
  port = 1
  security = "insecure"
  password_env = "` + a.env + `"
`
	}
	h := newHarness(t, compromisedModel, "", f.wrap, func(o *memimap.Options) {
		o.Users = append(o.Users, memimap.User{Name: workAddr, Password: "work-pass-1"}, memimap.User{Name: brokenAddr, Password: "right-password"})
	})
	h.appendConfig(t, strings.ReplaceAll(extra, "IMAPPORT", strconv.Itoa(h.imap.Port)))
	raw := strings.ReplaceAll(rawMail("Bob <bob@example.org>", "Work mail", "for work?"), "\n", "\r\n")
	if _, err := h.imap.Append(context.Background(), workAddr, "INBOX", []byte(raw), nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	h.deliver(rawMail("Bob <bob@example.org>", "Personal mail", "for me?"))
	f.mu.Lock()
	f.loginNO = map[string]int{workAddr: 2} // Dovecot with its auth backend down
	f.mu.Unlock()
	d := h.runDaemon(t, nil)
	eventually(t, "personal and work mail handled while the broken account is stopped", func() bool {
		got := recordStates(d)
		return got["Personal mail"] == store.StateDone && got["Work mail"] == store.StateDone
	})
	var broken daemon.Status
	eventually(t, "the broken account reported as stopped", func() bool {
		for _, s := range d.Statuses() {
			if s.Name == "broken" {
				broken = s
			}
		}
		return broken.State == "stopped"
	})
	if !strings.Contains(broken.Error, "authentication failed") || broken.ErrorSince.IsZero() {
		t.Errorf("broken account status: %+v, want the login error and since when", broken)
	}
	if strings.Contains(broken.Error, "not-the-password") {
		t.Errorf("status leaks the password: %q", broken.Error)
	}
	f.mu.Lock()
	left := f.loginNO[workAddr]
	f.mu.Unlock()
	if left != 0 {
		t.Errorf("the work account's refused logins were not all tried (%d left)", left)
	}
}

// Defect 13e: a password source that fails made watch retry silently
// forever; it must exit 2 naming the key, as watch --once does.
func TestWatchExitsOnBrokenPasswordSource(t *testing.T) {
	h := newHarness(t, compromisedModel, "")
	t.Setenv("MA_TEST_IMAP_PASS", "") // restored when the test ends
	if err := os.Unsetenv("MA_TEST_IMAP_PASS"); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	f := newFactory(strings.NewReader(""), &out, &errb)
	f.ConfigPath = h.cfgPath
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := watchRun(ctx, f, &WatchOptions{})
	if ctx.Err() != nil {
		t.Fatal("watch kept running with no password to log in with")
	}
	if ue, ok := cmdutil.AsUserError(err); !ok || ue.Code != ExitUsage {
		t.Fatalf("watch: got %v, want a usage error (exit 2)", err)
	}
	for _, want := range []string{"personal", "password", "MA_TEST_IMAP_PASS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// Defect 4: start-up ran every needs_review retry, one after another,
// before any watcher started, so new mail waited behind the backlog.
// Retries now run in the background after the watchers are up, at most
// RetryBatch per pass.
func TestStartupRetriesDoNotDelayNewMail(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var order []string // subjects of classify calls, in arrival order
	slowModel := func(req *geminitest.Request) geminitest.Reply {
		props, _ := req.ResponseSchema()["properties"].(map[string]any)
		if _, ok := props["intents"]; ok {
			user := req.UserText()
			mu.Lock()
			for _, s := range []string{"Old1", "Old2", "Old3", "Old4", "Old5", "Old6", "Fresh"} {
				if strings.Contains(user, "Subject: "+s) || strings.Contains(user, s+" question") {
					order = append(order, s)
					break
				}
			}
			mu.Unlock()
		}
		time.Sleep(150 * time.Millisecond) // a slow model: the backlog takes a while
		return compromisedModel(req)
	}
	h := newHarness(t, slowModel, "")
	for i := 1; i <= 6; i++ {
		s := "Old" + strconv.Itoa(i)
		h.deliver(rawMail("Bob <bob@example.org>", s, s+" question?"))
	}
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	// A model outage left them all needing review.
	st := h.openStore(t)
	var recs []*store.MessageRecord
	_ = st.ListMessages(store.MessageFilter{}, func(r *store.MessageRecord) error {
		recs = append(recs, r)
		return nil
	})
	for i, r := range recs {
		r.State, r.Error = store.StateNeedsReview, "model unavailable"
		r.UpdatedAt = time.Now().Add(-time.Duration(len(recs)-i) * time.Hour)
		if err := st.PutMessage(r); err != nil {
			t.Fatal(err)
		}
	}
	_ = st.Close()
	mu.Lock()
	order = nil
	mu.Unlock()

	h.deliver(rawMail("Carol <carol@example.org>", "Fresh", "Fresh question?"))
	d := h.runDaemon(t, func(d *daemon.Daemon) {
		d.RetryBatch, d.RetryConcurrency = 3, 1
	})
	eventually(t, "the new mail handled", func() bool { return recordStates(d)["Fresh"] == store.StateDone })
	eventually(t, "one retry pass done", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) >= 4
	})
	time.Sleep(500 * time.Millisecond) // a pass beyond its bound would call the model again by now
	mu.Lock()
	got := append([]string(nil), order...)
	mu.Unlock()
	idx := -1
	for i, s := range got {
		if s == "Fresh" {
			idx = i
		}
	}
	if idx < 0 || idx > 2 {
		t.Errorf("classify order %v: the new mail waited behind the start-up retries", got)
	}
	var retried []string
	for _, s := range got {
		if s != "Fresh" {
			retried = append(retried, s)
		}
	}
	// The oldest three, and no more, in the first pass.
	if len(retried) != 3 {
		t.Errorf("first retry pass classified %v, want exactly 3 (RetryBatch)", retried)
	}
	for _, s := range retried {
		if s != "Old1" && s != "Old2" && s != "Old3" {
			t.Errorf("retried %s before older messages (%v)", s, retried)
		}
	}
}

// Defect 7: the threader of a long-running watcher grew without bound; it
// is now rebuilt from the start-up window once it outgrows it.
func TestWatcherThreaderStaysBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	d := h.runDaemon(t, func(d *daemon.Daemon) {
		d.ThreadLimit, d.RetryInterval = 4, 50*time.Millisecond
	})
	handled := func(want int) func() bool {
		return func() bool {
			n := 0
			for _, s := range recordStates(d) {
				if s == store.StateDone {
					n++
				}
			}
			return n == want
		}
	}
	// Seven first; workers run concurrently, so their arrival order in
	// the store is not their delivery order. The eighth comes after them
	// all and is, without doubt, the newest.
	for i := range 7 {
		h.deliver(rawMail("Bob <bob@example.org>", "Topic "+strconv.Itoa(i), "question?"))
	}
	eventually(t, "seven handled", handled(7))
	h.deliver(rawMail("Bob <bob@example.org>", "Topic 7", "question?"))
	eventually(t, "all eight handled", handled(8))
	// The bound is ThreadLimit plus a quarter (4+1): eight messages are
	// past it, so the threader must have been rebuilt.
	eventually(t, "the threader back within its bound", func() bool { return d.Pipeline.Threader.Len() <= 5 })
	// A reply to kept mail still joins its thread, also when a rebuild
	// read the store between the parent's thread step and its commit
	// (the pipeline adds a message again once it is stored; the exact
	// interleaving is agent.TestRebuildBeforeCommitKeepsThread).
	threads := func() map[string]string {
		out := map[string]string{}
		_ = d.Store.ListMessages(store.MessageFilter{}, func(r *store.MessageRecord) error {
			out[r.Subject] = r.ThreadID
			return nil
		})
		return out
	}
	h.deliver(rawMail("Bob <bob@example.org>", "Re: Topic 7", "and another thing", "In-Reply-To: <topic-7@test.example>", "References: <topic-7@test.example>"))
	eventually(t, "the reply handled", handled(9))
	if th := threads(); th["Re: Topic 7"] == "" || th["Re: Topic 7"] != th["Topic 7"] {
		t.Errorf("the reply's thread %q, its parent's %q: want the same", th["Re: Topic 7"], th["Topic 7"])
	}
}

// One message the server can never read must not hold up the rest, nor
// vanish: the others are handled at once, and after a few tries (counted
// by a running watcher) it is recorded as needing review with the
// server's answer, and the checkpoint moves on.
func TestUnreadableMessageRecordedNotSkipped(t *testing.T) {
	t.Parallel()
	f := &faults{refuseUID: 2}
	h := newHarness(t, compromisedModel, "", f.wrap)
	for _, s := range []string{"First", "Broken", "Third"} {
		h.deliver(rawMail("Bob <bob@example.org>", s, "question "+s+"?"))
	}
	// watch --once: the readable messages are handled, the run fails.
	_, stderr, code := h.run("watch", "--once")
	if got := h.states(t); got["First"] != store.StateDone || got["Third"] != store.StateDone {
		t.Fatalf("the readable messages are held up: %v (%s)", got, stderr)
	}
	if code == 0 {
		t.Errorf("watch --once: exit 0 while a message could not be read")
	}
	d := h.runDaemon(t, func(d *daemon.Daemon) { d.SyncRetry = 20 * time.Millisecond })
	var rec *store.MessageRecord
	eventually(t, "the unreadable message recorded as needing review", func() bool {
		_ = d.Store.ListMessages(store.MessageFilter{State: store.StateNeedsReview}, func(r *store.MessageRecord) error {
			if r.UID == 2 {
				rec = r
			}
			return nil
		})
		return rec != nil
	})
	if !strings.Contains(rec.Error, "refused") || !strings.Contains(rec.Error, "UNAVAILABLE") {
		t.Errorf("record error %q, want the server's answer", rec.Error)
	}
	eventually(t, "the checkpoint past it", func() bool {
		cp, _, err := d.Store.Checkpoint("personal", "INBOX")
		return err == nil && cp.LastUID == 3
	})
}
