package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/store"
)

// rpcSession is `mailagent mcp` run in process, spoken to in JSON-RPC lines
// over its stdin and stdout as a client would.
type rpcSession struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *bufio.Scanner
	stdout *syncBuffer // every line the server wrote
	stderr *syncBuffer
	done   chan int
	id     int
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startMCP(t *testing.T, args ...string) *rpcSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &rpcSession{t: t, in: inW, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan int, 1)}
	s.out = bufio.NewScanner(io.TeeReader(outR, s.stdout))
	s.out.Buffer(make([]byte, 1<<20), 8<<20)
	go func() {
		code := Main(append(args, "mcp"), inR, outW, s.stderr)
		_ = outW.Close()
		s.done <- code
	}()
	t.Cleanup(func() { s.close() })
	return s
}

// request sends one request and returns its result (or fails on an error).
func (s *rpcSession) request(method string, params any) json.RawMessage {
	s.t.Helper()
	s.id++
	s.send(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params})
	for s.out.Scan() {
		var resp struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(s.out.Bytes(), &resp); err != nil {
			s.t.Fatalf("stdout line is not JSON-RPC: %q: %v", s.out.Text(), err)
		}
		if resp.ID != s.id {
			continue // a notification
		}
		if resp.Error != nil {
			s.t.Fatalf("%s: %s", method, resp.Error.Message)
		}
		return resp.Result
	}
	s.t.Fatalf("%s: the server closed stdout (stderr: %s)", method, s.stderr.String())
	return nil
}

func (s *rpcSession) send(v any) {
	s.t.Helper()
	b, _ := json.Marshal(v)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatalf("write: %v", err)
	}
}

func (s *rpcSession) initialize() {
	s.t.Helper()
	s.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "rpc-test", "version": "1"}})
	s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
}

// close ends stdin and returns the exit code.
func (s *rpcSession) close() int {
	_ = s.in.Close()
	select {
	case code := <-s.done:
		s.done <- code
		return code
	case <-time.After(20 * time.Second):
		s.t.Fatal("mailagent mcp did not exit after stdin closed")
		return -1
	}
}

// callTool returns a tool's structured result, and its error text.
func (s *rpcSession) callTool(name string, args map[string]any, out any) string {
	s.t.Helper()
	var res struct {
		IsError           bool `json:"isError"`
		Content           []struct{ Text string }
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(s.request("tools/call", map[string]any{"name": name, "arguments": args}), &res); err != nil {
		s.t.Fatal(err)
	}
	if res.IsError {
		if len(res.Content) == 0 {
			return "error"
		}
		return res.Content[0].Text
	}
	if out != nil {
		if err := json.Unmarshal(res.StructuredContent, out); err != nil {
			s.t.Fatal(err)
		}
	}
	return ""
}

// TestMCPWithoutWatcher: after `watch --once`, `mailagent mcp` answers over
// stdio from the store opened read-only; between requests it holds no
// lock (a writer opens the database); stdout carries only JSON-RPC, even
// with -v; propose_reply says it needs the watcher.
func TestMCPWithoutWatcher(t *testing.T) {
	t.Parallel()
	h := newHarness(t, highRiskModel, "")
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch on Tuesday?"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	s := startMCP(t, "--config", h.cfgPath, "-v")
	s.initialize()
	var tools struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(s.request("tools/list", nil), &tools); err != nil || len(tools.Tools) != 11 {
		t.Fatalf("tools/list: %v %+v", err, tools)
	}
	var ql struct {
		Items []struct {
			ID        string `json:"id"`
			Untrusted struct {
				Subject string `json:"subject"`
			} `json:"untrusted_external_content"`
		} `json:"items"`
	}
	if e := s.callTool("queue_list", nil, &ql); e != "" || len(ql.Items) != 1 || ql.Items[0].Untrusted.Subject != "Lunch" {
		t.Fatalf("queue_list: %q %+v", e, ql)
	}
	// Between requests the database is free: a writer (a watcher starting
	// now) gets its lock.
	st, err := store.Open(filepath.Join(h.dir, "state", "mailagent.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("the MCP server keeps the database locked: %v", err)
	}
	_ = st.Close()
	if e := s.callTool("propose_reply", map[string]any{"ref": ql.Items[0].ID, "text": "Yes"}, nil); !strings.Contains(e, "mailagent watch") {
		t.Errorf("propose_reply without a watcher: %q", e)
	}
	if code := s.close(); code != 0 {
		t.Errorf("exit %d, stderr %s", code, s.stderr.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(s.stdout.String()), "\n") {
		if !json.Valid([]byte(l)) || !strings.Contains(l, `"jsonrpc"`) {
			t.Errorf("stdout has a line that is not JSON-RPC: %q", l)
		}
	}
	if !strings.Contains(s.stderr.String(), "mcp: serving on stdio") {
		t.Errorf("-v: the log is not on stderr: %q", s.stderr.String())
	}
}

// TestMCPBesideWatcher: with `watch` running, mcp goes through its socket
// (it never takes the lock) and propose_reply queues a draft.
func TestMCPBesideWatcher(t *testing.T) {
	t.Parallel()
	h := newHarness(t, highRiskModel, "")
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch on Tuesday?"))
	h.startWatch(t)
	s := startMCP(t, "--config", h.cfgPath)
	s.initialize()
	var st struct {
		Watcher bool `json:"watcher"`
	}
	if e := s.callTool("status", nil, &st); e != "" || !st.Watcher {
		t.Fatalf("status: %q %+v", e, st)
	}
	var out struct {
		Item struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"item"`
	}
	var ok bool
	for range 100 { // the watcher's first sync may still run
		if e := s.callTool("propose_reply", map[string]any{"ref": "lunch@test.example", "text": "Tuesday works."}, &out); e == "" {
			ok = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !ok || out.Item.Status != "pending" {
		t.Fatalf("propose_reply beside the watcher: %+v", out)
	}
	if n := len(h.smtp.Messages()); n != 0 {
		t.Errorf("%d messages sent", n)
	}
}

// TestMCPBareEnvironment: with only HOME, PATH and USER, the config at its
// default path is found and no secret is needed; without one, one stderr
// line says what is missing and the fix.
func TestMCPBareEnvironment(t *testing.T) {
	h := newHarness(t, classifyReply, "")
	home := t.TempDir()
	for _, k := range []string{"MAILAGENT_CONFIG", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "MA_TEST_IMAP_PASS", "MA_TEST_GEMINI_KEY", "GEMINI_API_KEY"} {
		t.Setenv(k, "")
		_ = os.Unsetenv(k)
	}
	t.Setenv("HOME", home)
	s := startMCP(t)
	if code := s.close(); code != ExitUsage {
		t.Errorf("no config: exit %d; want %d", code, ExitUsage)
	}
	msg := strings.TrimSpace(s.stderr.String())
	if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "mcp cannot start") || !strings.Contains(msg, "fix: ") || !strings.Contains(msg, "mailagent init") {
		t.Errorf("no config: stderr %q; want one line with what is missing and the fix", msg)
	}
	if s.stdout.String() != "" {
		t.Errorf("stdout: %q", s.stdout.String())
	}

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
	s = startMCP(t)
	s.initialize()
	var st struct {
		Watcher bool `json:"watcher"`
	}
	// No state yet: the tool says so; the server itself runs.
	if e := s.callTool("status", nil, &st); !strings.Contains(e, "mailagent watch") {
		t.Errorf("status with no state: %q", e)
	}
	if code := s.close(); code != 0 {
		t.Errorf("exit %d: %s", code, s.stderr.String())
	}

	off := strings.Replace(string(cfg), "[[accounts]]", "[mcp]\nenabled = false\n\n[[accounts]]", 1)
	if err := os.WriteFile(filepath.Join(home, ".config", "mailagent", "config.toml"), []byte(off), 0o600); err != nil {
		t.Fatal(err)
	}
	s = startMCP(t)
	if code := s.close(); code != ExitUsage || !strings.Contains(s.stderr.String(), "enabled = true") {
		t.Errorf("switched off: exit %d, stderr %q", code, s.stderr.String())
	}
}

// TestMCPAnswersEverythingBeforeEOF: a client that writes initialize and
// tools/list and then closes its input (printf … | mailagent mcp) gets
// both answers before the server exits, every run.
func TestMCPAnswersEverythingBeforeEOF(t *testing.T) {
	t.Parallel()
	h := newHarness(t, highRiskModel, "")
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch on Tuesday?"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"queue_list","arguments":{}}}
`
	for run := range 5 {
		var stdout, stderr bytes.Buffer
		code := Main([]string{"--config", h.cfgPath, "mcp"}, strings.NewReader(in), &stdout, &stderr)
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s", run, code, stderr.String())
		}
		ids := map[float64]bool{}
		for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			var m struct {
				ID    *float64        `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil || m.ID == nil || m.Error != nil {
				t.Errorf("run %d: line %q is not a successful answer (%v)", run, l, err)
				continue
			}
			ids[*m.ID] = true
		}
		if len(ids) != 3 || !ids[1] || !ids[2] || !ids[3] {
			t.Errorf("run %d: answered %v, want 1, 2 and 3:\n%s", run, ids, stdout.String())
		}
	}
}
