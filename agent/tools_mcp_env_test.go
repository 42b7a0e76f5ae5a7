package agent

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// parentSecrets are what mailagent's own environment holds that no tool
// server may see: model keys and account passwords read through *_env.
var parentSecrets = map[string]string{
	"GEMINI_API_KEY":      "gm-secret-4711",
	"OPENAI_API_KEY":      "oa-secret-4712",
	"WORK_IMAP_PASSWORD":  "imap-secret-4713",
	"WORK_SMTP_PASSWORD":  "smtp-secret-4714",
	"MAILAGENT_LLM_TOKEN": "llm-secret-4715",
}

// childEnvironment runs the test binary as a real MCP server that answers
// with its own environment, and returns it.
func childEnvironment(t *testing.T, extra ...string) []string {
	t.Helper()
	srv, _ := testMCPServer(t, "env", "lookup")
	srv.Env = append(srv.Env, extra...)
	step := &ToolStep{Timeout: 20 * time.Second}
	c := step.call(context.Background(), srv.Tools()[0], ToolInput{Sender: "bob@example.org"})
	if c.Err != nil {
		t.Fatalf("env server: %v", c.Err)
	}
	return strings.Split(c.Text, "\n")
}

func leaked(env []string) []string {
	var out []string
	for k, v := range parentSecrets {
		if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") || strings.Contains(kv, v) }) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestMCPServerEnvAdversarial (class "mcp-env"): an allow-listed MCP
// server, a real child process, sees PATH, HOME, LANG, TZ and what its
// configuration names, and none of mailagent's secrets. Positive control:
// with the defence off (the whole environment inherited, as before) every
// secret reaches the child.
func TestMCPServerEnvAdversarial(t *testing.T) {
	for k, v := range parentSecrets {
		t.Setenv(k, v)
	}
	t.Setenv("LANG", "de_DE.UTF-8")
	t.Setenv("TZ", "Europe/Berlin")
	t.Setenv("CRM_TOKEN", "crm-token-ok")

	env := childEnvironment(t, "CRM_URL=https://crm.example.com", "CRM_TOKEN")
	tried, through := len(parentSecrets), len(leaked(env))
	t.Logf("mcp-env: %d attacks tried, %d through", tried, through)
	if through != 0 {
		t.Errorf("mcp-env: %v reached the tool server", leaked(env))
	}
	for _, want := range []string{"LANG=de_DE.UTF-8", "TZ=Europe/Berlin", "CRM_URL=https://crm.example.com", "CRM_TOKEN=crm-token-ok", mcpModeEnv + "=env"} {
		if !slices.Contains(env, want) {
			t.Errorf("child environment lacks %s: %v", want, env)
		}
	}
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		t.Errorf("child environment lacks PATH: %v", env)
	}

	// Positive control: the same server with the defence off.
	restore := childEnv
	childEnv = func(parent, extra []string) []string { return append(slices.Clone(parent), extra...) }
	defer func() { childEnv = restore }()
	if got := leaked(childEnvironment(t)); len(got) != len(parentSecrets) {
		t.Fatalf("positive control: %v leaked with the defence off, want all %d; the test cannot see a leak", got, len(parentSecrets))
	}
}

func TestChildEnv(t *testing.T) {
	t.Parallel()
	parent := []string{"PATH=/bin", "HOME=/h", "GEMINI_API_KEY=k", "X=1", "TZ=UTC", "BROKEN"}
	got := ChildEnv(parent, []string{"X", "TZ=Asia/Tokyo", "NEW=v", "ABSENT", "=bad"})
	want := []string{"HOME=/h", "NEW=v", "PATH=/bin", "TZ=Asia/Tokyo", "X=1"}
	if !slices.Equal(got, want) {
		t.Errorf("ChildEnv = %v, want %v", got, want)
	}
}
