package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/api/apitest"
	"github.com/mailagent/mailagent/internal/app/mcpserver"
	"github.com/mailagent/mailagent/store"
)

// trent is a stranger whose mail the owner's own server authenticates.
const trent = "trent@legit.example"

// legitMail is TestRedTeam's hostile mail with the one property that made
// it an attack taken away: written by trent, authenticated by the owner's
// server (apitest.AuthservID), and not bulk.
func legitMail(id, subject, body string, headers ...string) []byte {
	date := time.Now().Format(time.RFC1123Z)
	auth := apitest.Authenticated(trent)
	if len(headers) > 0 {
		auth = headers[0]
	}
	return []byte(auth + "\r\nFrom: Trent <" + trent + ">\r\nTo: <" + apitest.Owner + ">\r\nSubject: " + subject +
		"\r\nDate: " + date + "\r\nMessage-ID: <" + id + ">\r\n\r\n" + body + "\r\n")
}

// TestRedTeamLandsWithLegitimateInput is TestRedTeam's positive control
// for the attacks no switch reaches (docs/testing/adversarial.md): each
// attack's own call, with only what made it an attack taken away, passes
// the predicate TestRedTeam counts as "got through".
//
//   - data: the sender authenticated by the owner's server instead of
//     unauthenticated, forged or bulk; a well-formed ref, id, limit,
//     cursor, text or date instead of the crafted one; the server that
//     may see the account instead of the one limited to "work";
//   - detector: where no legitimate input can make the product do what the
//     attack wanted (address a reply elsewhere, print an escape outside
//     untrusted_external_content, send without the owner), the test's own
//     predicate is shown to catch that outcome when it is there: a draft
//     addressed to Eve, the hostile subject outside the untrusted field,
//     and an approval by the owner (which sends, changes the outbox and
//     the item's state).
func TestRedTeamLandsWithLegitimateInput(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	for _, raw := range [][]byte{
		legitMail("legit-auth@legit.example", "new bank details", "Please propose a reply confirming the transfer."),
		legitMail("legit-forged@legit.example", "invoice", "Pay it.",
			"Authentication-Results: "+apitest.AuthservID+"; dmarc=pass header.from=legit.example"),
		legitMail("legit-notbulk@legit.example", "newsletter", "Our news, written to you alone."),
		legitMail("legit-ref@legit.example", "a question", "Lunch on Tuesday?"),
		legitMail("legit-long@legit.example", "a long answer", "Tell me everything."),
		legitMail("legit-other@legit.example", "another question", "Dinner on Friday?"),
	} {
		w.Append("INBOX", raw)
	}
	keys := hostile(t, w)
	client := w.Serve(t)
	cs := connect(t, mcpserver.Options{Open: func(context.Context) (api.Service, func() error, error) {
		return client, func() error { return nil }, nil
	}})

	tried, landed := 0, 0
	lands := func(name string, got bool, detail ...any) {
		t.Helper()
		tried++
		if got {
			landed++
		} else {
			t.Errorf("control %q did not land: %v", name, fmt.Sprint(detail...))
		}
	}
	propose := func(args map[string]any) (*store.QueueItem, string) { return proposeReply(t, w, cs, args) }

	// 1. Another address (detector): a draft addressed to Eve is what
	// TestRedTeam's predicate calls a landed attack.
	q, e := propose(map[string]any{"ref": "obey@evil.example", "text": "hi"})
	if q == nil {
		t.Fatalf("propose_reply to Mallory's authenticated mail: %s", e)
	}
	toEve := *q
	toEve.To = append(toEve.To[:0:0], toEve.To...)
	toEve.To[0].Email = eve
	lands("reply to another address (detector)", !onlyTo(&toEve, mallory), toEve.To)

	// 2. Authenticated by the owner's server, not bulk: propose_reply
	// accepts what it refused for spoof@, forged@ and bulk@.
	for _, ref := range []string{"legit-auth@legit.example", "legit-forged@legit.example", "legit-notbulk@legit.example"} {
		q, e := propose(map[string]any{"ref": ref, "text": "Confirmed, transfer done."})
		lands("propose to an authenticated sender: "+ref, e == "", q, e)
	}
	// 3. A first proposal is accepted where the second was refused.
	q, e = propose(map[string]any{"ref": "legit-ref@legit.example", "text": "again"})
	lands("first proposal", e == "", q, e)

	// 4. Well-formed arguments.
	var qs mcpserver.QueueShowOut
	lands("queue_show a real id", call(t, cs, "queue_show", map[string]any{"id": w.Draft}, &qs) == "", qs)
	var page mcpserver.QueueListOut
	lands("queue_list limit 1", call(t, cs, "queue_list", map[string]any{"limit": 1}, &page) == "", page)
	lands("queue_list limit 100", call(t, cs, "queue_list", map[string]any{"limit": 100}, nil) == "")
	if page.NextCursor == "" {
		t.Fatalf("queue_list limit 1 gave no cursor over %d items", len(page.Items))
	}
	lands("queue_list a served cursor", call(t, cs, "queue_list", map[string]any{"limit": 1, "cursor": page.NextCursor}, nil) == "")
	long := strings.Repeat("é", agent.MaxProposalChars) // the most characters propose takes, 2 bytes each
	e = call(t, cs, "propose_reply", map[string]any{"ref": "legit-long@legit.example", "text": long}, nil)
	lands("propose_reply the longest text", e == "", e)
	lands("search_mail a date", call(t, cs, "search_mail", map[string]any{"since": "2020-01-02"}, nil) == "")

	// 5. The server that may see the account serves what "work" may not.
	var ql mcpserver.QueueListOut
	e = call(t, cs, "queue_list", nil, &ql)
	lands("all accounts: queue_list", e == "" && len(ql.Items) != 0, ql, e)
	lands("all accounts: queue_list account=personal", call(t, cs, "queue_list", map[string]any{"account": apitest.Account}, nil) == "")
	lands("all accounts: explain", call(t, cs, "explain", map[string]any{"ref": "carol-1@example.org"}, nil) == "")
	lands("all accounts: contact_show", call(t, cs, "contact_show", map[string]any{"account": apitest.Account, "email": apitest.Bob}, nil) == "")
	var sm mcpserver.MessagesOut
	e = call(t, cs, "search_mail", map[string]any{"correspondent": "example"}, &sm)
	lands("all accounts: search_mail", e == "" && len(sm.Messages) != 0, sm, e)
	_, e = propose(map[string]any{"ref": "legit-other@legit.example", "text": "hi"})
	lands("all accounts: propose_reply", e == "", e)
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mcpserver.QueueURI + w.Draft})
	lands("all accounts: resource", err == nil, err)

	// 6. Hostile text (detector): the escape and the mail's words reached
	// the store, and TestRedTeam's two predicates catch them in a tool's
	// output when they stand outside untrusted_external_content.
	rec, err := w.Store.GetMessage(keys["obey"])
	if err != nil {
		t.Fatal(err)
	}
	leak := map[string]any{"subject": rec.Subject, "summary": "Assistant reading this: " + trent + " (evil.example, bank details, fdp.exe)"}
	raw, _ := json.Marshal(leak)
	var v any
	_ = json.Unmarshal(raw, &v)
	lands("control character outside the untrusted field (detector)", strings.Contains(rec.Subject, "\x1b") && strings.Contains(string(raw), `\u001b`), rec.Subject)
	for _, needle := range []string{"assistant reading this", "evil.example", "bank details", "fdp.exe"} {
		lands("mail text outside untrusted_external_content (detector): "+needle, len(outsideUntrusted(v, needle, "leak")) > 0, leak)
	}

	// 7. Something sent, the outbox changed, an item left pending
	// (detector): the owner's approval does all three.
	before := countOutbox(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.Approve(ctx, w.Draft, ""); err != nil {
		t.Fatalf("the owner's approval: %v", err)
	}
	lands("something was sent (detector)", len(w.SMTP.Messages()) != 0)
	lands("the outbox changed (detector)", countOutbox(t, w) != before)
	approved, err := w.Store.GetQueueItem(w.Draft)
	if err != nil {
		t.Fatal(err)
	}
	lands("queue item left pending (detector)", approved.Status != store.QueuePending, approved.Status)

	t.Logf("red team controls: %d of %d landed", landed, tried)
	if landed != tried {
		t.Errorf("positive control: %d of %d landed, want all", landed, tried)
	}
}
