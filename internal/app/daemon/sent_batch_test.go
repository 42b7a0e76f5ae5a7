package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/store"
)

// The Sent scan handles the owner's mail in batches as it arrives (not a
// year of it held at once): across batch boundaries every recipient is
// counted exactly once per message, mail the owner did not write makes no
// one known, and the checkpoint ends at the folder's last UID.
func TestSentScanInBatchesCountsEachMessageOnce(t *testing.T) {
	srv, am := startIMAP(t, memimap.Options{Mailboxes: []string{"Sent", "Drafts"}})
	am.Sent = "Sent"
	owner := sentPathsOwner.Addresses[0]
	n := 2*sentHandleBatch + 7
	attacks := 0
	for i := range n {
		from, to := owner, fmt.Sprintf("friend%d@example.org", i%5)
		if i%50 == 49 { // not the owner's: its recipient must not become known
			from, to = "mallory@evil.example", fmt.Sprintf("stranger%d@evil.example", i)
			attacks++
		}
		raw := fmt.Sprintf("From: <%s>\r\nTo: <%s>\r\nSubject: note %d\r\nMessage-ID: <sent-%d@example.org>\r\nDate: %s\r\n\r\nHello %d.\r\n",
			from, to, i, i, time.Now().Format(time.RFC1123Z), i)
		if _, err := srv.Append(context.Background(), testUser, "Sent", []byte(raw), nil, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	m := &Mailer{Accounts: map[string]*AccountMailer{"personal": am}}
	defer m.Close()
	p := &agent.Pipeline{Store: st, Accounts: map[string]agent.Account{"personal": {Name: "personal", Owner: sentPathsOwner}}, Actor: &agent.Actor{Store: st, Mailer: m}}
	d := &Daemon{Store: st, Pipeline: p, Mailer: m, SentLookback: 365 * 24 * time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d.scanSent(ctx, "personal", true)

	want := map[string]int{}
	for i := range n {
		if i%50 != 49 {
			want[fmt.Sprintf("friend%d@example.org", i%5)]++
		}
	}
	for addr, w := range want {
		c, err := st.GetContact("personal", addr)
		if err != nil || !c.Known || c.OwnerReplies != w {
			t.Errorf("%s: got %+v (%v), want known with OwnerReplies %d", addr, c, err, w)
		}
	}
	through := 0
	for i := 49; i < n; i += 50 {
		if c, err := st.GetContact("personal", fmt.Sprintf("stranger%d@evil.example", i)); err == nil && c.Known {
			through++
		}
	}
	t.Logf("Sent mail not the owner's: tried %d, made known %d", attacks, through)
	if attacks == 0 || through != 0 {
		t.Fatalf("not the owner's mail: tried %d, through %d; want some tried, 0 through", attacks, through)
	}
	cp, ok, err := st.Checkpoint("personal", SentCheckpoint)
	if err != nil || !ok || cp.LastUID != uint32(n) {
		t.Fatalf("checkpoint %+v %v %v; want LastUID %d", cp, ok, err, n)
	}
}
