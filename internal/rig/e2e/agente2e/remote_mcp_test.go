package agente2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// TestRemoteMCP: `mailagent --remote ssh://… mcp` on "another machine"
// (an empty state directory, no configuration) serves the Go SDK's MCP
// client from the watcher on the host, through a real ssh and sshd: the
// tools list, status says the remote watcher, queue_list shows its item,
// and propose_reply queues a reply there (addressed to the authenticated
// sender only, and sent to nobody). Every call went through sshd.
func TestRemoteMCP(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	r := newRemote(t, e)
	w, m, item := remoteDraft(t, e, "mcp")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before := r.sessions()
	cmd := r.command(ctx, r.ssh, "mcp")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-remote", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to mailagent --remote mcp: %v\nstderr:\n%s", err, stderr)
	}
	defer func() { _ = cs.Close() }()
	c := &mcpClient{t: t, cs: cs}
	if names := c.tools(ctx); len(names) != 11 {
		t.Fatalf("tools/list over ssh: %d tools %v, want 11", len(names), names)
	}
	// The laptop has no configuration: an account named in the status is
	// the host watcher's.
	if st, errText := c.tool("status", nil); errText != "" || st["watcher"] != true || !strings.Contains(mustJSON(st["accounts"]), `"name":"`+account+`"`) {
		t.Errorf("status over ssh: %q %v, want the host's watcher, with account %s", errText, st, account)
	}
	ql, errText := c.tool("queue_list", map[string]any{"status": "pending"})
	if errText != "" || !strings.Contains(mustJSON(ql), item.ID) {
		t.Fatalf("queue_list over ssh: %q %s, want %s", errText, mustJSON(ql), item.ID)
	}
	res, errText := c.tool("propose_reply", map[string]any{"ref": m.ID, "text": "Friday works. Ada"})
	if errText != "" {
		t.Fatalf("propose_reply over ssh: %s", errText)
	}
	id, _ := res["item"].(map[string]any)["id"].(string)
	d, err := w.client.QueueItem(ctx, id)
	if err != nil {
		t.Fatalf("the proposed item %q on the host: %v", id, err)
	}
	if st := d.Item; st.Status != "pending" || len(st.To) != 1 || !strings.EqualFold(st.To[0].Email, e2e.Bob) || !strings.Contains(strings.Join(st.Reasons, " "), "proposed by the MCP client e2e-remote") {
		t.Errorf("proposed item on the host: %+v", st)
	}
	if n := r.sessions() - before; n < 1 {
		t.Errorf("sshd started serve --stdio %d times for mcp, want at least 1: mcp did not go through ssh", n)
	}
	_ = cs.Close()
	e.barrier(e2e.Bob)
	if got := e.find(e2e.Bob, "INBOX", "In-Reply-To", m.ID); len(got) != 0 {
		t.Errorf("%d replies reached bob; the draft and the proposal wait for the owner", len(got))
	}
}
