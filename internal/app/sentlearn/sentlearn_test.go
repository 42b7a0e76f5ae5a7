package sentlearn

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// markOnly records known contacts and nothing else (no outbox index).
type markOnly struct{ got []string }

func (m *markOnly) MarkKnown(_ string, emails []string) error {
	m.got = append(m.got, emails...)
	return nil
}

// Known tells mailagent's own auto-sends by their Message-ID when the
// store can (an auto-reply whose Sent copy lost its headers teaches
// nothing), and deduplicates by address key.
func TestKnownTellsOurAutoSendsByMessageID(t *testing.T) {
	t.Parallel()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	if err := st.PutOutbox(&store.OutboxRecord{ID: "ob_auto", Account: "a", MessageID: "auto-1@example.com", Auto: true, Status: store.OutboxAppended}); err != nil {
		t.Fatal(err)
	}
	parse := func(raw string) *mail.Message { return mail.Parse([]byte(strings.ReplaceAll(raw, "\n", "\r\n"))) }
	msgs := []*mail.Message{
		parse("From: ada@example.com\nTo: stranger@example.net\nMessage-ID: <AUTO-1@example.com>\n\nout of office\n"),
		parse("From: ada@example.com\nTo: Bob <BOB@example.org>\nMessage-ID: <w1@example.com>\n\nhi\n"),
		parse("From: ada@example.com\nTo: bob@example.org\nCc: dora@example.org\nMessage-ID: <w2@example.com>\n\nhi again\n"),
	}
	a := Account{Name: "a", Owner: agent.Owner{Addresses: []string{"ada@example.com"}}}
	got, err := Known(a, st, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"bob@example.org", "dora@example.org"}; !slices.Equal(got, want) {
		t.Errorf("with the outbox index: got %q, want %q", got, want)
	}
	// A store without the index cannot tell, and the headers say nothing:
	// the positive control that the Message-ID look-up is what stops it.
	got, err = Known(a, &markOnly{}, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, "stranger@example.net") {
		t.Errorf("without the outbox index: got %q, want the stranger too (control)", got)
	}
}

// TestLearnIntoOnlyARecordingStore: a store that cannot record contacts
// (a dry run, a watcher's socket) dials nothing; a dial failure for one
// that can is the caller's error.
func TestLearnIntoOnlyARecordingStore(t *testing.T) {
	t.Parallel()
	dials := 0
	boom := errors.New("dial refused")
	dial := func(context.Context) (*imapsync.Client, error) { dials++; return nil, boom }
	a := Account{Name: "personal", Owner: agent.Owner{Addresses: []string{"ada@example.com"}}}
	if err := LearnInto(context.Background(), dial, a, struct{}{}, time.Time{}); err != nil || dials != 0 {
		t.Fatalf("a store that records nothing: err %v, %d dials; want nil and none", err, dials)
	}
	if err := LearnInto(context.Background(), dial, a, &markOnly{}, time.Time{}); !errors.Is(err, boom) || dials != 1 {
		t.Fatalf("a recording store: err %v, %d dials; want the dial error after one dial", err, dials)
	}
}

// sentAttack is a message in the owner's Sent folder that must make no one
// known; switchable says the identity switch (store.SwitchOffIdentityForTest)
// turns its defence off.
type sentAttack struct {
	name, raw  string
	victim     string // the address it tries to make known
	switchable bool
}

var sentAttacks = []sentAttack{
	{"mailagent's auto-reply whose client dropped its headers (told by Message-ID)",
		"From: ada@example.com\nTo: stranger@example.net\nMessage-ID: <AUTO-1@example.com>\n\nThanks, noted.\n", "stranger@example.net", true},
	{"a vacation reply (Auto-Submitted)",
		"From: ada@example.com\nTo: spammer@example.net\nAuto-Submitted: auto-replied\nMessage-ID: <vac-1@example.com>\n\nAway.\n", "spammer@example.net", true},
	{"mailagent's own send (trace header)",
		"From: ada@example.com\nTo: prober@example.net\nX-Mailagent-Trace: t_1\nMessage-ID: <tr-1@example.com>\n\nhello\n", "prober@example.net", true},
	{"a message in Sent that is not the owner's",
		"From: Mallory <mallory@evil.example>\nTo: accomplice@evil.example\nMessage-ID: <m-1@evil.example>\n\nhi\n", "accomplice@evil.example", false},
}

// knownAfter runs Known over a real store that knows mailagent's automatic
// send auto-1@example.com, for the one Sent message raw.
func knownAfter(t *testing.T, raw string) []string {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	if err := st.PutOutbox(&store.OutboxRecord{ID: "ob_auto", Account: "a", MessageID: "auto-1@example.com", Auto: true, Status: store.OutboxAppended}); err != nil {
		t.Fatal(err)
	}
	m := mail.Parse([]byte(strings.ReplaceAll(raw, "\n", "\r\n")))
	got, err := Known(Account{Name: "a", Owner: agent.Owner{Addresses: []string{"ada@example.com"}}}, st, []*mail.Message{m})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestKnownAttacks: automatic mail and mail not the owner's in the Sent
// folder make no one known (triage's Sent learning), counted; the
// positive control runs the switchable ones again with the identity
// switch off, and each must make its victim known. (Not parallel: the
// switch is global.)
func TestKnownAttacks(t *testing.T) {
	tried, through := 0, 0
	for _, a := range sentAttacks {
		tried++
		if got := knownAfter(t, a.raw); len(got) != 0 {
			through++
			t.Errorf("%s: made %q known", a.name, got)
		}
	}
	t.Logf("Sent-learning attacks: %d tried, %d got through", tried, through)
	if tried != len(sentAttacks) || through != 0 {
		t.Errorf("%d of %d got through, want 0", through, tried)
	}

	restore := store.SwitchOffIdentityForTest()
	defer restore()
	controls, landed := 0, 0
	for _, a := range sentAttacks {
		if !a.switchable {
			continue // From is not the owner's: Owner.IsOwner has no switch
		}
		controls++
		if got := knownAfter(t, a.raw); slices.Equal(got, []string{a.victim}) {
			landed++
		} else {
			t.Errorf("positive control: %s made %q known with the identity switch off, want %s", a.name, got, a.victim)
		}
	}
	t.Logf("positive control: %d of %d landed", landed, controls)
	if controls == 0 || landed != controls {
		t.Errorf("positive control: %d of %d landed, want all", landed, controls)
	}
}
