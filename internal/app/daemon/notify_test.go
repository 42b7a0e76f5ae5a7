package daemon_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/api/apitest"
	"github.com/mailagent/mailagent/internal/notify"
	"github.com/mailagent/mailagent/store"
)

// recordingNotifier records the notes the daemon hands its Notifier.
type recordingNotifier struct {
	mu    sync.Mutex
	notes []notify.Note
}

func (r *recordingNotifier) Notify(_ context.Context, n notify.Note) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, n)
	return nil
}

// TestWatchNotifiesWhatNeedsTheOwner: new mail that leaves a draft to
// approve is notified, with the sender and subject only (not the body,
// not the model's summary or draft); an auto-sent reply is not; a forged
// From (no authentication) arrives marked unverified, an authenticated
// one verified.
func TestWatchNotifiesWhatNeedsTheOwner(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	rec := &recordingNotifier{}
	w.Daemon.Notifier = rec

	const secret = "SECRET-BODY-7731"
	uids := map[string]uint32{
		// Authenticated, unknown: a draft queued for the owner.
		"carol": w.Append("INBOX", apitest.Mail(apitest.Carol, "Lunch <b>Thursday</b>?", "carol-n1@example.org", "Can we meet? "+secret)),
		// A known contact: auto-sent, nothing for the owner.
		"bob": w.Append("INBOX", apitest.Mail(apitest.Bob, "Re: Tuesday", "bob-n1@example.net", "Tuesday then? "+secret)),
		// Carol's address with no Authentication-Results: a forgery.
		"forged": w.Append("INBOX", []byte("From: Carol <"+apitest.Carol+">\r\nTo: Ada <"+apitest.Owner+">\r\nSubject: Urgent: new bank details\r\n"+
			"Date: "+time.Now().Format(time.RFC1123Z)+"\r\nMessage-ID: <forged-n1@evil.test>\r\n\r\nPay here. "+secret+"\r\n")),
	}
	runOnce(t, w)

	byKey := map[string]*store.MessageRecord{}
	want := 0
	for name, uid := range uids {
		k := w.UIDs["carol"]
		k.UID = uid
		r, err := w.Store.GetMessage(k)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		byKey[name] = r
		switch r.Decision {
		case "queue", "notify", "needs_review":
			want++
		}
	}
	if d := byKey["carol"].Decision; d != "queue" {
		t.Fatalf("Carol's mail: decision %q, want queue (the test needs one item for the owner)", d)
	}
	if d := byKey["bob"].Decision; d != "auto_send" {
		t.Fatalf("Bob's mail: decision %q, want auto_send (the test needs one that is not for the owner)", d)
	}

	rec.mu.Lock()
	notes := append([]notify.Note(nil), rec.notes...)
	rec.mu.Unlock()
	if len(notes) != want {
		t.Fatalf("notifications: got %d %+v, want %d (one per message that needs the owner)", len(notes), notes, want)
	}
	seen := map[string]notify.Note{}
	for _, n := range notes {
		all := fmt.Sprintf("%+v", n)
		for _, leak := range []string{secret, "asks to meet", "Sure, Tuesday"} {
			if strings.Contains(all, leak) {
				t.Errorf("a notification carries %q (body or model text): %s", leak, all)
			}
		}
		seen[n.Subject] = n
	}
	if _, ok := seen["Re: Tuesday"]; ok {
		t.Error("the auto-sent reply to Bob was notified")
	}
	c, ok := seen["Lunch <b>Thursday</b>?"]
	if !ok || c.From.Email != apitest.Carol || !c.Verified {
		t.Errorf("Carol's queued mail: got %+v (present %v), want her address, verified", c, ok)
	}
	// The forgery is set aside for the owner (unauthenticated mail is
	// never answered on its own), so it is notified, marked unverified.
	if d := byKey["forged"].Decision; d != "queue" && d != "notify" && d != "needs_review" {
		t.Fatalf("the forged mail: decision %q, want one that needs the owner", d)
	}
	if f, ok := seen["Urgent: new bank details"]; !ok || f.Verified {
		t.Errorf("the forged mail: got %+v (present %v), want it notified as unverified", f, ok)
	}
}
