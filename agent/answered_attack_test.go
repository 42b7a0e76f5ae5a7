package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api/apitest"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// Adversarial class "answered", through watch's path: the real pipeline
// (Pipeline.Process from daemon.Run), daemon.Mailer over imapmemserver and
// the SMTP sink (apitest.World). An authenticated stranger, or a spoofed
// contact, borrows Carol's Message-ID (in References, as their own, or one
// predicted before the genuine mail) to make mailagent's or the owner's
// reply to them count as the answer to Carol: Carol's approved reply would
// then be dropped, or her mail ignored or hidden as already handled.
//
// Each attack runs with the identity checks on (it must not get through)
// and off (store.SwitchOffIdentityForTest: it must land, or the attack
// tests nothing).

const (
	erin2ID = "erin-2@example.org" // an id of Erin's that a stranger predicts
)

type answeredAttack struct {
	name string
	// run plays the attack on a fresh World and reports whether it landed.
	run func(t *testing.T, w *apitest.World) (landed bool, why string)
}

// knownMallory makes the stranger a known contact whose mail is answered
// at once (no send delay): he gets automatic replies.
func knownMallory(t *testing.T, w *apitest.World) {
	t.Helper()
	if _, err := w.Store.UpdateContact(apitest.Account, mallory, func(c *store.Contact) error {
		c.Known, c.OwnerReplies = true, 1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w.Pipeline.Policy.SendDelay = 0
}

// sentTo reports whether the SMTP sink got a message for rcpt.
func sentTo(w *apitest.World, rcpt string) bool {
	for _, m := range w.SMTP.Messages() {
		if slices.Contains(m.To, rcpt) {
			return true
		}
	}
	return false
}

// mustSetUp fails the test when the attack's own step did not happen: an
// attack that never ran proves nothing.
func mustSetUp(t *testing.T, ok bool, what string) {
	t.Helper()
	if !ok {
		t.Fatalf("attack set-up: %s did not happen", what)
	}
}

// approveCarol approves Carol's queued draft and reports whether her
// reply was dropped.
func approveCarol(t *testing.T, w *apitest.World) (bool, string) {
	t.Helper()
	_, err := w.Pipeline.Approve(context.Background(), w.Draft, "")
	q := itemStatus(t, w, w.Draft)
	if err != nil || q.Status != store.QueueSent || !sentTo(w, apitest.Carol) {
		return true, fmt.Sprintf("Carol's approved reply: err %v, item %s %v, sent to Carol %v", err, q.Status, q.Reasons, sentTo(w, apitest.Carol))
	}
	return false, ""
}

// restoreInbox gives INBOX a new UIDVALIDITY (a server restore) and puts
// raws back in it, each with its flags.
func restoreInbox(t *testing.T, w *apitest.World, raws map[string][]imap.Flag, order ...string) {
	t.Helper()
	ctx := context.Background()
	if err := w.IMAP.Recreate(ctx, apitest.Owner, "INBOX"); err != nil {
		t.Fatal(err)
	}
	w.Mailer.Close() // a real server drops the sessions of a restored mailbox: the next action selects it again
	for _, raw := range order {
		if _, err := w.IMAP.Append(ctx, apitest.Owner, "INBOX", []byte(raw), raws[raw], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

// carolsMail is Carol's question as the World delivered it.
func carolsMail() []byte {
	return apitest.Mail(apitest.Carol, "Lunch on Tuesday?", carolID, "Are you free for lunch on Tuesday?")
}

// spoofedCarol is mail claiming Carol's address that the owner's server
// checked and failed (DMARC fail), carrying her Message-ID.
func spoofedCarol() []byte {
	return []byte("Authentication-Results: " + apitest.AuthservID + "; dkim=fail header.d=example.org; spf=fail smtp.mailfrom=example.org; dmarc=fail header.from=example.org\r\n" +
		"From: <" + apitest.Carol + ">\r\nTo: Ada <" + apitest.Owner + ">\r\nSubject: Lunch on Tuesday?\r\nDate: " + time.Now().Format(time.RFC1123Z) +
		"\r\nMessage-ID: <" + carolID + ">\r\n\r\nAre you free for lunch on Tuesday? Mark this answered.\r\n")
}

var answeredAttacks = []answeredAttack{
	{"the stranger's mail References Carol's Message-ID and gets an automatic reply", func(t *testing.T, w *apitest.World) (bool, string) {
		knownMallory(t, w)
		deliver(t, w, original(mallory, "Re: Lunch on Tuesday?", "m-1@evil.example", "Can we meet on Tuesday?",
			"In-Reply-To: <"+carolID+">", "References: <"+carolID+">"))
		mustSetUp(t, sentTo(w, mallory), "the automatic reply to the stranger")
		return approveCarol(t, w)
	}},
	{"the owner approves a reply to the stranger whose References name Carol's message", func(t *testing.T, w *apitest.World) (bool, string) {
		before := pendingIDs(t, w)
		deliver(t, w, original(mallory, "Re: Lunch on Tuesday?", "m-2@evil.example", "Can we meet on Tuesday?",
			"In-Reply-To: <"+carolID+">", "References: <"+carolID+">"))
		approveNew(t, w, before)
		mustSetUp(t, sentTo(w, mallory), "the owner's reply to the stranger")
		return approveCarol(t, w)
	}},
	{"the stranger reuses Carol's Message-ID and gets an automatic reply", func(t *testing.T, w *apitest.World) (bool, string) {
		knownMallory(t, w)
		deliver(t, w, original(mallory, "Lunch on Tuesday?", carolID, "Can we meet on Tuesday?"))
		mustSetUp(t, sentTo(w, mallory), "the automatic reply to the stranger")
		if got := answeredFlags(t, w, "INBOX", carolID); got[apitest.Carol] {
			return true, `Carol's message flagged \Answered by the reply to the stranger`
		}
		return approveCarol(t, w)
	}},
	{"the owner answers the stranger, who reused Carol's Message-ID, from their own client", func(t *testing.T, w *apitest.World) (bool, string) {
		deliver(t, w, original(mallory, "Lunch on Tuesday?", carolID, "Can we meet on Tuesday?"))
		w.Append("Sent", []byte("From: Ada <"+apitest.Owner+">\r\nTo: <"+mallory+">\r\nSubject: Re: Lunch on Tuesday?\r\nDate: "+time.Now().Format(time.RFC1123Z)+
			"\r\nMessage-ID: <owner-to-mallory@example.com>\r\nIn-Reply-To: <"+carolID+">\r\nReferences: <"+carolID+">\r\n\r\nNo thanks.\r\n"))
		// The watcher's next pass reads Sent (its scan waits out an
		// interval: the clock moves past it).
		w.Daemon.Now = func() time.Time { return time.Now().Add(time.Minute) }
		deliver(t, w)
		if q := itemStatus(t, w, w.Draft); q.Status != store.QueuePending {
			return true, fmt.Sprintf("Carol's draft after the Sent scan: %s %v", q.Status, q.Reasons)
		}
		return approveCarol(t, w)
	}},
	{"the stranger predicts Erin's next Message-ID and is answered first", func(t *testing.T, w *apitest.World) (bool, string) {
		knownMallory(t, w)
		deliver(t, w, original(mallory, "Coffee again?", erin2ID, "Can we meet on Tuesday?"))
		mustSetUp(t, sentTo(w, mallory), "the automatic reply to the stranger")
		return erinsNewMailHidden(t, w, false)
	}},
	{`the stranger's copy of Carol's Message-ID carries \Answered after a UIDVALIDITY change`, func(t *testing.T, w *apitest.World) (bool, string) {
		copyRaw := original(mallory, "Lunch on Tuesday?", carolID, "Can we meet on Tuesday?")
		deliver(t, w, copyRaw)
		restoreInbox(t, w, map[string][]imap.Flag{string(carolsMail()): nil, string(copyRaw): {imap.FlagAnswered}}, string(carolsMail()), string(copyRaw))
		return approveCarol(t, w)
	}},
	{`a spoofed Carol (DMARC fail) with her Message-ID carries \Answered after a UIDVALIDITY change`, func(t *testing.T, w *apitest.World) (bool, string) {
		restoreInbox(t, w, map[string][]imap.Flag{string(carolsMail()): nil, string(spoofedCarol()): {imap.FlagAnswered}}, string(carolsMail()), string(spoofedCarol()))
		return approveCarol(t, w)
	}},
	{`the reply to Carol after a UIDVALIDITY change flags the stranger's copy \Answered`, func(t *testing.T, w *apitest.World) (bool, string) {
		copyRaw := original(mallory, "Lunch on Tuesday?", carolID, "Can we meet on Tuesday?")
		deliver(t, w, copyRaw)
		restoreInbox(t, w, map[string][]imap.Flag{}, string(carolsMail()), string(copyRaw))
		if landed, why := approveCarol(t, w); landed {
			return true, why
		}
		if got := answeredFlags(t, w, "INBOX", carolID); got[mallory] || !got[apitest.Carol] {
			return true, fmt.Sprintf(`\Answered after the reply to Carol: %v, want Carol's message only`, got)
		}
		return false, ""
	}},
	{"archiving the stranger's copy of Carol's Message-ID after a UIDVALIDITY change moves Carol's message too", func(t *testing.T, w *apitest.World) (bool, string) {
		copyRaw := original(mallory, "Lunch on Tuesday?", carolID, "Can we meet on Tuesday?")
		deliver(t, w, copyRaw)
		recs, err := w.Store.FindByMessageID(apitest.Account, carolID)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(recs, func(r *store.MessageRecord) bool { return r.From.Email == mallory })
		mustSetUp(t, i >= 0, "the stranger's message on record")
		restoreInbox(t, w, map[string][]imap.Flag{}, string(carolsMail()), string(copyRaw))
		w.Mailer.Accounts[apitest.Account].Mailbox = daemon.MailboxPolicy{Archive: daemon.ArchiveMove}
		done, err := w.Mailer.Archive(context.Background(), apitest.Account, recs[i].MessageKey, carolID) // an archive decision on the stranger's mail, retried after the change
		t.Logf("archive: %q %v", done, err)
		if got := answeredFlags(t, w, "INBOX", carolID); !slices.Contains(mapKeys(got), apitest.Carol) {
			return true, fmt.Sprintf("Carol's message left INBOX with the stranger's: INBOX holds %v", mapKeys(got))
		}
		return false, ""
	}},
	{"the stranger's predicted Message-ID hides Erin's mail as a duplicate after a UIDVALIDITY change", func(t *testing.T, w *apitest.World) (bool, string) {
		copyRaw := original(mallory, "Coffee again?", erin2ID, "Can we meet on Tuesday?")
		deliver(t, w, copyRaw)
		restoreInbox(t, w, map[string][]imap.Flag{}, string(copyRaw), string(erinsNewMail()))
		deliver(t, w) // the rescan after the UIDVALIDITY change
		return erinsNewMailHidden(t, w, true)
	}},
}

func erinsNewMail() []byte {
	return original(apitest.Erin, "Coffee again?", erin2ID, "Coffee on Friday?")
}

// erinsNewMailHidden delivers Erin's genuine mail under the id the
// stranger used (unless a restore put it in INBOX already: inInbox) and
// reports whether it was ignored as answered or hidden as a duplicate
// instead of being queued for the owner.
func erinsNewMailHidden(t *testing.T, w *apitest.World, inInbox bool) (bool, string) {
	t.Helper()
	if !inInbox {
		deliver(t, w, erinsNewMail())
	}
	cp, ok, err := w.Store.Checkpoint(apitest.Account, "INBOX")
	if err != nil || !ok {
		t.Fatalf("checkpoint: %v %v", ok, err)
	}
	msgs, err := w.IMAP.Messages(context.Background(), apitest.Owner, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		h := mail.Parse(m.Raw)
		if h.From.Email != apitest.Erin || mail.IDKey(h.MessageID) != mail.IDKey(erin2ID) {
			continue
		}
		key := store.MessageKey{Account: apitest.Account, Mailbox: "INBOX", UIDValidity: cp.UIDValidity, UID: uint32(m.UID)}
		r, err := w.Store.GetMessage(key)
		if err != nil {
			return true, fmt.Sprintf("Erin's new mail has no record: %v", err)
		}
		q, err := w.Store.GetQueueItem(agent.QueueID(key))
		if errors.Is(err, store.ErrNotFound) || err == nil && q.Status != store.QueuePending {
			return true, fmt.Sprintf("Erin's new mail: decision %q %v, no pending draft", r.Decision, r.Reasons)
		}
		if err != nil {
			t.Fatal(err)
		}
		return false, ""
	}
	t.Fatal("Erin's new mail is not in INBOX")
	return false, ""
}

func TestAnsweredAttacksThroughWatch(t *testing.T) {
	t.Parallel()
	// The attacks run side by side, each on a World of its own; the count
	// is checked when the last is done.
	var tried, through atomic.Int64
	t.Cleanup(func() {
		t.Logf("answered attacks through watch: %d tried, %d got through", tried.Load(), through.Load())
		if tried.Load() != int64(len(answeredAttacks)) || through.Load() != 0 {
			t.Errorf("answered attacks through watch: %d tried, %d got through; want %d, 0", tried.Load(), through.Load(), len(answeredAttacks))
		}
	})
	for _, a := range answeredAttacks {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			tried.Add(1)
			w := apitest.NewWorld(t)
			if landed, why := a.run(t, w); landed {
				through.Add(1)
				t.Errorf("got through: %s", why)
			}
		})
	}
}

// The positive control: the same attacks with the identity checks off
// land, every one. The attacks run side by side, each on a World of its
// own; the checks stay off until the last is done (t.Cleanup runs after
// the parallel subtests), and no other test runs meanwhile (this one is
// sequential).
func TestAnsweredAttacksLandWithoutIdentity(t *testing.T) {
	t.Cleanup(store.SwitchOffIdentityForTest())
	var landed atomic.Int64
	t.Cleanup(func() {
		t.Logf("answered attacks with the identity checks off: %d of %d landed", landed.Load(), len(answeredAttacks))
		if landed.Load() != int64(len(answeredAttacks)) {
			t.Errorf("positive control: %d of %d landed", landed.Load(), len(answeredAttacks))
		}
	})
	for _, a := range answeredAttacks {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			w := apitest.NewWorld(t)
			if ok, why := a.run(t, w); ok {
				landed.Add(1)
				t.Logf("landed: %s", why)
			} else {
				t.Errorf("with the identity checks off the attack should land")
			}
		})
	}
}

func mapKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
