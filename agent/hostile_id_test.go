package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// hostileMessageIDs are Message-IDs no key can hold as they are. lands
// says what each does through the pipeline when the store's keys take it
// as it is (store.SwitchOffKeyHashForTest); "" when nothing on this path
// breaks (bbolt keys are any bytes up to 32 KiB).
var hostileMessageIDs = []struct{ name, id, lands string }{
	{"NUL byte", "<evil\x00id@example.org>", "a look-up of the id before the NUL finds it"},
	{"over bbolt's key limit", "<" + strings.Repeat("z", 40000) + "@example.org>", "the record is not stored: the message never reaches a terminal state"},
	{"invalid UTF-8", "<\xff\xfe@example.org>", ""},
}

// processHostileIDs runs one message per hostile Message-ID through
// Pipeline.Process on a new pipeline and returns what went wrong for
// each: a non-empty list is an attack that got through.
func processHostileIDs(t *testing.T) [][]string {
	t.Helper()
	model := &recordingModel{class: okClass(), draft: "Sure."}
	p, st, _ := newTestPipeline(t, model, "review")
	var out [][]string
	for i, h := range hostileMessageIDs {
		var probs []string
		fail := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
		uid := uint32(900 + i)
		raw := fmt.Sprintf("From: Carol <carol@example.org>\r\nTo: ada@example.com\r\nSubject: hi\r\nDate: %s\r\nMessage-ID: %s\r\n\r\nLunch?\r\n",
			time.Now().Format(time.RFC1123Z), h.id)
		in := Input{Key: store.MessageKey{Account: "a", Mailbox: "HOSTILE", UIDValidity: 1, UID: uid}, Raw: []byte(raw)}
		res, err := p.Process(context.Background(), in)
		switch {
		case err != nil:
			fail("Process: %.200v", err)
		case !res.Record.State.Terminal():
			fail("state: got %s, want terminal", res.Record.State)
		default:
			found, err := st.FindByMessageID("a", res.Record.MessageID)
			if err != nil || len(found) != 1 || found[0].UID != uid {
				fail("FindByMessageID: got %d records, %.200v; want the one of UID %d", len(found), err, uid)
			}
			// No look-up of another id finds it: the text before a NUL.
			if before, _, nul := strings.Cut(mail.IDKey(res.Record.MessageID), "\x00"); nul && before != "" {
				found, err := st.FindByMessageID("", before)
				if err != nil || slices.ContainsFunc(found, func(r *store.MessageRecord) bool { return r.UID == uid }) {
					fail("a look-up of %q found it (%v)", before, err)
				}
			}
		}
		if cp, err := st.AdvanceCheckpoint("a", "HOSTILE", 1); err != nil || cp.LastUID != uid {
			fail("checkpoint: got %d, %v; want %d", cp.LastUID, err, uid)
		}
		out = append(out, probs)
	}
	return out
}

// TestHostileMessageIDReachesATerminalState: a message whose Message-ID
// holds a NUL byte (or is huge, or not UTF-8) is processed to a terminal
// state, stored, found again by its Message-ID and by no look-up of
// another id, and the mailbox checkpoint moves past it. Positive control:
// TestHostileMessageIDLandsWithoutKeyHash.
func TestHostileMessageIDReachesATerminalState(t *testing.T) {
	t.Parallel()
	probs := processHostileIDs(t)
	tried, through := 0, 0
	for i, h := range hostileMessageIDs {
		tried++
		if len(probs[i]) > 0 {
			through++
		}
		for _, p := range probs[i] {
			t.Errorf("%s: %s", h.name, p)
		}
	}
	t.Logf("hostile Message-IDs through the pipeline: %d tried, %d through", tried, through)
	if through != 0 {
		t.Fatalf("%d of %d hostile Message-IDs got through, want 0", through, tried)
	}
}

// TestHostileMessageIDLandsWithoutKeyHash is the positive control of
// TestHostileMessageIDReachesATerminalState: the same messages through
// the same pipeline with the store's key hash off
// (store.SwitchOffKeyHashForTest). The ids the table says land must; the
// other must still pass, which shows nothing else on the path stopped
// them. Not parallel: it sets a package switch of store.
func TestHostileMessageIDLandsWithoutKeyHash(t *testing.T) {
	restore := store.SwitchOffKeyHashForTest()
	defer restore()
	probs := processHostileIDs(t)
	tried, landed, want := 0, 0, 0
	for i, h := range hostileMessageIDs {
		tried++
		if h.lands != "" {
			want++
		}
		switch got := len(probs[i]) > 0; {
		case got && h.lands != "":
			landed++
			t.Logf("%s: landed (%s): %q", h.name, h.lands, probs[i])
		case got:
			landed++
			t.Errorf("%s: landed with the key hash off (%q), though the table says nothing breaks", h.name, probs[i])
		case h.lands != "":
			t.Errorf("%s: did not land with the key hash off, want: %s", h.name, h.lands)
		}
	}
	t.Logf("hostile Message-IDs, key hash off: %d tried, %d landed (want %d)", tried, landed, want)
	if landed != want {
		t.Fatalf("positive control: got %d of %d landed with the key hash off, want %d", landed, tried, want)
	}
}
