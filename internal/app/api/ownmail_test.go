package api_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/api/apitest"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// TestSendOwnMail: a mail of its own (a nudge, an unsubscribe) sent over
// the store and over the socket goes through the outbox: one record of
// its kind, Auto-Submitted: auto-generated, delivered once however often
// it is asked for, no contact made of its recipient; a non-public
// recipient is refused as a bad request with no record and nothing sent.
func TestSendOwnMail(t *testing.T) {
	t.Parallel()
	for _, open := range []struct {
		name string
		fn   func(*testing.T) (api.Service, *apitest.World)
	}{{"local", apitest.Local}, {"socket", apitest.Socket}} {
		t.Run(open.name, func(t *testing.T) {
			svc, w := open.fn(t)
			ctx := context.Background()
			m, ok := svc.(api.OwnMailer)
			if !ok {
				t.Fatalf("%T is not an api.OwnMailer", svc)
			}
			sent0 := len(w.SMTP.Messages())
			to := "nudge-" + open.name + "@partner.test"
			req := agent.OwnMail{Kind: store.OutboxKindNudge, Account: apitest.Account, Ref: "thread-1", To: to,
				Subject: "Following up", Body: "Any news?"}
			var id string
			for i := 0; i < 2; i++ {
				ob, err := m.SendOwnMail(ctx, req)
				if err != nil {
					t.Fatalf("send #%d: %v", i+1, err)
				}
				if ob.Status != store.OutboxAppended || ob.Kind != store.OutboxKindNudge || !ob.Auto {
					t.Fatalf("send #%d: %+v, want an appended automatic nudge", i+1, ob)
				}
				if id != "" && ob.ID != id {
					t.Fatalf("second send made another record %s (first %s)", ob.ID, id)
				}
				id = ob.ID
			}
			var got []string
			for _, r := range w.SMTP.Messages()[sent0:] {
				if slices.Contains(r.To, to) {
					got = append(got, string(r.Data))
				}
			}
			if len(got) != 1 {
				t.Fatalf("%s received %d mails, want exactly 1", to, len(got))
			}
			if v := mail.Parse([]byte(got[0])).HeaderValue("Auto-Submitted"); v != "auto-generated" {
				t.Errorf("Auto-Submitted %q, want auto-generated", v)
			}
			if c, err := w.Store.GetContact(apitest.Account, to); err == nil {
				t.Errorf("the nudge made a contact of %s: %+v", to, c)
			}

			sent := len(w.SMTP.Messages())
			bad := req
			bad.To, bad.Ref = "root@localhost", "thread-2"
			_, err := m.SendOwnMail(ctx, bad)
			if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "not a public mail address") {
				t.Errorf("send to root@localhost: %v, want a bad request naming the address rule", err)
			}
			n := 0
			_ = w.Store.ListOutbox("", func(r *store.OutboxRecord) error {
				if slices.Contains(r.To, "root@localhost") {
					n++
				}
				return nil
			})
			if n != 0 || len(w.SMTP.Messages()) != sent {
				t.Errorf("a refused mail left %d records and %d sends", n, len(w.SMTP.Messages())-sent)
			}
		})
	}
}
