package imapsync

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
)

// count returns how many messages of mailbox have Message-ID id.
func (ts *testServer) count(t *testing.T, c *Client, mailbox, id string) int {
	t.Helper()
	if _, err := c.Select(context.Background(), mailbox, true); err != nil {
		t.Fatalf("select %s: %v", mailbox, err)
	}
	uids, err := c.SearchHeader(context.Background(), []string{"Message-ID"}, id)
	if err != nil {
		t.Fatal(err)
	}
	// \Deleted but not expunged still counts as there.
	return len(uids)
}

func noMoveCaps() imap.CapSet {
	return imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapUIDPlus: {}, imap.CapNamespace: {}}
}

func TestMoveByID(t *testing.T) {
	t.Parallel()
	for _, caps := range []struct {
		name string
		set  imap.CapSet
	}{{"MOVE", nil}, {"COPY+STORE+EXPUNGE", noMoveCaps()}} {
		t.Run(caps.name, func(t *testing.T) {
			ts := startServer(t, serverConfig{caps: caps.set})
			ts.createMailbox(t, "Archive")
			uid := ts.add(t, "INBOX", textMessage("m", "<a1@x>", "x"), time.Time{})
			c := ts.dial(t)
			if _, err := c.Select(context.Background(), "INBOX", false); err != nil {
				t.Fatal(err)
			}
			if err := c.MoveByID(context.Background(), "INBOX", uid, "a1@x", "Archive"); err != nil {
				t.Fatal(err)
			}
			if in, arch := ts.count(t, c, "INBOX", "a1@x"), ts.count(t, c, "Archive", "a1@x"); in != 0 || arch != 1 {
				t.Fatalf("after the move: INBOX %d, Archive %d; want 0 and 1", in, arch)
			}
		})
	}
}

// A failure or a dropped connection between COPY and STORE leaves the
// message in both places, never in neither; the retry finishes the move
// without a second copy.
func TestMoveByIDInterrupted(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"store refused", "connection dropped"} {
		t.Run(mode, func(t *testing.T) {
			ts := startServer(t, serverConfig{caps: noMoveCaps()})
			ts.createMailbox(t, "Archive")
			uid := ts.add(t, "INBOX", textMessage("m", "<a2@x>", "x"), time.Time{})
			c := ts.dial(t)
			if _, err := c.Select(context.Background(), "INBOX", false); err != nil {
				t.Fatal(err)
			}
			release := make(chan struct{})
			entered := make(chan struct{}, 1)
			ts.mu.Lock()
			ts.storeErr = func() error {
				if mode == "store refused" {
					return &imap.Error{Type: imap.StatusResponseTypeNo, Text: "test fault"}
				}
				entered <- struct{}{}
				<-release
				return errors.New("gone")
			}
			ts.mu.Unlock()
			errc := make(chan error, 1)
			go func() { errc <- c.MoveByID(context.Background(), "INBOX", uid, "a2@x", "Archive") }()
			if mode == "connection dropped" {
				<-entered
				ts.restart() // every connection dies between COPY and STORE
				close(release)
			}
			if err := <-errc; err == nil {
				t.Fatal("the interrupted move reported success")
			}
			ts.mu.Lock()
			ts.storeErr = nil
			ts.mu.Unlock()
			c2 := ts.dial(t)
			in, arch := ts.count(t, c2, "INBOX", "a2@x"), ts.count(t, c2, "Archive", "a2@x")
			if in+arch == 0 || arch > 1 || in > 1 {
				t.Fatalf("after the interruption: INBOX %d, Archive %d; want the message in one place or both", in, arch)
			}
			if _, err := c2.Select(context.Background(), "INBOX", false); err != nil {
				t.Fatal(err)
			}
			if err := c2.MoveByID(context.Background(), "INBOX", uid, "a2@x", "Archive"); err != nil {
				t.Fatalf("retry: %v", err)
			}
			if in, arch := ts.count(t, c2, "INBOX", "a2@x"), ts.count(t, c2, "Archive", "a2@x"); in != 0 || arch != 1 {
				t.Fatalf("after the retry: INBOX %d, Archive %d; want 0 and 1 (no second copy)", in, arch)
			}
		})
	}
}

// forgedCopies are a stranger's mail already in the Archive with the
// Message-ID of the message moved, each one like the original in all but
// one thing MoveByID compares (or in neither), so that neither the size
// nor the internal date alone passes it for the copy.
var forgedCopies = []struct {
	name string
	body string        // the original's is "x"
	age  time.Duration // before the original's internal date
}{
	{"another size and date", "a different, longer body", time.Hour},
	{"the same size, another date", "y", time.Hour},
	{"the same date, another size", "a different, longer body", 0},
}

// moveWithForgedCopies moves a message (the server has no MOVE: COPY,
// STORE, EXPUNGE) to an Archive that already holds each forged copy in
// turn, and returns what went wrong for each: "" when the original was
// copied next to the forgery and left INBOX.
func moveWithForgedCopies(t *testing.T) []string {
	t.Helper()
	date := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var out []string
	for i, f := range forgedCopies {
		id := fmt.Sprintf("a3-%d@x", i)
		ts := startServer(t, serverConfig{caps: noMoveCaps()})
		ts.createMailbox(t, "Archive")
		ts.add(t, "Archive", textMessage("m", "<"+id+">", f.body), date.Add(-f.age))
		uid := ts.add(t, "INBOX", textMessage("m", "<"+id+">", "x"), date)
		c := ts.dial(t)
		if _, err := c.Select(context.Background(), "INBOX", false); err != nil {
			t.Fatal(err)
		}
		if err := c.MoveByID(context.Background(), "INBOX", uid, id, "Archive"); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		why := ""
		if in, arch := ts.count(t, c, "INBOX", id), ts.count(t, c, "Archive", id); in != 0 || arch != 2 {
			why = fmt.Sprintf("INBOX %d, Archive %d; want 0 and 2 (the original copied next to the forgery)", in, arch)
		}
		out = append(out, why)
	}
	return out
}

// TestMoveByIDForgedCopyInDest: a stranger's mail already in the Archive
// with the same Message-ID is not taken for the copy (neither with the
// same size nor with the same internal date): the original is copied,
// never just deleted. Positive control:
// TestMoveByIDForgedCopyLandsWithoutCheck.
func TestMoveByIDForgedCopyInDest(t *testing.T) {
	t.Parallel()
	got := moveWithForgedCopies(t)
	tried, through := 0, 0
	for i, f := range forgedCopies {
		tried++
		if got[i] != "" {
			through++
			t.Errorf("%s: %s", f.name, got[i])
		}
	}
	t.Logf("forged copies in the destination: %d tried, %d through", tried, through)
	if through != 0 {
		t.Fatalf("%d of %d forged copies got through, want 0", through, tried)
	}
}

// TestMoveByIDForgedCopyLandsWithoutCheck is the positive control of
// TestMoveByIDForgedCopyInDest: the same moves with inMailbox's size and
// date comparison off (copyCheckOff). Every forgery must pass for the
// copy: the original is deleted, never copied. Not parallel: it sets a
// package switch.
func TestMoveByIDForgedCopyLandsWithoutCheck(t *testing.T) {
	copyCheckOff.Store(true)
	defer copyCheckOff.Store(false)
	got := moveWithForgedCopies(t)
	landed := 0
	for i, f := range forgedCopies {
		if got[i] != "" {
			landed++
			t.Logf("%s: landed: %s", f.name, got[i])
		} else {
			t.Errorf("%s: the original was copied with the size and date check off; the forgery was not taken for the copy", f.name)
		}
	}
	t.Logf("forged copies, check off: %d tried, %d landed", len(forgedCopies), landed)
	if landed != len(forgedCopies) {
		t.Fatalf("positive control: got %d of %d landed with the check off, want all", landed, len(forgedCopies))
	}
}

func TestSetKeywordsPermanentFlags(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	uid := ts.add(t, "INBOX", textMessage("m", "<k1@x>", "x"), time.Time{})
	c := ts.dial(t)
	if _, err := c.Select(context.Background(), "INBOX", false); err != nil {
		t.Fatal(err)
	}
	set, err := c.SetKeywords(context.Background(), []uint32{uid}, []string{"$mailagent-queued", "bad keyword", `\Seen`, "a(b"})
	// imapmemserver announces PERMANENTFLAGS \*: valid keywords only.
	if err != nil || fmt.Sprint(set) != "[$mailagent-queued]" {
		t.Fatalf("got %v, %v; want only $mailagent-queued", set, err)
	}
	flags, err := c.Flags(context.Background(), []uint32{uid})
	if err != nil || fmt.Sprint(flags[uid]) != "[$mailagent-queued]" {
		t.Fatalf("flags: %v, %v", flags, err)
	}
	c.mu.Lock()
	c.permFlags = []imap.Flag{imap.FlagSeen, imap.FlagAnswered}
	c.mu.Unlock()
	if _, err := c.SetKeywords(context.Background(), []uint32{uid}, []string{"$x"}); !errors.Is(err, ErrKeywordsRefused) {
		t.Fatalf("without \\* in PERMANENTFLAGS: got %v, want ErrKeywordsRefused", err)
	}
}
