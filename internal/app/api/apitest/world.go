// Package apitest is the conformance suite of api.Service: one set of
// cases that runs against the real watcher pipeline (agent.Pipeline,
// store.Store, daemon.Mailer over a real IMAP server and a real SMTP sink,
// the Gemini REST fake), reached either directly (api.Local) or over the
// unix socket (api.Client of api.Serve). Every state transition and every
// error must be the same both ways; Suite records them in a Transcript so
// that the two runs can be compared line by line.
//
// It is for tests only: it starts servers on loopback and fails the test
// on setup errors.
package apitest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/gemini"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// The owner and the correspondents of every World.
const (
	Account    = "personal"
	Owner      = "ada@example.com"
	AuthservID = "mx.example.com"
	password   = "imap-secret-5521"

	Carol = "carol@example.org" // authenticated, unknown: her mail is queued
	Erin  = "erin@example.org"  // authenticated, unknown: a second draft
	Dave  = "dave@example.org"  // a heads-up the model wants shown: notify
	Bob   = "bob@example.net"   // a known contact (the owner wrote to him): auto-send, delayed
	Frank = "frank@example.org" // the model fails on his mail: needs_review
)

// SendDelay is the World's policy.send_delay: Bob's auto-reply waits this
// long in the outbox (status scheduled), so that it can be cancelled.
const SendDelay = time.Hour

// World is a watcher after its first sync of a mailbox holding one message
// of each kind, with every real part exposed for assertions.
type World struct {
	T        testing.TB
	Store    *store.Store
	Pipeline *agent.Pipeline
	Daemon   *daemon.Daemon
	Mailer   *daemon.Mailer
	IMAP     *memimap.Server
	SMTP     *smtptest.Sink
	Gemini   *geminitest.Server
	Broker   *api.Broker
	// Local is the watcher's Service; Serve puts it on a socket.
	Local *api.Local

	// The items the first sync made.
	Draft     string           // Carol's queued draft
	Draft2    string           // Erin's queued draft
	Notify    string           // Dave's notify item
	Scheduled string           // Bob's auto-reply, scheduled in the outbox
	Flaky     store.MessageKey // Frank's message, needs_review
	UIDs      map[string]store.MessageKey

	// Faults, switched on and off by the cases.
	ModelDown      atomic.Bool // every model call fails (HTTP 400)
	FailSentAppend atomic.Bool // APPEND to Sent answers NO
	FailSentSelect atomic.Bool // SELECT/EXAMINE of Sent, and SEARCH in it, answer NO
	flakyDown      atomic.Bool // Frank's mail fails to classify (on at start)
}

// Logger discards: the world's logs are not under test.
func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Authenticated is the Authentication-Results header the owner's server
// adds to mail whose From domain passes DMARC.
func Authenticated(from string) string {
	d := from[strings.LastIndexByte(from, '@')+1:]
	return "Authentication-Results: " + AuthservID + "; dkim=pass header.d=" + d + "; spf=pass smtp.mailfrom=" + d + "; dmarc=pass header.from=" + d
}

// Mail is an authenticated message from from to the owner.
func Mail(from, subject, msgID, body string) []byte {
	return mailAt(from, subject, msgID, body, time.Now())
}

// mailAt is Mail dated at.
func mailAt(from, subject, msgID, body string, at time.Time) []byte {
	s := Authenticated(from) + "\r\nFrom: <" + from + ">\r\nTo: Ada <" + Owner + ">\r\nSubject: " + subject +
		"\r\nDate: " + at.Format(time.RFC1123Z) + "\r\nMessage-ID: <" + msgID + ">\r\n\r\n" + body + "\r\n"
	return []byte(s)
}

// NewWorld starts the servers, delivers the mail, and runs the watcher
// once (daemon.Run with once), which processes it through the pipeline.
func NewWorld(t testing.TB) *World {
	t.Helper()
	w := &World{T: t, UIDs: map[string]store.MessageKey{}}
	w.flakyDown.Store(true)
	srv, err := memimap.Start(memimap.Options{
		Users:     []memimap.User{{Name: Owner, Password: password}},
		Mailboxes: []string{"Sent", "Drafts"},
		Wrap: func(s imapserver.SessionIMAP4rev2) imapserver.SessionIMAP4rev2 {
			return &faultSession{SessionIMAP4rev2: s, w: w}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	w.IMAP = srv
	w.SMTP = smtptest.NewSink(t, smtptest.SinkOptions{Username: Owner, Password: password})
	w.Gemini = geminitest.NewServer(t, w.model)

	dir, err := os.MkdirTemp("", "maw") // short: the socket lives here too
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// NoSync: the World's fsyncs (a commit per pipeline step) are not
	// under test, and were most of a World's time; Close flushes.
	st, err := store.Open(filepath.Join(dir, "state.db"), store.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	w.Store = st

	gem := w.Gemini.NewGemini(t, gemini.Config{})
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	dial := func(ctx context.Context) (*imapsync.Client, error) {
		return imapsync.Dial(ctx, imapsync.Options{Host: srv.Host, Port: srv.Port, Security: imapsync.SecurityInsecure,
			Username: Owner, Password: password, Account: Account})
	}
	w.Mailer = &daemon.Mailer{Accounts: map[string]*daemon.AccountMailer{Account: {
		Name: Account, Dial: dial, Owner: agent.Owner{Name: "Ada", Addresses: []string{Owner}, AuthservID: AuthservID},
		SMTP: func(context.Context) (*smtpsend.Sender, error) {
			return smtpsend.New(smtpsend.Options{Host: w.SMTP.Host, Port: w.SMTP.Port, Security: "insecure", Username: Owner, Password: password})
		},
	}}}
	t.Cleanup(w.Mailer.Close)
	w.Broker = &api.Broker{}
	w.Pipeline = &agent.Pipeline{
		Store: st, Classifier: &agent.LLMClassifier{Model: gem, Prompts: ps}, Threader: mail.NewThreader(),
		Policy: agent.Policy{Mode: "auto", MinConfidence: 0.8, NeverAuto: agent.DefaultNeverAuto,
			MaxPerContactPerDay: 3, MaxPerDay: 20, SendDelay: SendDelay, MaxDraftChars: 4000},
		Accounts: map[string]agent.Account{Account: {Name: Account,
			Owner: agent.Owner{Name: "Ada", Addresses: []string{Owner}, AuthservID: AuthservID},
			From:  mail.Address{Name: "Ada", Email: Owner}, DraftsToIMAP: true}},
		Actor: &agent.Actor{Store: st, Drafter: &agent.LLMDrafter{Model: gem, Prompts: ps, MaxChars: 4000}, Mailer: w.Mailer,
			Summarizer: &agent.LLMSummarizer{Model: gem, Prompts: ps}, Notify: w.Broker.Publish},
		Logger: discard(),
	}
	w.Pipeline.Followups = &followup.Tracker{Store: st, Accounts: w.Pipeline.Accounts, Notify: agent.EventsTo(w.Broker.Publish),
		Policy: followup.Policy{Enabled: true}}
	// Claims as the product's default (sync.claims = "auto").
	w.Daemon = &daemon.Daemon{Store: st, Pipeline: w.Pipeline, Mailer: w.Mailer, Concurrency: 1, Logger: discard(),
		Claims:   daemon.ClaimOptions{Auto: true},
		Accounts: []daemon.Account{{Name: Account, Mailbox: "INBOX", Dial: dial}}}
	w.Local = &api.Local{DB: st, Actions: Actions{Pipeline: w.Pipeline, Daemon: w.Daemon}, Broker: w.Broker, AutoSendCap: 20,
		Tracker: w.Pipeline.Followups,
		StatusFunc: func(context.Context) api.Status {
			s := api.Status{Watcher: true, PID: os.Getpid()}
			s.Accounts = w.Daemon.Statuses()
			return s
		}}

	// The owner once wrote to Bob: the first sync's Sent scan makes him a
	// known contact before any decision.
	w.Append("Sent", []byte("From: Ada <"+Owner+">\r\nTo: <"+Bob+">\r\nSubject: hello\r\nDate: "+
		time.Now().Add(-48*time.Hour).Format(time.RFC1123Z)+"\r\nMessage-ID: <hello-bob@example.com>\r\n\r\nHi Bob.\r\n"))
	// A minute apart, in this order: followups and lists ordered by a
	// message's date are then in the same order in every World (dated
	// now, two of them fell in one second in one World and not in the
	// other, and ties fall back on ids that differ between Worlds).
	first := time.Now().Add(-10 * time.Minute)
	for i, m := range []struct{ name, from, subject, body string }{
		{"carol", Carol, "Lunch on Tuesday?", "Are you free for lunch on Tuesday?"},
		{"dave", Dave, "Heads-up: office closed", "HEADSUP the office is closed on Friday."},
		{"bob", Bob, "Quick question", "Can we meet on Tuesday?"},
		{"frank", Frank, "Planning", "FLAKY Can we plan the trip?"},
		{"erin", Erin, "Coffee?", "Coffee on Thursday?"},
	} {
		uid := w.Append("INBOX", mailAt(m.from, m.subject, m.name+"-1@example.org", m.body, first.Add(time.Duration(i)*time.Minute)))
		w.UIDs[m.name] = store.MessageKey{Account: Account, Mailbox: "INBOX", UID: uid}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.Daemon.Run(ctx, true); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	cp, ok, err := st.Checkpoint(Account, "INBOX")
	if err != nil || !ok {
		t.Fatalf("checkpoint after the first sync: %v, %v", ok, err)
	}
	for name, k := range w.UIDs {
		k.UIDValidity = cp.UIDValidity
		w.UIDs[name] = k
	}
	w.Draft, w.Draft2, w.Notify = agent.QueueID(w.UIDs["carol"]), agent.QueueID(w.UIDs["erin"]), agent.QueueID(w.UIDs["dave"])
	w.Scheduled, w.Flaky = agent.OutboxID(w.UIDs["bob"]), w.UIDs["frank"]
	w.mustState()
	w.flakyDown.Store(false) // from now on Frank's mail classifies
	return w
}

// mustState checks that the first sync made what the cases rely on.
func (w *World) mustState() {
	t := w.T
	t.Helper()
	for id, kind := range map[string]string{w.Draft: store.KindDraft, w.Draft2: store.KindDraft, w.Notify: store.KindNotify} {
		q, err := w.Store.GetQueueItem(id)
		if err != nil || q.Kind != kind || q.Status != store.QueuePending {
			t.Fatalf("world: item %s: got %+v, %v; want a pending %s", id, q, err, kind)
		}
	}
	if ob, err := w.Store.GetOutbox(w.Scheduled); err != nil || ob.Status != store.OutboxScheduled {
		t.Fatalf("world: Bob's auto-reply: got %+v, %v; want it scheduled", ob, err)
	}
	if rec, err := w.Store.GetMessage(w.Flaky); err != nil || rec.State != store.StateNeedsReview {
		t.Fatalf("world: Frank's message: got %+v, %v; want needs_review", rec, err)
	}
}

// Append puts raw into a mailbox of the owner and returns its UID.
func (w *World) Append(mailbox string, raw []byte) uint32 {
	w.T.Helper()
	uid, err := w.IMAP.Append(context.Background(), Owner, mailbox, raw, nil, time.Now())
	if err != nil {
		w.T.Fatal(err)
	}
	return uint32(uid)
}

// Mailbox returns the raw messages of one of the owner's mailboxes.
func (w *World) Mailbox(name string) [][]byte {
	w.T.Helper()
	msgs, err := w.IMAP.Messages(context.Background(), Owner, name)
	if err != nil {
		w.T.Fatal(err)
	}
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i] = m.Raw
	}
	return out
}

// Actions is what the watcher serves: the pipeline's queue operations and
// the daemon's Retry.
type Actions struct {
	*agent.Pipeline
	Daemon *daemon.Daemon
}

// Retry implements api.Actions.
func (a Actions) Retry(ctx context.Context, k store.MessageKey) error { return a.Daemon.Retry(ctx, k) }

var _ api.Actions = Actions{}

// model answers like a well-behaved Gemini: classifications by keywords in
// the mail, drafts that follow the owner's instruction, summaries.
func (w *World) model(req *geminitest.Request) geminitest.Reply {
	usage := llm.Usage{PromptTokens: 100, OutputTokens: 20, TotalTokens: 120}
	user := req.UserText()
	props, _ := req.ResponseSchema()["properties"].(map[string]any)
	if w.ModelDown.Load() || (w.flakyDown.Load() && strings.Contains(user, "FLAKY")) {
		return geminitest.ErrorReply(400, "INVALID_ARGUMENT", "the test model is down")
	}
	switch {
	case props["intents"] != nil:
		c := map[string]any{"intents": []string{"information_request"}, "risk": "low", "action": "reply",
			"requires_approval": false, "confidence": 0.95, "summary": "asks to meet", "comments": "a plain question"}
		if strings.Contains(user, "HEADSUP") {
			c["action"], c["summary"] = "forward", "the office is closed"
		}
		return geminitest.JSONReply(c, usage)
	case props["body"] != nil:
		body := "Sure, Tuesday works for me."
		if strings.Contains(user, "make it shorter") {
			body = "Yes."
		}
		return geminitest.JSONReply(map[string]any{"body": body, "tone": "brief", "needs_owner_input": false}, usage)
	}
	return geminitest.JSONReply(map[string]any{"summary": "writes about meetings"}, usage)
}

// faultSession injects the World's IMAP faults into a real session.
type faultSession struct {
	imapserver.SessionIMAP4rev2
	w        *World
	selected string // the mailbox this session has selected
}

func (s *faultSession) Append(mailbox string, r imap.LiteralReader, o *imap.AppendOptions) (*imap.AppendData, error) {
	if mailbox == "Sent" && s.w.FailSentAppend.Load() {
		_, _ = io.Copy(io.Discard, r)
		return nil, &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeOverQuota, Text: "Sent is full (test fault)"}
	}
	return s.SessionIMAP4rev2.Append(mailbox, r, o)
}

func (s *faultSession) Select(mailbox string, o *imap.SelectOptions) (*imap.SelectData, error) {
	s.selected = ""
	if mailbox == "Sent" && s.w.FailSentSelect.Load() {
		return nil, errSentUnavailable
	}
	d, err := s.SessionIMAP4rev2.Select(mailbox, o)
	if err == nil {
		s.selected = mailbox
	}
	return d, err
}

func (s *faultSession) Search(kind imapserver.NumKind, c *imap.SearchCriteria, o *imap.SearchOptions) (*imap.SearchData, error) {
	if s.selected == "Sent" && s.w.FailSentSelect.Load() {
		return nil, errSentUnavailable
	}
	return s.SessionIMAP4rev2.Search(kind, c, o)
}

var errSentUnavailable = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeUnavailable, Text: "Sent is unavailable (test fault)"}

// Serve puts the World's Local on a real unix socket (api.Serve) and
// returns a Client of it. Cleanup stops the server and waits for it.
func (w *World) Serve(t testing.TB) *api.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "mas")
	if err != nil {
		t.Fatal(err)
	}
	path := api.SocketPath(dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- api.Serve(ctx, path, w.Local, discard()) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after its context ended")
		}
		_ = os.RemoveAll(dir)
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := api.Dial(context.Background(), path)
		if err == nil {
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the socket never answered: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Local and Socket are the two ways Suite reaches a World.
func Local(t *testing.T) (api.Service, *World) {
	w := NewWorld(t)
	return w.Local, w
}

// Socket is a Client of the World's Local over a real unix socket.
func Socket(t *testing.T) (api.Service, *World) {
	w := NewWorld(t)
	return w.Serve(t), w
}

// String names the world for failure messages.
func (w *World) String() string {
	return fmt.Sprintf("world(imap %s, smtp %s)", w.IMAP.Addr(), w.SMTP.Addr)
}
