package unsubscribe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/memimap"
	listunsub "github.com/mailagent/mailagent/internal/unsubscribe"
	"github.com/mailagent/mailagent/store"
)

const (
	user = "ada@example.com"
	pass = "pw-8812"
)

// rig is a real IMAP server (imapmemserver), a real state database
// behind api.Local, and a one-click endpoint that counts what reaches it.
type rig struct {
	srv   *memimap.Server
	st    *store.Store
	svc   *api.Local
	env   *Env
	posts atomic.Int32
	n     int
}

func newRig(t *testing.T) *rig {
	t.Helper()
	srv, err := memimap.Start(memimap.Options{Users: []memimap.User{{Name: user, Password: pass}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	st, err := store.Open(filepath.Join(t.TempDir(), "mailagent.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r := &rig{srv: srv, st: st, svc: &api.Local{DB: st}}
	hs := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { r.posts.Add(1) }))
	t.Cleanup(hs.Close)
	// The real poster refuses loopback: its transport is the test's,
	// after Parse has checked the URL it was given.
	tr := hs.Client().Transport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, hs.Listener.Addr().String())
	}
	cfg := &config.Config{Accounts: []config.Account{{Name: "personal", Email: user}}}
	r.env = &Env{
		Config: cfg,
		Mailer: func(*config.Config) *daemon.Mailer {
			return &daemon.Mailer{Accounts: map[string]*daemon.AccountMailer{"personal": {Name: "personal",
				Dial: func(ctx context.Context) (*imapsync.Client, error) {
					return imapsync.Dial(ctx, imapsync.Options{Host: srv.Host, Port: srv.Port, Security: imapsync.SecurityInsecure,
						Username: user, Password: pass, Account: "personal"})
				}}}}
		},
		Poster: func() *listunsub.Poster { return &listunsub.Poster{Transport: tr} },
	}
	return r
}

// deliver puts a newsletter on the server and its record in the store
// (recorded with recordedID, which is the message's own Message-ID unless
// a test says otherwise), and returns the trace id that names it.
func (r *rig) deliver(t *testing.T, messageID, recordedID, unsub, post string) string {
	t.Helper()
	r.n++
	hdr := fmt.Sprintf("From: News <news@lists.example.org>\r\nTo: %s\r\nSubject: Weekly %d\r\nMessage-ID: <%s>\r\nList-Id: <news.lists.example.org>\r\nDate: Mon, 02 Nov 2026 10:00:00 +0000\r\n", user, r.n, messageID)
	if unsub != "" {
		hdr += "List-Unsubscribe: " + unsub + "\r\n"
	}
	if post != "" {
		hdr += "List-Unsubscribe-Post: " + post + "\r\n"
	}
	uid, err := r.srv.Append(context.Background(), user, "INBOX", []byte(hdr+"\r\nTop stories\r\n"), nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err := imapsync.Dial(context.Background(), imapsync.Options{Host: r.srv.Host, Port: r.srv.Port, Security: imapsync.SecurityInsecure,
		Username: user, Password: pass, Account: "personal"})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := c.Select(context.Background(), "INBOX", true)
	_ = c.Close()
	if err != nil {
		t.Fatal(err)
	}
	key := store.MessageKey{Account: "personal", Mailbox: "INBOX", UIDValidity: ms.UIDValidity, UID: uint32(uid)}
	trace := fmt.Sprintf("t%d", r.n)
	if err := r.st.PutMessage(&store.MessageRecord{MessageKey: key, MessageID: "<" + recordedID + ">", TraceID: trace,
		Subject: fmt.Sprintf("Weekly %d", r.n), Date: time.Now(), State: store.StateDone}); err != nil {
		t.Fatal(err)
	}
	if err := r.st.PutTrace(&store.Trace{TraceID: trace, Message: key, MessageID: "<" + recordedID + ">", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return trace
}

// attempt plans and, when a plan comes out, executes it: it reports
// whether the attack got through (a plan was made and something was
// posted or a record of success kept).
func (r *rig) attempt(t *testing.T, ref string) (through bool, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := r.posts.Load()
	p, err := NewPlan(ctx, r.env, r.svc, ref)
	if err != nil {
		return false, err
	}
	defer p.Close()
	if err := p.Execute(ctx, r.svc); err != nil {
		return true, err // a plan was made for it: the defence did not hold
	}
	return r.posts.Load() > before || p.Record.Result == "ok", nil
}

// TestHostileUnsubscribeTargetsNeverLeave: the List-Unsubscribe header is
// the sender's text. An unsubscribe is planned only for a public https
// one-click URL or a single public mailto address; everything else
// (other schemes, a one-click without its Post header, an internal or
// metadata address, a mailto to an address that is not public, to two
// recipients, or with a header smuggled in) is refused with
// internal/unsubscribe.ErrNone and nothing is posted or sent. The positive
// control allows the non-public domain through policy.allow_domains (the
// owner's switch for exactly this check) and the same mailto attack then
// gets a plan.
func TestHostileUnsubscribeTargetsNeverLeave(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	oneClick := "List-Unsubscribe=One-Click"
	attacks := []struct{ name, unsub, post string }{
		{"javascript", "<javascript:alert(1)>", oneClick},
		{"plain http", "<http://lists.example.org/u>", oneClick},
		{"https without its Post header", "<https://lists.example.org/u>", ""},
		{"internal address", "<https://10.0.0.1/u>", oneClick},
		{"cloud metadata", "<https://169.254.169.254/latest/meta-data>", oneClick},
		{"loopback name", "<https://localhost/u>", oneClick},
		{"mailto to a non-public domain", "<mailto:leave@corp.internal>", ""},
		{"mailto to two recipients", "<mailto:leave@lists.example.org,boss@corp.example>", ""},
		{"mailto to an address literal", "<mailto:leave@[10.0.0.1]>", ""},
		{"no header", "", ""},
	}
	tried, through := 0, 0
	for i, a := range attacks {
		id := fmt.Sprintf("hostile%d@lists.example.org", i)
		ref := r.deliver(t, id, id, a.unsub, a.post)
		tried++
		got, err := r.attempt(t, ref)
		if got {
			through++
			t.Errorf("%s: got through (%v)", a.name, err)
			continue
		}
		var ae *apperr.Error
		if !errors.Is(err, listunsub.ErrNone) || !errors.As(err, &ae) || ae.Code != apperr.CodeFailure {
			t.Errorf("%s: got %v, want ErrNone as an exit-1 apperr.Error", a.name, err)
		}
	}
	if r.posts.Load() != 0 {
		t.Errorf("%d one-click requests were made, want none", r.posts.Load())
	}
	t.Logf("hostile targets: %d tried, %d through", tried, through)
	if tried != len(attacks) || through != 0 {
		t.Fatalf("hostile targets: %d tried, %d through; want %d tried, 0 through", tried, through, len(attacks))
	}

	// Positive control: the owner allows the internal domain; the same
	// attack now gets a plan (a mail to it), so the check above is what
	// refused it.
	r.env.Config.Policy.AllowDomains = []string{"corp.internal"}
	ref := r.deliver(t, "control@lists.example.org", "control@lists.example.org", "<mailto:leave@corp.internal>", "")
	p, err := NewPlan(context.Background(), r.env, r.svc, ref)
	if err != nil {
		t.Fatalf("control with the domain allowed: %v, want a plan", err)
	}
	defer p.Close()
	if p.Record.Method != listunsub.MethodMailto || p.Record.Target != "leave@corp.internal" {
		t.Fatalf("control: got %s %s, want a mail to leave@corp.internal", p.Record.Method, p.Record.Target)
	}
}

// TestUnsubscribeFollowsOnlyTheRecordedMessage: the record names a UID;
// when the message now at that UID is another one (the mailbox changed
// under the record, or a sender reused a Message-ID the owner's record
// does not have), its List-Unsubscribe is not followed. Positive control:
// the same message recorded under its own Message-ID is planned and its
// one-click request made, once.
func TestUnsubscribeFollowsOnlyTheRecordedMessage(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	header, post := "<https://lists.example.com/u/one>", "List-Unsubscribe=One-Click"
	tried, through := 0, 0
	for _, recorded := range []string{"other@lists.example.org", "OTHER@lists.example.org", "swapped@lists.example.org"} {
		ref := r.deliver(t, "real@lists.example.org", recorded, header, post)
		tried++
		got, err := r.attempt(t, ref)
		if got {
			through++
		}
		if err == nil || !strings.Contains(err.Error(), "is no longer") {
			t.Errorf("recorded %s: got %v, want the message-changed refusal", recorded, err)
		}
	}
	t.Logf("swapped messages: %d tried, %d through", tried, through)
	if through != 0 || r.posts.Load() != 0 {
		t.Fatalf("swapped messages: %d tried, %d through, %d posts; want 0 through, 0 posts", tried, through, r.posts.Load())
	}

	// Positive control: recorded as what it is, it is followed.
	ref := r.deliver(t, "real2@lists.example.org", "real2@lists.example.org", header, post)
	got, err := r.attempt(t, ref)
	if err != nil || !got || r.posts.Load() != 1 {
		t.Fatalf("control: through %v, err %v, posts %d; want one one-click request", got, err, r.posts.Load())
	}
	var us []store.Unsubscribe
	if err := r.st.ListUnsubscribes(func(u *store.Unsubscribe) error { us = append(us, *u); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(us) != 1 || us[0].Result != "ok" || us[0].Method != listunsub.MethodOneClick {
		t.Fatalf("records: %+v, want the one-click recorded ok", us)
	}
}

// TestUnknownReferenceIsAUsageError: a reference that names nothing is
// exit 2 with the hint where ids come from, and nothing is dialled.
func TestUnknownReferenceIsAUsageError(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	dialled := false
	r.env.Mailer = func(*config.Config) *daemon.Mailer { dialled = true; return &daemon.Mailer{} }
	_, err := NewPlan(context.Background(), r.env, r.svc, "<nothing@example.org>")
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.CodeUsage || !strings.Contains(ae.Hint, "queue list") {
		t.Fatalf("got %v, want a usage apperr.Error with a hint", err)
	}
	if dialled {
		t.Error("the mail server was reached for a reference that names nothing")
	}
}
