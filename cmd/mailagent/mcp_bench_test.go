package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// TestMCPBenchmarks measures `mailagent mcp` as a client sees it
// (BENCHMARKS.md, "MCP server"): the time from spawning the binary (bare
// environment) to the answer of the first tools/list, and queue_list over
// a store of 10,000 queue items. Run with
//
//	MAILAGENT_MCP_BENCH=1 go test -run TestMCPBenchmarks -v ./cmd/mailagent
func TestMCPBenchmarks(t *testing.T) {
	t.Parallel()
	if os.Getenv("MAILAGENT_MCP_BENCH") == "" {
		t.Skip("set MAILAGENT_MCP_BENCH=1")
	}
	const runs, items = 20, 10000
	bin := filepath.Join(t.TempDir(), "mailagent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	h := newHarness(t, highRiskModel, "")
	_ = os.MkdirAll(filepath.Join(h.dir, "state"), 0o700)
	st, err := store.Open(filepath.Join(h.dir, "state", "mailagent.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		q := &store.QueueItem{ID: fmt.Sprintf("q_bench_%05d", i), Kind: store.KindDraft, Account: "personal",
			Message: store.MessageKey{Account: "personal", Mailbox: "INBOX", UIDValidity: 1, UID: uint32(i + 1)},
			From:    mail.Address{Name: "Sender", Email: fmt.Sprintf("s%d@example.org", i)}, Subject: fmt.Sprintf("Subject %d", i),
			Draft: strings.Repeat("A reply line. ", 20), Status: store.QueuePending}
		if err := st.PutQueueItem(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cfg, _ := os.ReadFile(h.cfgPath)
	_ = os.MkdirAll(filepath.Join(home, ".config", "mailagent"), 0o700)
	if err := os.WriteFile(filepath.Join(home, ".config", "mailagent", "config.toml"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}

	var spawn, list []time.Duration
	for range runs {
		cmd := exec.Command(bin, "mcp")
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "USER=" + os.Getenv("USER")}
		in, _ := cmd.StdinPipe()
		outPipe, _ := cmd.StdoutPipe()
		out := bufio.NewScanner(outPipe)
		out.Buffer(make([]byte, 1<<20), 16<<20)
		id := 0
		req := func(method string, params any) {
			id++
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
			if _, err := in.Write(append(b, '\n')); err != nil {
				t.Fatal(err)
			}
			for out.Scan() {
				var r struct{ ID int }
				if json.Unmarshal(out.Bytes(), &r) == nil && r.ID == id {
					if !strings.Contains(out.Text(), `"result"`) || strings.Contains(out.Text(), `"isError":true`) {
						t.Fatalf("%s: %s", method, out.Text())
					}
					return
				}
			}
			t.Fatalf("%s: no answer", method)
		}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		req("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "bench", "version": "1"}})
		_, _ = io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		req("tools/list", nil)
		spawn = append(spawn, time.Since(start))
		t0 := time.Now()
		req("tools/call", map[string]any{"name": "queue_list", "arguments": map[string]any{"limit": 100}})
		list = append(list, time.Since(t0))
		_ = in.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(spawn)
	slices.Sort(list)
	t.Logf("spawn → first tools/list answer: best %v, median %v (%d runs)", spawn[0].Round(time.Millisecond/10), spawn[runs/2].Round(time.Millisecond/10), runs)
	t.Logf("queue_list limit=100 over %d items (store read-only, no watcher): best %v, median %v", items, list[0].Round(time.Millisecond/10), list[runs/2].Round(time.Millisecond/10))
}
