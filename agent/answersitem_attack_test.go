package agent

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// answersItemAttack is a queued item for a stranger's message that
// borrows the Message-ID of Carol's real message, set up so that the
// owner's reply to Carol looks, by its From or its reply recipients'
// text, like an answer to it too.
type answersItemAttack struct {
	name string
	rec  func(uid uint32) *store.MessageRecord
}

const borrowedID = "c1@example.org"

func answersItemAttacks() []answersItemAttack {
	msg := func(uid uint32, from string, auth *store.SenderAuth) *store.MessageRecord {
		return &store.MessageRecord{MessageKey: store.MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: uid},
			MessageID: borrowedID, From: mail.Address{Email: from}, To: []mail.Address{{Email: "ada@example.com"}},
			Subject: "Lunch", Route: RouteExternal, State: store.StateDone, Decision: DecisionQueue, SenderAuth: auth}
	}
	authed := func(a string) *store.SenderAuth {
		return &store.SenderAuth{Authenticated: true, Address: a, Method: "dmarc"}
	}
	failed := &store.SenderAuth{Address: "mallory@evil.example", Reason: "dmarc=fail"}
	return []answersItemAttack{
		{"From text names Carol, the server authenticated Mallory", func(uid uint32) *store.MessageRecord {
			r := msg(uid, "carol@example.org", authed("mallory@evil.example"))
			r.From.Name = "Carol"
			return r
		}},
		{"unauthenticated, Reply-To Carol", func(uid uint32) *store.MessageRecord {
			r := msg(uid, "mallory@evil.example", failed)
			r.ReplyTo = []mail.Address{{Email: "carol@example.org"}}
			return r
		}},
		{"unauthenticated, Carol in Cc (a reply-all recipient)", func(uid uint32) *store.MessageRecord {
			r := msg(uid, "mallory@evil.example", failed)
			r.Cc = []mail.Address{{Email: "carol@example.org"}}
			return r
		}},
	}
}

// answersItemWorld stores Carol's real message and the attacks' with
// their queue items, the recipients chosen as the pipeline chooses them
// (compose.Recipients: Reply-To, else From; reply-all adds To and Cc).
func answersItemWorld(t *testing.T) (*Pipeline, *store.Store, map[string]string) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true}) // no fsync: nothing here survives a crash it tests
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	owner := Owner{Name: "Ada", Addresses: []string{"ada@example.com"}, AuthservID: testAuthservID}
	p := &Pipeline{Store: st, Accounts: map[string]Account{"a": {Name: "a", Owner: owner, From: mail.Address{Email: "ada@example.com"}}},
		Actor: &Actor{Store: st}}
	items := map[string]string{} // queue id → attack name ("" = Carol's)
	put := func(name string, rec *store.MessageRecord) {
		if err := st.PutMessage(rec); err != nil {
			t.Fatal(err)
		}
		var to []mail.Address
		to = append(to, rec.ReplyTo...)
		if len(to) == 0 {
			to = append(to, rec.From)
		}
		to = append(to, rec.Cc...) // reply-all
		q := &store.QueueItem{ID: QueueID(rec.MessageKey), Kind: store.KindDraft, Account: "a", Message: rec.MessageKey,
			MessageID: rec.MessageID, From: rec.From, To: to, Subject: rec.Subject, Draft: "Yes.", Status: store.QueuePending}
		if err := st.PutQueueItem(q); err != nil {
			t.Fatal(err)
		}
		items[q.ID] = name
	}
	carol := answersItemAttacks()[0].rec(1)
	carol.From, carol.SenderAuth = mail.Address{Name: "Carol", Email: "carol@example.org"}, &store.SenderAuth{Authenticated: true, Address: "carol@example.org", Method: "dmarc"}
	put("", carol)
	for i, a := range answersItemAttacks() {
		put(a.name, a.rec(uint32(10+i)))
	}
	return p, st, items
}

// TestAnswersItemAttacks is the adversarial class "answered" of the Sent
// scan: the owner answers Carol's message from their own client, and
// strangers' queued messages that borrow its Message-ID must stay in the
// queue, whatever their From text, Reply-To or Cc say; Carol's item is
// resolved. The positive control (the identity layer off) resolves every
// attack's item too.
func TestAnswersItemAttacks(t *testing.T) {
	reply := &mail.Message{MessageID: "r1@example.com", From: mail.Address{Email: "ada@example.com"},
		To: []mail.Address{{Name: "Carol", Email: "carol@example.org"}}, InReplyTo: []string{"<" + borrowedID + ">"}, Subject: "Re: Lunch"}
	run := func(t *testing.T) (tried, through int, landed []string) {
		t.Helper()
		p, st, items := answersItemWorld(t)
		if err := p.OwnerReplied(context.Background(), "a", reply); err != nil {
			t.Fatal(err)
		}
		for id, name := range items {
			q, err := st.GetQueueItem(id)
			if err != nil {
				t.Fatal(err)
			}
			if name == "" {
				if q.Status != store.QueueResolved {
					t.Errorf("Carol's item: %s, want resolved (the owner answered her)", q.Status)
				}
				continue
			}
			tried++
			if q.Status != store.QueuePending {
				through++
				landed = append(landed, name)
				if !store.IdentityChecksOff() {
					t.Errorf("%s: the owner's reply to Carol resolved it (%s)", name, q.Status)
				}
			}
		}
		slices.Sort(landed)
		return tried, through, landed
	}
	tried, through, _ := run(t)
	t.Logf("answered-item attacks: %d tried, %d got through", tried, through)
	if tried != len(answersItemAttacks()) || through != 0 {
		t.Fatalf("%d of %d answered-item attacks got through", through, tried)
	}
	// Positive control: with the identity layer off, every attack lands.
	restore := store.SwitchOffIdentityForTest()
	defer restore()
	ctried, cthrough, landed := run(t)
	t.Logf("positive control (identity layer off): %d tried, %d got through", ctried, cthrough)
	if ctried != tried || cthrough != ctried {
		t.Fatalf("positive control: %d of %d landed (%q), want all", cthrough, ctried, landed)
	}
}
