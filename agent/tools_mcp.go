package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPServer is one external MCP server, started lazily over stdio
// (mcp.CommandTransport) the first time one of its tools runs, and again
// after it died. Only tools named in Allow are ever called, and only when
// the server annotates them read-only and not destructive.
type MCPServer struct {
	Name    string
	Command string
	Args    []string
	// Env is what the configuration gives the server beyond ChildEnv's
	// minimal set: KEY=VALUE entries, or a bare NAME that passes that one
	// variable of mailagent's environment through.
	Env     []string
	Allow   []string
	Timeout time.Duration // per call; 0: the tool step's timeout

	mu      sync.Mutex
	session *mcp.ClientSession
	tools   map[string]*mcp.Tool
}

// Tools returns one Tool per allowed name.
func (s *MCPServer) Tools() []Tool {
	var out []Tool
	for _, n := range s.Allow {
		out = append(out, &mcpTool{srv: s, tool: n})
	}
	return out
}

// Close stops the server process, if it runs.
func (s *MCPServer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == nil {
		return nil
	}
	err := s.session.Close()
	s.session, s.tools = nil, nil
	return err
}

func (s *MCPServer) connect(ctx context.Context) (*mcp.ClientSession, map[string]*mcp.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		return s.session, s.tools, nil
	}
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = childEnv(os.Environ(), s.Env)
	client := mcp.NewClient(&mcp.Implementation{Name: "mailagent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("mcp %s: start %s: %w", s.Name, s.Command, err)
	}
	tools := map[string]*mcp.Tool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			_ = cs.Close()
			return nil, nil, fmt.Errorf("mcp %s: list tools: %w", s.Name, err)
		}
		tools[t.Name] = t
	}
	s.session, s.tools = cs, tools
	return cs, tools, nil
}

// childEnvNames are the variables of mailagent's environment that every
// process it starts inherits: what a program needs to run, find its files
// and speak the owner's language, and nothing else.
var childEnvNames = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR"}

// childEnv builds the environment of a process mailagent starts; a
// variable so that the adversarial test's positive control can switch the
// defence off.
var childEnv = ChildEnv

// ChildEnv is the environment of every process mailagent starts (MCP tool
// servers): from parent (KEY=VALUE, as os.Environ) only PATH, HOME, USER,
// LOGNAME, LANG, LC_ALL, LC_CTYPE, LC_MESSAGES, TZ and TMPDIR; then what
// the configuration names in extra: a KEY=VALUE entry is set (it wins over
// the inherited one), a bare NAME passes that one variable of parent
// through. Nothing else crosses: not the model's API key, not an
// account's password variable (*_env), not mailagent's own settings. The
// result has each name once.
func ChildEnv(parent, extra []string) []string {
	from := map[string]string{}
	for _, kv := range parent {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			from[k] = v
		}
	}
	out := map[string]string{}
	for _, k := range childEnvNames {
		if v, ok := from[k]; ok {
			out[k] = v
		}
	}
	for _, e := range extra {
		k, v, ok := strings.Cut(e, "=")
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if !ok {
			if pv, found := from[k]; found {
				out[k] = pv
			}
			continue
		}
		out[k] = v
	}
	env := make([]string, 0, len(out))
	for k, v := range out {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

// drop forgets a session that failed, so that the next call restarts the
// server.
func (s *MCPServer) drop(cs *mcp.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == cs {
		_ = cs.Close()
		s.session, s.tools = nil, nil
	}
}

// ReadOnlyTool reports why t may not be called, or "" when its
// annotations say it only reads: readOnlyHint true, destructiveHint not
// true. A tool without annotations is refused.
func ReadOnlyTool(t *mcp.Tool) string {
	switch {
	case t.Annotations == nil:
		return "it has no annotations (readOnlyHint is required)"
	case !t.Annotations.ReadOnlyHint:
		return "it is not annotated read-only"
	case t.Annotations.DestructiveHint != nil && *t.Annotations.DestructiveHint:
		return "it is annotated destructive"
	}
	return ""
}

// mcpTool is one allowed tool of an MCPServer.
type mcpTool struct {
	srv  *MCPServer
	tool string
}

func (t *mcpTool) Name() string { return t.srv.Name + "." + t.tool }

// mcpArguments are the arguments code builds from the message; a tool
// gets those its input schema names (all of them when it names none).
func mcpArguments(in ToolInput, schema any) map[string]any {
	all := map[string]any{"sender": in.Sender, "subject": in.Subject, "thread_id": in.ThreadID,
		"message_id": in.MessageID, "account": in.Account}
	m, ok := schema.(map[string]any)
	if !ok {
		return all
	}
	props, ok := m["properties"].(map[string]any)
	if !ok {
		return all
	}
	out := map[string]any{}
	for k := range props {
		if v, ok := all[k]; ok {
			out[k] = v
		}
	}
	return out
}

// Run calls the tool with arguments built by code from in.
func (t *mcpTool) Run(ctx context.Context, in ToolInput) (string, error) {
	if t.srv.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.srv.Timeout)
		defer cancel()
	}
	if !slices.Contains(t.srv.Allow, t.tool) {
		return "", fmt.Errorf("mcp %s: tool %q is not allowed", t.srv.Name, t.tool)
	}
	cs, tools, err := t.srv.connect(ctx)
	if err != nil {
		return "", err
	}
	def, ok := tools[t.tool]
	if !ok {
		return "", fmt.Errorf("mcp %s: the server offers no tool %q", t.srv.Name, t.tool)
	}
	if why := ReadOnlyTool(def); why != "" {
		return "", fmt.Errorf("mcp %s: refused to call %q: %s", t.srv.Name, t.tool, why)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: t.tool, Arguments: mcpArguments(in, def.InputSchema)})
	if err != nil {
		if ctx.Err() == nil || errors.Is(err, mcp.ErrConnectionClosed) {
			t.srv.drop(cs)
		}
		return "", fmt.Errorf("mcp %s: call %q: %w", t.srv.Name, t.tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		msg, _ := CleanToolText(b.String(), 200)
		return "", fmt.Errorf("mcp %s: %q failed: %s", t.srv.Name, t.tool, msg)
	}
	return b.String(), nil
}
