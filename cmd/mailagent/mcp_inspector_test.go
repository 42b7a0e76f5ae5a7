package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// InspectorVersion is the MCP Inspector that CI installs (.ci/run) and this
// test runs: pinned, so a new release cannot change the result by itself.
const InspectorVersion = "2.12.0"

// inspector returns the command line that starts the MCP Inspector: the
// one .ci/run installed ($MAILAGENT_MCP_INSPECTOR), else npx. It skips the
// test when neither can run (no npx, or no network and no cache).
func inspector(t *testing.T) []string {
	t.Helper()
	if p := os.Getenv("MAILAGENT_MCP_INSPECTOR"); p != "" {
		return []string{p}
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not installed: the MCP Inspector test needs Node.js")
	}
	cmd := []string{npx, "-y", "@modelcontextprotocol/inspector@" + InspectorVersion}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cmd[0], append(cmd[1:], "--version")...).CombinedOutput(); err != nil {
		t.Skipf("the MCP Inspector %s cannot be fetched (offline?): %v %s", InspectorVersion, err, out)
	}
	return cmd
}

// TestMCPInspectorCLI: a real external client, the MCP Inspector's CLI,
// starts `mailagent mcp` with a bare environment (HOME, PATH, USER), lists
// the tools and calls each one against a store populated by `watch --once`.
func TestMCPInspectorCLI(t *testing.T) {
	t.Parallel() // its own harness and HOME; 11 Node.js starts, mostly waiting
	if testing.Short() {
		t.Skip("runs Node.js")
	}
	insp := inspector(t)
	bin := cliBinary(t)
	h := newHarness(t, highRiskModel, "")
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch on Tuesday?"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	home := t.TempDir()
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".config", "mailagent"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "mailagent", "config.toml"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (map[string]any, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, insp[0], append(append(insp[1:], "--cli", bin, "mcp"), args...)...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "USER=" + os.Getenv("USER")}
		out, _ := cmd.Output()
		var v map[string]any
		_ = json.Unmarshal(out, &v)
		return v, string(out)
	}
	list, raw := run("--method", "tools/list")
	tools, _ := list["tools"].([]any)
	if len(tools) != 11 {
		t.Fatalf("tools/list: %d tools; output %s", len(tools), raw)
	}
	var qid string
	for _, c := range [][]string{
		{"status"}, {"needs_reply"}, {"followups"}, {"queue_list", "limit=5"}, {"queue_show"}, {"explain", "ref=lunch@test.example"},
		{"search_mail", "correspondent=carol"}, {"contact_show", "account=personal", "email=carol@example.org"},
		{"decisions"}, {"digest", "since=2000-01-01"},
	} {
		args := []string{"--method", "tools/call", "--tool-name", c[0]}
		if c[0] == "queue_show" {
			c = append(c, "id="+qid)
		}
		for _, a := range c[1:] {
			args = append(args, "--tool-arg", a)
		}
		res, raw := run(args...)
		sc, ok := res["structuredContent"].(map[string]any)
		if !ok || res["isError"] == true {
			t.Errorf("%v: %s", c, raw)
			continue
		}
		if c[0] == "queue_list" {
			items, _ := sc["items"].([]any)
			if len(items) != 1 {
				t.Fatalf("queue_list: %s", raw)
			}
			qid, _ = items[0].(map[string]any)["id"].(string)
			if !strings.Contains(raw, `"untrusted_external_content"`) || !strings.Contains(raw, `"Lunch"`) {
				t.Errorf("queue_list: %s", raw)
			}
		}
	}
	// The write tool without a watcher: refused, with the reason.
	if _, raw := run("--method", "tools/call", "--tool-name", "propose_reply", "--tool-arg", "ref="+qid, "--tool-arg", "text=Yes"); !strings.Contains(raw, "mailagent watch") {
		t.Errorf("propose_reply without a watcher: %s", raw)
	}
}
