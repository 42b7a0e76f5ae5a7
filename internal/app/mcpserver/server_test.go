package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/api/apitest"
	"github.com/mailagent/mailagent/internal/app/mcpserver"
	"github.com/mailagent/mailagent/store"
)

func TestToolsHaveSchemasAndAnnotations(t *testing.T) {
	t.Parallel()
	// Listing the tools opens no service.
	open := func(context.Context) (api.Service, func() error, error) {
		return nil, nil, errors.New("tools/list opened the service")
	}
	for _, ro := range []bool{false, true} {
		cs := connect(t, mcpserver.Options{Open: open, ReadOnly: ro})
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			if tool.InputSchema == nil || tool.OutputSchema == nil {
				t.Errorf("%s: input schema %v, output schema %v; want both", tool.Name, tool.InputSchema != nil, tool.OutputSchema != nil)
			}
			a := tool.Annotations
			if a == nil || a.DestructiveHint == nil || *a.DestructiveHint {
				t.Errorf("%s: annotations %+v; want destructiveHint false", tool.Name, a)
				continue
			}
			if want := tool.Name != "propose_reply"; a.ReadOnlyHint != want || a.IdempotentHint != want {
				t.Errorf("%s: readOnlyHint %v idempotentHint %v; want %v", tool.Name, a.ReadOnlyHint, a.IdempotentHint, want)
			}
			if strings.Contains(tool.Description, "untrusted_external_content") != (tool.Name != "status") {
				t.Errorf("%s: the description does not say where untrusted text is: %q", tool.Name, tool.Description)
			}
			// propose_reply tells the client the longest text propose takes.
			if tool.Name == "propose_reply" && !strings.Contains(tool.Description, " "+strconv.Itoa(agent.MaxProposalChars)+" characters") {
				t.Errorf("%s: the description does not give the longest text (%d characters): %q", tool.Name, agent.MaxProposalChars, tool.Description)
			}
		}
		want := slices.Clone(mcpserver.ToolNames)
		if ro {
			want = slices.DeleteFunc(want, func(n string) bool { return n == "propose_reply" })
		}
		slices.Sort(want)
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Errorf("read_only=%v: tools %v; want %v", ro, names, want)
		}
		for _, n := range names {
			for _, bad := range []string{"approve", "send", "reject", "edit", "snooze", "forget", "note", "policy"} {
				if strings.Contains(n, bad) {
					t.Errorf("tool %s may %s", n, bad)
				}
			}
		}
	}
}

// TestToolsAgainstThePipeline calls every reading tool over a watcher after
// `watch --once` over memimap, through its socket and over the store: one
// World, which the reading tools leave as it was.
func TestToolsAgainstThePipeline(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			cs := connect(t, mcpserver.Options{Open: m.open(t, w)})

			var st mcpserver.StatusOut
			if e := call(t, cs, "status", nil, &st); e != "" || st.Counts["done"] == 0 {
				t.Errorf("status: %q %+v", e, st)
			}
			if st.Watcher != (m.name == "socket") {
				t.Errorf("status: watcher %v in mode %s", st.Watcher, m.name)
			}
			var ql mcpserver.QueueListOut
			if e := call(t, cs, "queue_list", map[string]any{"status": "pending"}, &ql); e != "" {
				t.Fatal(e)
			}
			ids := map[string]mcpserver.QueueItem{}
			for _, q := range ql.Items {
				ids[q.ID] = q
			}
			for _, id := range []string{w.Draft, w.Draft2, w.Notify} {
				if _, ok := ids[id]; !ok {
					t.Errorf("queue_list: %s missing from %v", id, ids)
				}
			}
			if q := ids[w.Draft]; q.Untrusted.Subject != "Lunch on Tuesday?" || !strings.Contains(q.Untrusted.From, apitest.Carol) || q.Kind != store.KindDraft {
				t.Errorf("queue_list: Carol's draft: %+v", q)
			}
			var qs mcpserver.QueueShowOut
			if e := call(t, cs, "queue_show", map[string]any{"id": w.Draft}, &qs); e != "" || qs.Item.Untrusted.Snippet == "" || len(qs.Thread) == 0 {
				t.Errorf("queue_show: %q %+v", e, qs)
			}
			var ex mcpserver.ExplainOut
			if e := call(t, cs, "explain", map[string]any{"ref": "carol-1@example.org"}, &ex); e != "" || ex.Message == nil || len(ex.Steps) == 0 || ex.Decision != "queue" {
				t.Errorf("explain: %q %+v", e, ex)
			}
			var sm mcpserver.MessagesOut
			if e := call(t, cs, "search_mail", map[string]any{"correspondent": "carol@", "subject": "lunch TUESDAY"}, &sm); e != "" || len(sm.Messages) != 1 {
				t.Errorf("search_mail carol: %q %+v", e, sm)
			}
			if e := call(t, cs, "search_mail", map[string]any{"decision": "queue", "intent": "information_request", "since": "2000-01-01"}, &sm); e != "" || len(sm.Messages) < 2 {
				t.Errorf("search_mail queue/information_request: %q %d", e, len(sm.Messages))
			}
			if e := call(t, cs, "search_mail", map[string]any{"until": "2000-01-01"}, &sm); e != "" || len(sm.Messages) != 0 {
				t.Errorf("search_mail before 2000: %q %d", e, len(sm.Messages))
			}
			var c mcpserver.ContactOut
			if e := call(t, cs, "contact_show", map[string]any{"account": apitest.Account, "email": apitest.Bob}, &c); e != "" || !c.Known || c.Untrusted.Email != apitest.Bob {
				t.Errorf("contact_show: %q %+v", e, c)
			}
			var dec mcpserver.MessagesOut
			if e := call(t, cs, "decisions", nil, &dec); e != "" || len(dec.Messages) == 0 {
				t.Errorf("decisions: %q %+v", e, dec)
			}
			var dg mcpserver.DigestOut
			if e := call(t, cs, "digest", nil, &dg); e != "" || len(dg.Waiting) < 3 || dg.Processed == 0 {
				t.Errorf("digest: %q %+v", e, dg)
			}
			var fu mcpserver.FollowupsOut
			if e := call(t, cs, "followups", nil, &fu); e != "" {
				t.Errorf("followups: %q", e)
			}
			if e := call(t, cs, "needs_reply", nil, &fu); e != "" {
				t.Errorf("needs_reply: %q", e)
			}
			for _, f := range fu.Followups {
				if f.State != store.FollowupNeedsReply {
					t.Errorf("needs_reply returned %+v", f)
				}
			}
		})
	}
}

func TestPagination(t *testing.T) {
	t.Parallel()
	st, _ := syncedStore(t)
	cs := connect(t, mcpserver.Options{Open: overStore(st)})
	var all mcpserver.QueueListOut
	if e := call(t, cs, "queue_list", map[string]any{"limit": 100}, &all); e != "" || len(all.Items) < 3 || all.NextCursor != "" {
		t.Fatalf("queue_list: %q %d %q", e, len(all.Items), all.NextCursor)
	}
	var got []string
	cursor := ""
	for range 10 {
		var p mcpserver.QueueListOut
		if e := call(t, cs, "queue_list", map[string]any{"limit": 1, "cursor": cursor}, &p); e != "" || len(p.Items) != 1 {
			t.Fatalf("page: %q %+v", e, p)
		}
		got = append(got, p.Items[0].ID)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	var want []string
	for _, q := range all.Items {
		want = append(want, q.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages %v; want %v", got, want)
	}
}

func TestResourcesAndPrompt(t *testing.T) {
	t.Parallel()
	st, draft := syncedStore(t)
	cs := connect(t, mcpserver.Options{Open: overStore(st)})
	ctx := context.Background()
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) != 2 {
		t.Fatalf("templates: %v %+v", err, tl)
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.QueueURI + draft})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("queue resource: %v %+v", err, res)
	}
	var qs mcpserver.QueueShowOut
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &qs); err != nil || qs.Item.ID != draft {
		t.Errorf("queue resource: %v %+v", err, qs)
	}
	res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.ThreadURI + qs.Item.ThreadID})
	if err != nil || !strings.Contains(res.Contents[0].Text, "Lunch on Tuesday?") {
		t.Fatalf("thread resource: %v %+v", err, res)
	}
	for _, uri := range []string{mcpserver.QueueURI + "q_nope", mcpserver.ThreadURI + "nope", mcpserver.QueueURI + "..%2F..%2Fetc%2Fpasswd"} {
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("%s: read without error", uri)
		}
	}
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: mcpserver.TriagePrompt})
	if err != nil || len(p.Messages) != 1 || !strings.Contains(p.Messages[0].Content.(*mcp.TextContent).Text, "needs_reply") {
		t.Errorf("prompt: %v %+v", err, p)
	}
}

// TestProposeReply: over the watcher's socket the text becomes a pending
// draft to the authenticated sender, marked as the client's; nothing is
// sent. Without a watcher it needs one.
func TestProposeReply(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	cs := connect(t, mcpserver.Options{Open: modes[0].open(t, w)})
	var out mcpserver.ProposeOut
	if e := call(t, cs, "propose_reply", map[string]any{"ref": "carol-1@example.org", "text": "Tuesday at noon works."}, &out); e != "" {
		t.Fatal(e)
	}
	q, err := w.Store.GetQueueItem(out.Item.ID)
	if err != nil {
		t.Fatal(err)
	}
	if q.Status != store.QueuePending || q.Kind != store.KindDraft || len(q.To) != 1 || q.To[0].Email != apitest.Carol ||
		q.Draft != "Tuesday at noon works." || !strings.Contains(q.Reasons[0], "proposed by the MCP client test-client") || !out.Item.ProposedByClient {
		t.Errorf("proposed item: %+v", q)
	}
	if len(q.Gates) == 0 {
		t.Error("the proposal skipped the gates")
	}
	// A second proposal for the same message is refused.
	if e := call(t, cs, "propose_reply", map[string]any{"ref": w.Draft, "text": "again"}, nil); e == "" {
		t.Error("a second proposal was accepted")
	}
	if n := len(w.SMTP.Messages()); n != 0 {
		t.Errorf("%d messages sent", n)
	}

	ro := connect(t, mcpserver.Options{Open: modes[1].open(t, w)})
	if e := call(t, ro, "propose_reply", map[string]any{"ref": "erin-1@example.org", "text": "Yes"}, nil); !strings.Contains(e, "watch") {
		t.Errorf("without a watcher: %q; want it to say the watcher is needed", e)
	}
}

// TestSearchFiltersAreChecked: an intent or decision search_mail does not
// know is refused, naming the values it takes, instead of matching
// nothing.
func TestSearchFiltersAreChecked(t *testing.T) {
	t.Parallel()
	st, _ := syncedStore(t)
	cs := connect(t, mcpserver.Options{Open: overStore(st)})
	for _, args := range []map[string]any{
		{"intent": "meeting_request"}, {"intent": "Scheduling"}, {"decision": "send"}, {"decision": "queue\x1b[2J"},
	} {
		if e := call(t, cs, "search_mail", args, nil); !strings.Contains(e, "is not one of") {
			t.Errorf("search_mail %v: %q, want refused naming the values", args, e)
		} else if strings.Contains(e, "\x1b") {
			t.Errorf("search_mail %v: the refusal echoes an escape: %q", args, e)
		}
	}
	var out mcpserver.MessagesOut
	if e := call(t, cs, "search_mail", map[string]any{"intent": "scheduling", "decision": "queue"}, &out); e != "" {
		t.Errorf("search_mail with known values: %q", e)
	}
}
