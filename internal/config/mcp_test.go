package config

import (
	"strings"
	"testing"
)

func TestMCPSection(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(validTOML), "/x/config.toml", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.MCP.Enabled || cfg.MCP.ReadOnly || len(cfg.MCP.Accounts) != 0 {
		t.Errorf("defaults: %+v; want enabled, not read-only, every account", cfg.MCP)
	}
	name := cfg.Accounts[0].Name
	cfg, err = Parse([]byte(validTOML+"\n[mcp]\nenabled = false\nread_only = true\naccounts = [\""+name+"\"]\n"), "/x/config.toml", 0o600)
	if err != nil || cfg.MCP.Enabled || !cfg.MCP.ReadOnly || len(cfg.MCP.Accounts) != 1 {
		t.Errorf("set: %+v, %v", cfg.MCP, err)
	}
	_, err = Parse([]byte(validTOML+"\n[mcp]\naccounts = [\"nope\"]\n"), "/x/config.toml", 0o600)
	if err == nil || !strings.Contains(err.Error(), "mcp.accounts") {
		t.Errorf("unknown account: %v; want an error naming mcp.accounts", err)
	}
}
