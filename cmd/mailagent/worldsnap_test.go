package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
)

// worldSnap is a harness's world at rest, to build a seeded world once and
// give every test that starts from it a copy: the files of the harness's
// directory (the state directory, a profile; not config.toml, which names
// the harness's own ports) and every mailbox of the owner on the IMAP
// server, message by message with its UID, flags and internal date.
//
// A copy is the same world: restore checks that each mailbox has the same
// UIDVALIDITY, that every message gets its UID back and that UIDNEXT is
// the same (imapmemserver numbers both from the order of creation and
// appends, which restore repeats), so the state database's view of the
// server holds for the copy. It fails the test rather than make a world
// that differs.
type worldSnap struct {
	files map[string][]byte // path relative to the harness's dir
	boxes []boxSnap
}

type boxSnap struct {
	name        string
	uidValidity uint32
	uidNext     imap.UID
	msgs        []msgSnap
}

type msgSnap struct {
	uid   imap.UID
	flags []imap.Flag
	date  time.Time
	raw   []byte
}

// snapshot captures h's world. No command may be running.
func (h *harness) snapshot(t *testing.T) *worldSnap {
	t.Helper()
	s := &worldSnap{files: map[string][]byte{}}
	err := filepath.WalkDir(h.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == h.cfgPath {
			return err
		}
		if !d.Type().IsRegular() {
			t.Fatalf("snapshot: %s is not a regular file", path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(h.dir, path)
		if err != nil {
			return err
		}
		s.files[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := dialOwner(h)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	list, err := c.List("", "*", nil).Collect()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		st, err := c.Status(l.Mailbox, &imap.StatusOptions{UIDValidity: true, UIDNext: true}).Wait()
		if err != nil {
			t.Fatal(err)
		}
		b := boxSnap{name: l.Mailbox, uidValidity: st.UIDValidity, uidNext: st.UIDNext}
		sel, err := c.Select(l.Mailbox, &imap.SelectOptions{ReadOnly: true}).Wait()
		if err != nil {
			t.Fatal(err)
		}
		if sel.NumMessages > 0 {
			section := &imap.FetchItemBodySection{Peek: true}
			msgs, err := c.Fetch(imap.SeqSet{imap.SeqRange{Start: 1, Stop: 0}}, &imap.FetchOptions{
				UID: true, Flags: true, InternalDate: true, BodySection: []*imap.FetchItemBodySection{section},
			}).Collect()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				flags := slices.DeleteFunc(slices.Clone(m.Flags), func(f imap.Flag) bool { return f == "\\Recent" })
				b.msgs = append(b.msgs, msgSnap{uid: m.UID, flags: flags, date: m.InternalDate,
					raw: slices.Clone(m.FindBodySection(section))})
			}
		}
		s.boxes = append(s.boxes, b)
	}
	return s
}

// restore makes h's fresh world (a new harness: its mailboxes created,
// empty) the snapshot's.
func (h *harness) restore(t *testing.T, s *worldSnap) {
	t.Helper()
	for rel, b := range s.files {
		path := filepath.Join(h.dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := dialOwner(h)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	list, err := c.List("", "*", nil).Collect()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range list {
		names = append(names, l.Mailbox)
	}
	var want []string
	for _, b := range s.boxes {
		want = append(want, b.name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("restore: the fresh server has mailboxes %v, the snapshot %v", names, want)
	}
	ctx := context.Background()
	for _, b := range s.boxes {
		for _, m := range b.msgs {
			uid, err := h.imap.Append(ctx, ownerAddr, b.name, m.raw, m.flags, m.date)
			if err != nil {
				t.Fatal(err)
			}
			if uid != m.uid {
				t.Fatalf("restore: %s: a message got UID %d, it had %d", b.name, uid, m.uid)
			}
		}
		st, err := c.Status(b.name, &imap.StatusOptions{UIDValidity: true, UIDNext: true}).Wait()
		if err != nil {
			t.Fatal(err)
		}
		if st.UIDValidity != b.uidValidity || st.UIDNext != b.uidNext {
			t.Fatalf("restore: %s: UIDVALIDITY %d, UIDNEXT %d; the snapshot had %d, %d",
				b.name, st.UIDValidity, st.UIDNext, b.uidValidity, b.uidNext)
		}
	}
}
