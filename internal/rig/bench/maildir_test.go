package bench

import (
	"bytes"
	netmail "net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWriteMaildirKeepsThreadsAndDates(t *testing.T) {
	t.Parallel()
	corpus := [][]byte{
		[]byte("From: a@x.example\nSubject: plan\nDate: Mon, 02 Sep 2002 10:00:00 +0000\nMessage-ID: <a1@x.example>\n\nbody a\n"),
		[]byte("From: b@y.example\nSubject: Re: plan\nDate: Mon, 02 Sep 2002 11:00:00 +0000\nMessage-ID: <b1@y.example>\n" +
			"In-Reply-To: <a1@x.example>\nReferences: <zz@x.example>\n <a1@x.example>\n\nbody b\n"),
		[]byte("From: c@z.example\nSubject: no id\nDate: Sun, 01 Sep 2002 09:00:00 +0000\n\nbody c\n"),
	}
	end := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	root := filepath.Join(t.TempDir(), "Maildir")
	const n = 300
	st, err := WriteMaildir(MaildirSpec{Root: root, N: n, Corpus: corpus, Owner: "me@own.example", End: end})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, c := range st.Folders {
		total += c
	}
	if total != n {
		t.Fatalf("messages written: got %d, want %d (%v)", total, n, st.Folders)
	}
	if st.Folders["Sent"] < n/20 || st.Folders["Sent"] > n/5 {
		t.Errorf("Sent: got %d of %d, want about a tenth", st.Folders["Sent"], n)
	}
	ids := map[string]bool{}
	byID := map[string]time.Time{}
	type reply struct {
		parent string
		date   time.Time
	}
	var replies []reply
	err = filepath.Walk(root, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || filepath.Base(filepath.Dir(path)) != "cur" {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		m, err := netmail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		id := m.Header.Get("Message-ID")
		if id == "" || ids[id] {
			t.Fatalf("%s: Message-ID %q missing or repeated", path, id)
		}
		ids[id] = true
		date, err := m.Header.Date()
		if err != nil {
			t.Fatalf("%s: date: %v", path, err)
		}
		if date.After(end) || date.Before(end.AddDate(-16, 0, 0)) {
			t.Errorf("%s: date %v outside the 15 years before %v", path, date, end)
		}
		if !fi.ModTime().Equal(date) {
			t.Errorf("%s: mtime %v, want the Date %v (Dovecot's INTERNALDATE)", path, fi.ModTime(), date)
		}
		byID[id] = date
		inSent := strings.Contains(path, string(filepath.Separator)+".Sent"+string(filepath.Separator))
		if from := m.Header.Get("From"); inSent != strings.Contains(from, "me@own.example") {
			t.Errorf("%s: From %q in Sent=%v", path, from, inSent)
		}
		if irt := m.Header.Get("In-Reply-To"); irt != "" {
			if !strings.Contains(m.Header.Get("References"), irt) {
				t.Errorf("%s: References %q lost In-Reply-To %q", path, m.Header.Get("References"), irt)
			}
			replies = append(replies, reply{irt, date})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(replies) != n/3 {
		t.Fatalf("replies: got %d, want %d", len(replies), n/3)
	}
	for _, r := range replies {
		pd, ok := byID[r.parent]
		if !ok {
			t.Fatalf("reply's parent %s is not in the mailbox: the thread is broken", r.parent)
		}
		if !r.date.After(pd) {
			t.Errorf("reply dated %v, not after its parent %s %v", r.date, r.parent, pd)
		}
	}
	if _, err := WriteMaildir(MaildirSpec{Root: root, N: 1, Corpus: corpus, Owner: "me@own.example", End: end}); err == nil {
		t.Error("a second write over an existing root: got nil error")
	}
}

func TestRewriteMessageSuffixesEveryID(t *testing.T) {
	t.Parallel()
	raw := []byte("Message-Id: <x@h>\nIn-Reply-To: <p@h> (comment)\nReferences: <q@h>\n\t<p@h>\nDate: junk\n\n<body@h>\n")
	got := string(RewriteMessage(raw, ".r7", time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC), ""))
	for _, want := range []string{"Message-Id: <x.r7@h>\n", "In-Reply-To: <p.r7@h> (comment)\n", "References: <q.r7@h>\n\t<p.r7@h>\n",
		"Date: Thu, 02 Jan 2020 03:04:05 +0000\n", "\n\n<body@h>\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("rewritten message lacks %q:\n%s", want, got)
		}
	}
}
