package config

import (
	"strings"
	"testing"
	"time"
)

func TestToolsSection(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(validTOML), "/x/config.toml", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tools.CallTimeout() != DefaultToolTimeout || cfg.Tools.ResultCap() != DefaultToolMaxBytes || len(cfg.Tools.MCP) != 0 {
		t.Errorf("defaults: %+v", cfg.Tools)
	}
	cfg, err = Parse([]byte(validTOML+`
[tools]
timeout = "3s"
max_bytes = 2000
[[tools.mcp]]
name = "crm"
command = "crm-mcp"
args = ["--read-only"]
env = ["CRM_URL=https://crm.example"]
allow = ["lookup_contact"]
timeout = "1s"
`), "/x/config.toml", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Tools.MCP
	if cfg.Tools.CallTimeout() != 3*time.Second || cfg.Tools.ResultCap() != 2000 || len(m) != 1 ||
		m[0].Name != "crm" || m[0].Command != "crm-mcp" || m[0].Args[0] != "--read-only" || m[0].Env[0] != "CRM_URL=https://crm.example" ||
		m[0].Allow[0] != "lookup_contact" || m[0].Timeout.Duration != time.Second {
		t.Errorf("parsed: %+v", cfg.Tools)
	}
	bad := []struct{ toml, key string }{
		{"[[tools.mcp]]\nname = \"crm\"\ncommand = \"x\"\n", "tools.mcp[0].allow"},
		{"[[tools.mcp]]\ncommand = \"x\"\nallow = [\"a\"]\n", "tools.mcp[0].name"},
		{"[[tools.mcp]]\nname = \"crm\"\nallow = [\"a\"]\n", "tools.mcp[0].command"},
		{"[[tools.mcp]]\nname = \"crm\"\ncommand = \"x\"\nallow = [\"a\"]\nenv = [\"NOEQUALS\"]\n", "tools.mcp[0].env"},
		{"[[tools.mcp]]\nname = \"crm\"\ncommand = \"x\"\nallow = [\"a\"]\n[[tools.mcp]]\nname = \"crm\"\ncommand = \"y\"\nallow = [\"a\"]\n", "tools.mcp[1].name"},
		{"[tools]\ntimeout = \"soon\"\n", "tools.timeout"},
		{"[tools]\nmax_bytes = -1\n", "tools.max_bytes"},
	}
	for _, b := range bad {
		_, err := Parse([]byte(validTOML+"\n"+b.toml), "/x/config.toml", 0o600)
		if err == nil || !strings.Contains(err.Error(), b.key) {
			t.Errorf("%q: %v; want an error naming %s", b.toml, err, b.key)
		}
	}
}
