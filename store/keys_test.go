package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
)

// TestHostileMessageIDs: a message whose Message-ID (or address, or
// thread id) cannot be used in a key as it is is still stored, reads
// back, carries the reason, and is found through the message-id index.
func TestHostileMessageIDs(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, id string }{
		{"NUL byte", "<evil\x00id@example.com>"},
		{"only NUL", "\x00"},
		{"oversized", "<" + strings.Repeat("a", 5000) + "@example.com>"},
		{"over bbolt's key limit", "<" + strings.Repeat("b", 40000) + "@example.com>"},
		{"invalid UTF-8", "<\xff\xfe@example.com>"},
		{"control characters", "<a\r\nb@example.com>"},
		{"looks like a hashed key", "#sha256:00"},
	}
	s, _ := openTest(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := msg("acct", "INBOX", 1, uint32(i+1), StateDone)
			r.MessageID = c.id
			r.ThreadID = "t\x00" + c.id
			if err := s.PutMessage(r); err != nil {
				t.Fatalf("PutMessage: %v", err)
			}
			if err := s.PutTrace(&Trace{TraceID: "tr" + string(rune('a'+i)), Message: r.MessageKey, MessageID: c.id}); err != nil {
				t.Fatalf("PutTrace: %v", err)
			}
			got, err := s.GetMessage(r.MessageKey)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(c.id, "\x00") && got.MessageID != c.id {
				t.Errorf("Message-ID read back as %q", got.MessageID)
			}
			if _, unsafe := keyPart(mail.IDKey(c.id)); unsafe && len(got.Problems) == 0 {
				t.Errorf("no reason recorded for a hashed key")
			}
			found, err := s.FindByMessageID("acct", c.id)
			if err != nil || len(found) != 1 || found[0].UID != r.UID {
				t.Fatalf("FindByMessageID: %d records, %v", len(found), err)
			}
			if tr, err := s.TraceForMessageID("", c.id); err != nil || tr.Message != r.MessageKey {
				t.Fatalf("TraceForMessageID: %v, %v", tr, err)
			}
			var inThread int
			if err := s.ListMessages(MessageFilter{ThreadID: r.ThreadID}, func(*MessageRecord) error { inThread++; return nil }); err != nil || inThread != 1 {
				t.Fatalf("thread index: %d, %v", inThread, err)
			}
			// The checkpoint moves past it: nothing holds the mailbox back.
			cp, err := s.AdvanceCheckpoint("acct", "INBOX", 1)
			if err != nil || cp.LastUID != uint32(i+1) {
				t.Fatalf("checkpoint %d, %v; want %d", cp.LastUID, err, i+1)
			}
		})
	}
	// A look-up of an ordinary id does not match a hashed one.
	if found, _ := s.FindByMessageID("", "evil"); len(found) != 0 {
		t.Fatalf("found %d for a prefix", len(found))
	}
}

func TestHostileContactAddress(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	for _, email := range []string{"a\x00b@example.com", strings.Repeat("x", 40000) + "@example.com", "\xff@example.com"} {
		if _, err := s.UpdateContact("acct", email, func(c *Contact) error { c.Inbound++; return nil }); err != nil {
			t.Fatalf("UpdateContact: %v", err)
		}
		c, err := s.GetContact("acct", email)
		if err != nil || c.Inbound != 1 {
			t.Fatalf("GetContact: %+v, %v", c, err)
		}
		if ok, err := s.IncrAutoSend("acct", email, "2025-03-01", 5, 5); err != nil || !ok {
			t.Fatalf("IncrAutoSend: %v, %v", ok, err)
		}
		if err := s.ForgetContact("acct", email); err != nil {
			t.Fatalf("ForgetContact: %v", err)
		}
		if _, err := s.GetContact("acct", email); !errors.Is(err, ErrNotFound) {
			t.Fatalf("after forget: %v", err)
		}
	}
}
