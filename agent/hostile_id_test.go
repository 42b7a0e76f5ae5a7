package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/store"
)

// TestHostileMessageIDReachesATerminalState: a message whose Message-ID
// holds a NUL byte (or is huge, or not UTF-8) is processed to a terminal
// state, stored, found again by its Message-ID, and the mailbox
// checkpoint moves past it.
func TestHostileMessageIDReachesATerminalState(t *testing.T) {
	ids := []string{"<evil\x00id@example.org>", "<" + strings.Repeat("z", 40000) + "@example.org>", "<\xff\xfe@example.org>"}
	model := &recordingModel{class: okClass(), draft: "Sure."}
	p, st, _ := newTestPipeline(t, model, "review")
	for i, id := range ids {
		uid := uint32(900 + i)
		raw := fmt.Sprintf("From: Carol <carol@example.org>\r\nTo: ada@example.com\r\nSubject: hi\r\nDate: %s\r\nMessage-ID: %s\r\n\r\nLunch?\r\n",
			time.Now().Format(time.RFC1123Z), id)
		in := Input{Key: store.MessageKey{Account: "a", Mailbox: "HOSTILE", UIDValidity: 1, UID: uid}, Raw: []byte(raw)}
		out, err := p.Process(context.Background(), in)
		if err != nil {
			t.Fatalf("id %d: Process: %v", i, err)
		}
		if !out.Record.State.Terminal() {
			t.Fatalf("id %d: state %s, want terminal", i, out.Record.State)
		}
		found, err := st.FindByMessageID("a", out.Record.MessageID)
		if err != nil || len(found) != 1 || found[0].UID != uid {
			t.Fatalf("id %d: FindByMessageID: %d, %v", i, len(found), err)
		}
		cp, err := st.AdvanceCheckpoint("a", "HOSTILE", 1)
		if err != nil || cp.LastUID != uid {
			t.Fatalf("id %d: checkpoint %d, %v; want %d", i, cp.LastUID, err, uid)
		}
	}
}
