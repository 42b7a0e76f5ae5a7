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

// inspector returns the path of the MCP Inspector's launcher: the
// one .ci/run installed ($MAILAGENT_MCP_INSPECTOR), else the one npx
// fetches into its cache (its launcher's path there, so that mcpdo beside
// it serves the tool calls too). It skips the test when neither can run
// (no npx, or no network and no cache).
func inspector(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MAILAGENT_MCP_INSPECTOR"); p != "" {
		return p
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not installed: the MCP Inspector test needs Node.js")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, npx, "-y", "-p", "@modelcontextprotocol/inspector@"+InspectorVersion,
		"-c", "command -v mcp-inspector").CombinedOutput()
	if err != nil {
		t.Skipf("the MCP Inspector %s cannot be fetched (offline?): %v %s", InspectorVersion, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	p := lines[len(lines)-1]
	if !filepath.IsAbs(p) {
		t.Fatalf("npx named no launcher for the MCP Inspector %s: %q", InspectorVersion, out)
	}
	return p
}

// mcpdo is the Inspector's connection CLI, installed beside the
// launcher (the package's mcpdo binary), for the launcher inspector
// returns; "" when it is not there (an older Inspector).
func mcpdo(insp string) string {
	p := filepath.Join(filepath.Dir(insp), "mcpdo")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// TestMCPInspectorCLI: real external clients, the MCP Inspector's, start
// `mailagent mcp` with a bare environment (HOME, PATH, USER). Its CLI
// lists the tools; its connection CLI (mcpdo) connects once and calls
// each tool against a store populated by `watch --once` (one server for
// the eleven calls: under -race each start of this test binary as the
// server costs seconds of CPU). With an Inspector that has no mcpdo, the
// CLI makes every call, one server each.
func TestMCPInspectorCLI(t *testing.T) {
	t.Parallel() // its own harness, HOME and daemon directory
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
	bare := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "USER=" + os.Getenv("USER")}
	exe := func(env []string, name string, args ...string) (map[string]any, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = env
		out, _ := cmd.Output()
		var v map[string]any
		// mcpdo follows an isError result with an error envelope: the
		// result is the first JSON value.
		_ = json.NewDecoder(strings.NewReader(string(out))).Decode(&v)
		return v, string(out)
	}
	cli := func(args ...string) (map[string]any, string) {
		return exe(bare, insp, append([]string{"--cli", bin, "mcp"}, args...)...)
	}
	list, raw := cli("--method", "tools/list")
	tools, _ := list["tools"].([]any)
	if len(tools) != 11 {
		t.Fatalf("tools/list: %d tools; output %s", len(tools), raw)
	}

	// call runs tools/call of tool with its key=value arguments.
	call := func(tool string, kv ...string) (map[string]any, string) {
		args := []string{"--method", "tools/call", "--tool-name", tool}
		for _, a := range kv {
			args = append(args, "--tool-arg", a)
		}
		return cli(args...)
	}
	if do := mcpdo(insp); do != "" {
		// A daemon of this test's own (its directory), with secrets kept
		// in memory (there are none: a stdio server), stopped at the end.
		env := append(bare, "MCP_INSPECTOR_DAEMON_DIR="+t.TempDir(), "MCP_INSPECTOR_SECRET_STORE=memory")
		if v, raw := exe(env, do, "--connection", "ma", "--format", "json", "connect", "--", bin, "mcp"); v["name"] != "ma" {
			t.Fatalf("mcpdo connect: %s", raw)
		}
		t.Cleanup(func() { _, _ = exe(env, do, "daemon", "stop") })
		call = func(tool string, kv ...string) (map[string]any, string) {
			args := []string{"--connection", "ma", "--format", "json", "tools/call", tool}
			for _, a := range kv {
				args = append(args, "--tool-arg", a)
			}
			return exe(env, do, args...)
		}
	}
	var qid string
	for _, c := range [][]string{
		{"status"}, {"needs_reply"}, {"followups"}, {"queue_list", "limit=5"}, {"queue_show"}, {"explain", "ref=lunch@test.example"},
		{"search_mail", "correspondent=carol"}, {"contact_show", "account=personal", "email=carol@example.org"},
		{"decisions"}, {"digest", "since=2000-01-01"},
	} {
		if c[0] == "queue_show" {
			c = append(c, "id="+qid)
		}
		res, raw := call(c[0], c[1:]...)
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
	if _, raw := call("propose_reply", "ref="+qid, "text=Yes"); !strings.Contains(raw, "mailagent watch") {
		t.Errorf("propose_reply without a watcher: %s", raw)
	}
}
