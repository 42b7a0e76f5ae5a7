package gemini_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/gemini"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
)

// clientConns counts the goroutines of the process's client-side HTTP
// connections (one read loop each).
func clientConns() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "net/http.(*persistConn).readLoop(")
}

// TestCloseIdleConnectionsEndsTheirGoroutines: a call through the shared
// transport leaves its connection idle for the next call (the control:
// its goroutines are there), and CloseIdleConnections ends them, as the
// composition root does when a command returns.
func TestCloseIdleConnectionsEndsTheirGoroutines(t *testing.T) {
	// sequential: it counts the whole process's connections, which
	// parallel tests open and close.
	srv := geminitest.NewServer(t, nil)
	g, err := gemini.New(t.Context(), gemini.Config{APIKey: "k", Model: "m", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Generate(t.Context(), llm.Request{Prompt: "hello"}); err != nil {
		t.Fatal(err)
	}
	if n := clientConns(); n == 0 {
		t.Fatal("no idle connection after a call: the control shows nothing")
	}
	gemini.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for clientConns() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d client connections still running after CloseIdleConnections", clientConns())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
