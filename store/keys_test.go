package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
)

// hostileIDCase is a Message-ID that cannot be used in a key as it is.
// lands says what the message's Message-ID does when keys take it as it
// is (keyHashOff); "" when nothing on this path breaks: bbolt keys are any
// bytes up to 32 KiB, and a NUL with no text before it is a prefix of no
// other id, so the hash there keeps keys short, printable and unambiguous
// (hygiene) rather than stopping an attack.
type hostileIDCase struct{ name, id, lands string }

var hostileIDCases = []hostileIDCase{
	{"NUL byte", "<evil\x00id@example.com>", "a look-up of the id before the NUL finds it"},
	{"only NUL", "\x00", ""},
	{"oversized", "<" + strings.Repeat("a", 5000) + "@example.com>", ""},
	{"over bbolt's key limit", "<" + strings.Repeat("b", 40000) + "@example.com>", "bbolt refuses the key: the message is not stored"},
	{"invalid UTF-8", "<\xff\xfe@example.com>", ""},
	{"control characters", "<a\r\nb@example.com>", ""},
	{"looks like a hashed key", "#sha256:00", ""},
}

// hostileThread is the thread id stored with each hostile Message-ID:
// "t", a NUL, the id. Each is an attack of its own on the thread index:
// as it is in a key, a look-up of thread "t" finds it (or, over 32 KiB,
// bbolt refuses it).
func hostileThread(id string) string { return "t\x00" + id }

// putHostileIDs stores one message per hostile Message-ID (its thread id
// hostileThread) in a new store and returns, per case, what went wrong
// for its Message-ID and for its thread id: each non-empty list is an
// attack that got through.
func putHostileIDs(t *testing.T) (idProblems, threadProblems [][]string) {
	t.Helper()
	s, _ := openTest(t)
	for i, c := range hostileIDCases {
		var id, thread []string
		idf := func(format string, a ...any) { id = append(id, fmt.Sprintf(format, a...)) }
		threadf := func(format string, a ...any) { thread = append(thread, fmt.Sprintf(format, a...)) }
		r := msg("acct", "INBOX", 1, uint32(i+1), StateDone)
		r.MessageID = c.id
		r.ThreadID = hostileThread(c.id)
		if err := s.PutMessage(r); err != nil {
			idf("PutMessage: %v", err)
			threadf("PutMessage: %v", err)
			idProblems, threadProblems = append(idProblems, id), append(threadProblems, thread)
			continue
		}
		if err := s.PutTrace(&Trace{TraceID: "tr" + string(rune('a'+i)), Message: r.MessageKey, MessageID: c.id}); err != nil {
			idf("PutTrace: %v", err)
		}
		if got, err := s.GetMessage(r.MessageKey); err != nil {
			idf("GetMessage: %v", err)
		} else {
			if strings.Contains(c.id, "\x00") && got.MessageID != c.id {
				idf("Message-ID read back as %q, want %q", got.MessageID, c.id)
			}
			if _, unsafe := keyPart(mail.IDKey(c.id)); unsafe && len(got.Problems) == 0 {
				idf("no reason recorded for a hashed key")
			}
		}
		if found, err := s.FindByMessageID("acct", c.id); err != nil || len(found) != 1 || found[0].UID != r.UID {
			idf("FindByMessageID: got %d records, %v; want the one of UID %d", len(found), err, r.UID)
		}
		if tr, err := s.TraceForMessageID("", c.id); err != nil || tr.Message != r.MessageKey {
			idf("TraceForMessageID: got %v, %v; want the trace of %s", tr, err, r.MessageKey)
		}
		// A look-up of another id, the text before the NUL, does not
		// match it.
		if before, _, nul := strings.Cut(mail.IDKey(c.id), "\x00"); nul && before != "" {
			found, err := s.FindByMessageID("", before)
			if err != nil || slices.ContainsFunc(found, func(f *MessageRecord) bool { return f.MessageKey == r.MessageKey }) {
				idf("a look-up of %q found it (%v)", before, err)
			}
		}
		var inThread, inT int
		if err := s.ListMessages(MessageFilter{ThreadID: r.ThreadID}, func(*MessageRecord) error { inThread++; return nil }); err != nil || inThread != 1 {
			threadf("thread index: got %d, %v; want 1", inThread, err)
		}
		// Nor does a look-up of another thread, "t".
		if err := s.ListMessages(MessageFilter{ThreadID: "t"}, func(f *MessageRecord) error {
			if f.MessageKey == r.MessageKey {
				inT++
			}
			return nil
		}); err != nil || inT != 0 {
			threadf("a look-up of thread %q: got it %d times, %v; want 0", "t", inT, err)
		}
		// The checkpoint moves past it: nothing holds the mailbox back.
		if cp, err := s.AdvanceCheckpoint("acct", "INBOX", 1); err != nil || cp.LastUID != r.UID {
			idf("checkpoint: got %d, %v; want %d", cp.LastUID, err, r.UID)
		}
		idProblems, threadProblems = append(idProblems, id), append(threadProblems, thread)
	}
	return idProblems, threadProblems
}

// cut shortens a problem for a log line (problems quote ids of 40,000
// bytes).
func cut(p string) string {
	if len(p) > 160 {
		return p[:160] + "…"
	}
	return p
}

// firstProblem is the first of problems, cut short, and how many there
// are.
func firstProblem(problems []string) string {
	if len(problems) == 0 {
		return ""
	}
	return fmt.Sprintf("%q (%d in all)", cut(problems[0]), len(problems))
}

// TestHostileMessageIDs: a message whose Message-ID (and thread id)
// cannot be used in a key as it is (a NUL byte, over bbolt's key limit,
// not UTF-8, control characters, a hash's look) is still stored, reads
// back, carries the reason, is found through the message-id and thread
// indexes, and is found by no look-up of another id or thread; the
// checkpoint moves past it. Each case is two attacks, its Message-ID and
// its thread id. Positive control: TestHostileMessageIDsLandWithoutHash.
func TestHostileMessageIDs(t *testing.T) {
	t.Parallel()
	ids, threads := putHostileIDs(t)
	tried, through := 0, 0
	for i, c := range hostileIDCases {
		for _, p := range [][]string{ids[i], threads[i]} {
			tried++
			if len(p) > 0 {
				through++
			}
		}
		for _, p := range ids[i] {
			t.Errorf("%s: Message-ID: %s", c.name, cut(p))
		}
		for _, p := range threads[i] {
			t.Errorf("%s: thread id: %s", c.name, cut(p))
		}
	}
	t.Logf("hostile Message-IDs and thread ids: %d tried, %d through", tried, through)
	if through != 0 {
		t.Fatalf("%d of %d hostile ids got through, want 0", through, tried)
	}
}

// TestHostileMessageIDsLandWithoutHash is the positive control of
// TestHostileMessageIDs: the same ids through the same store calls with
// keyPart's hash switched off (keyHashOff). Every thread id lands (a
// look-up of thread "t" finds it, or bbolt refuses the key), and so does
// each Message-ID the table says lands (hostileIDCase.lands); the others
// must still pass, which shows nothing but the hash was in their way and
// that nothing on this path breaks on them. Not parallel: it sets a
// package switch.
func TestHostileMessageIDsLandWithoutHash(t *testing.T) {
	restore := SwitchOffKeyHashForTest()
	defer restore()
	ids, threads := putHostileIDs(t)
	tried, landed, want := 0, 0, 0
	for i, c := range hostileIDCases {
		tried += 2
		want++ // the thread id
		if len(threads[i]) > 0 {
			landed++
		} else {
			t.Errorf("%s: thread id %q did not land with the hash off", c.name, hostileThread(c.id))
		}
		if c.lands != "" {
			want++
		}
		switch {
		case len(ids[i]) > 0 && c.lands != "":
			landed++
			t.Logf("%s: Message-ID landed (%s): %s", c.name, c.lands, firstProblem(ids[i]))
		case len(ids[i]) > 0:
			landed++
			t.Errorf("%s: Message-ID landed with the hash off (%s), though the table says nothing breaks", c.name, firstProblem(ids[i]))
		case c.lands != "":
			t.Errorf("%s: Message-ID did not land with the hash off, want: %s", c.name, c.lands)
		}
	}
	t.Logf("hostile ids, hash off: %d tried, %d landed (want %d: every thread id and %d Message-IDs)", tried, landed, want, want-len(hostileIDCases))
	if landed != want {
		t.Fatalf("positive control: got %d of %d landed with the hash off, want %d", landed, tried, want)
	}
}

// hostileAddresses are contact addresses that cannot be used in a key as
// they are. lands says what each does when keys take it as it is
// (keyHashOff); "" when nothing on this path breaks: a contact's key is
// read whole (Get, Put, Delete) and ends every key it is part of, so a
// NUL or a byte that is not UTF-8 in it meets no other key.
var hostileAddresses = []struct{ name, email, lands string }{
	{"NUL byte", "a\x00b@example.com", ""},
	{"over bbolt's key limit", strings.Repeat("x", 40000) + "@example.com", "bbolt refuses the key: the contact is not stored"},
	{"invalid UTF-8", "\xff@example.com", ""},
}

// hostileContacts runs each hostile address through a contact's life in
// a new store (remembered, read back, counted for the auto-send cap,
// forgotten) and returns what went wrong for each: a non-empty list is
// an attack that got through.
func hostileContacts(t *testing.T) [][]string {
	t.Helper()
	s, _ := openTest(t)
	var out [][]string
	for _, a := range hostileAddresses {
		var p []string
		if _, err := s.UpdateContact("acct", a.email, func(c *Contact) error { c.Inbound++; return nil }); err != nil {
			p = append(p, fmt.Sprintf("UpdateContact: %v", err))
		}
		if c, err := s.GetContact("acct", a.email); err != nil || c.Inbound != 1 {
			p = append(p, fmt.Sprintf("GetContact: got %+v, %v; want Inbound 1", c, err))
		}
		if ok, err := s.IncrAutoSend("acct", a.email, "2025-03-01", 5, 5); err != nil || !ok {
			p = append(p, fmt.Sprintf("IncrAutoSend: got %v, %v; want true", ok, err))
		}
		if err := s.ForgetContact("acct", a.email); err != nil {
			p = append(p, fmt.Sprintf("ForgetContact: %v", err))
		}
		if _, err := s.GetContact("acct", a.email); !errors.Is(err, ErrNotFound) {
			p = append(p, fmt.Sprintf("after forget: got %v, want ErrNotFound", err))
		}
		out = append(out, p)
	}
	return out
}

// TestHostileContactAddress: a contact whose address holds a NUL byte, is
// longer than bbolt's key limit or is not UTF-8 is remembered, read back,
// counted and forgotten like any other. Positive control:
// TestHostileContactAddressLandsWithoutHash.
func TestHostileContactAddress(t *testing.T) {
	t.Parallel()
	problems := hostileContacts(t)
	tried, through := 0, 0
	for i, a := range hostileAddresses {
		tried++
		if len(problems[i]) > 0 {
			through++
		}
		for _, p := range problems[i] {
			t.Errorf("%s: %s", a.name, cut(p))
		}
	}
	t.Logf("hostile contact addresses: %d tried, %d through", tried, through)
	if through != 0 {
		t.Fatalf("%d of %d hostile addresses got through, want 0", through, tried)
	}
}

// TestHostileContactAddressLandsWithoutHash is the positive control of
// TestHostileContactAddress: the same addresses through the same calls
// with keyPart's hash off (keyHashOff). The addresses the table says land
// must; the others must still pass (nothing but the hash was in their
// way, and nothing on this path breaks on them). Not parallel: it sets
// a package switch.
func TestHostileContactAddressLandsWithoutHash(t *testing.T) {
	restore := SwitchOffKeyHashForTest()
	defer restore()
	problems := hostileContacts(t)
	tried, landed, want := 0, 0, 0
	for i, a := range hostileAddresses {
		tried++
		if a.lands != "" {
			want++
		}
		switch got := len(problems[i]) > 0; {
		case got && a.lands != "":
			landed++
			t.Logf("%s: landed (%s): %s", a.name, a.lands, firstProblem(problems[i]))
		case got:
			landed++
			t.Errorf("%s: landed with the hash off (%s), though the table says nothing breaks", a.name, firstProblem(problems[i]))
		case a.lands != "":
			t.Errorf("%s: did not land with the hash off, want: %s", a.name, a.lands)
		}
	}
	t.Logf("hostile contact addresses, hash off: %d tried, %d landed (want %d)", tried, landed, want)
	if landed != want {
		t.Fatalf("positive control: got %d of %d landed with the hash off, want %d", landed, tried, want)
	}
}
