package config

import (
	"fmt"
	"strings"
	"time"
)

// Tools configures the bounded tool step between classification and
// drafting ([tools]): the built-in tools (calendar slots, the thread from
// the local store, the contact's record) are picked by code from the
// intents; MCP lists optional external servers whose read-only tools are
// called by name, with arguments built by code.
type Tools struct {
	// Timeout bounds every tool call (default 10s).
	Timeout Duration `toml:"timeout"`
	// MaxBytes caps each tool result (default 4096 bytes).
	MaxBytes int `toml:"max_bytes"`
	// MCP lists the external MCP servers ([[tools.mcp]]).
	MCP []MCPTool `toml:"mcp"`
}

// MCPTool is one MCP server started over stdio, and the tools of it that
// may be called.
type MCPTool struct {
	// Name names the server in traces ("crm").
	Name string `toml:"name"`
	// Command and Args start the server. It does not inherit mailagent's
	// environment: it gets PATH, HOME, USER, LOGNAME, LANG, LC_*, TZ and
	// TMPDIR (agent.ChildEnv), plus Env: KEY=VALUE entries, or a bare NAME
	// to pass that one variable through. The model key and the accounts'
	// password variables never reach it unless named here.
	Command string   `toml:"command"`
	Args    []string `toml:"args"`
	Env     []string `toml:"env"`
	// Allow names the tools that may be called; a tool not named here, or
	// one whose annotations do not say read-only or say destructive, is
	// never called.
	Allow []string `toml:"allow"`
	// Timeout bounds each call to this server (default tools.timeout).
	Timeout Duration `toml:"timeout"`
}

// Defaults of [tools].
const (
	DefaultToolTimeout  = 10 * time.Second
	DefaultToolMaxBytes = 4096
)

// CallTimeout is the timeout of one tool call.
func (t Tools) CallTimeout() time.Duration {
	if t.Timeout.Duration > 0 {
		return t.Timeout.Duration
	}
	return DefaultToolTimeout
}

// ResultCap is the size cap of one tool result in bytes.
func (t Tools) ResultCap() int {
	if t.MaxBytes > 0 {
		return t.MaxBytes
	}
	return DefaultToolMaxBytes
}

func (t *Tools) validate(p *problems) {
	p.duration("tools.timeout", t.Timeout, `"10s"`, true)
	if t.MaxBytes < 0 || t.MaxBytes > 1<<20 {
		p.add("tools.max_bytes", fmt.Sprintf("%d is out of range", t.MaxBytes), "use a size between 1 and 1048576 bytes (0: the default 4096)")
	}
	seen := map[string]bool{}
	for i, m := range t.MCP {
		key := fmt.Sprintf("tools.mcp[%d]", i)
		switch {
		case strings.TrimSpace(m.Name) == "":
			p.add(key+".name", "missing", `name the server, e.g. name = "crm"`)
		case seen[m.Name]:
			p.add(key+".name", fmt.Sprintf("%q is used twice", m.Name), "give each server its own name")
		}
		seen[m.Name] = true
		if strings.TrimSpace(m.Command) == "" {
			p.add(key+".command", "missing", `the program that serves MCP over stdio, e.g. command = "crm-mcp"`)
		}
		if len(m.Allow) == 0 {
			p.add(key+".allow", "no tool is allowed", `name the read-only tools that may be called, e.g. allow = ["lookup_contact"]`)
		}
		for _, e := range m.Env {
			if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
				p.add(key+".env", fmt.Sprintf("%q is not KEY=VALUE", e), `write entries like "API_URL=https://crm.example"`)
			}
		}
		p.duration(key+".timeout", m.Timeout, `"5s"`, true)
	}
}
