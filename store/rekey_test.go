package store

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// oldFile writes a store whose keys were made by the store's former
// normalisations (normID kept whitespace inside a Message-ID; normEmail
// kept it inside angle brackets): the file an older mailagent left. keep
// leaves the rekeyed marker set (as if the rekey had already run).
func oldFile(t *testing.T, keep bool) (path string, key MessageKey) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	key = MessageKey{Account: "acct", Mailbox: "INBOX", UIDValidity: 1, UID: 7}
	const id = "Part One@Example.com" // whitespace inside, as a folded header can leave it
	if err := s.PutMessage(&MessageRecord{MessageKey: key, MessageID: id, State: StateDone}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTrace(&Trace{TraceID: "tr1", Message: key, MessageID: id}); err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bIdxMsgID, bIdxTraceMID} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bIdxMsgID).Put(join([]byte("part one@example.com"), []byte("acct"), msgKey(key)), msgKey(key)); err != nil {
			return err
		}
		if err := tx.Bucket(bIdxTraceMID).Put(join([]byte("part one@example.com"), []byte("acct"), []byte("tr1")), []byte("tr1")); err != nil {
			return err
		}
		b, err := contactBucket(tx, "acct", true)
		if err != nil {
			return err
		}
		if err := putJSON(b, []byte(" bob@example.org "), &Contact{Email: " bob@example.org ", Known: true, OwnerReplies: 3}); err != nil {
			return err
		}
		if keep {
			return nil
		}
		return tx.Bucket(bMeta).Delete(metaKeysMail)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, key
}

// Records written under the store's former Message-ID and address keys
// are found by mail.IDKey and mail.AddrKey after the file is opened once:
// the Message-ID indexes are rebuilt and the contacts rekeyed.
func TestOlderKeysRekeyedOnOpen(t *testing.T) {
	t.Parallel()
	for _, rekeyed := range []bool{false, true} {
		path, key := oldFile(t, rekeyed)
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		found, err := s.FindByMessageID("acct", "<part one@example.com>")
		gotMsg := err == nil && len(found) == 1 && found[0].MessageKey == key
		tr, err := s.TraceForMessageID("acct", "<Part  One@example.com>")
		gotTrace := err == nil && tr.TraceID == "tr1"
		c, err := s.GetContact("acct", "<bob@example.org>")
		gotContact := err == nil && c.Known && c.OwnerReplies == 3 && c.Email == "bob@example.org"
		_ = s.Close()
		// The control: with the marker already set nothing is rekeyed, and
		// the new keys miss the old entries (so this test can fail).
		want := !rekeyed
		if gotMsg != want || gotTrace != want || gotContact != want {
			t.Errorf("marker set %v: message found %v, trace found %v, contact found %v; want %v",
				rekeyed, gotMsg, gotTrace, gotContact, want)
		}
	}
}
