package llm

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// TestModelClientsReuseConnections: with eight calls in flight at a time
// (more than http.DefaultTransport keeps idle per host), 200 calls open
// about one connection per caller in flight, for Gemini and for an
// OpenAI-compatible server, when the configuration gives no HTTP client.
func TestModelClientsReuseConnections(t *testing.T) {
	const calls, inFlight = 200, 8
	gemini := `{"candidates":[{"index":0,"finishReason":"STOP","content":{"role":"model","parts":[{"text":"ok"}]}}],` +
		`"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2}}`
	openaiReply := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop",` +
		`"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	for _, tc := range []struct {
		name  string
		reply string
		model func(url string) (Model, error)
	}{
		{"gemini", gemini, func(url string) (Model, error) {
			return NewGemini(context.Background(), GeminiConfig{APIKey: "k", Model: "m", BaseURL: url})
		}},
		{"openai", openaiReply, func(url string) (Model, error) { return NewOpenAI(OpenAIConfig{Model: "m", BaseURL: url + "/v1"}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conns atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.reply))
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			m, err := tc.model(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			work := make(chan struct{})
			errs := make(chan error, calls)
			for range inFlight {
				wg.Go(func() {
					for range work {
						if _, err := m.Generate(context.Background(), Request{Prompt: "hi"}); err != nil {
							errs <- err
						}
					}
				})
			}
			for range calls {
				work <- struct{}{}
			}
			close(work)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			// A dial may race a connection going idle, so a couple more
			// than the callers in flight is allowed; before the fix this
			// test saw 90 to 95.
			if n := conns.Load(); n > inFlight+2 {
				t.Errorf("%d calls, %d at a time, opened %d connections: want at most %d", calls, inFlight, n, inFlight+2)
			}
			t.Logf("%d calls, %d at a time: %d connections", calls, inFlight, conns.Load())
		})
	}
}
