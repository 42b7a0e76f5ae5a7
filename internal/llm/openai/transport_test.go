package openai_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/gemini"
	"github.com/mailagent/mailagent/internal/llm/openai"
)

// TestModelClientsReuseConnections: internal/llm/internal/httpcall's
// Transport at work in both clients (the test sits here, whose binary
// links both SDKs anyway, rather than in a binary of its own). With eight
// calls in flight at a time (more than http.DefaultTransport keeps idle
// per host), 200 calls keep every connection they open for the next call,
// for Gemini and for an OpenAI-compatible server, when the configuration
// gives no HTTP client: the server sees no connection closed while the
// calls run, and about one opened per caller in flight. Go's transport
// may dial while a connection is coming back to the pool (a dial race,
// more frequent under -race and load), so the number opened varies a
// little; the closed count does not. The control is the same run through
// http.DefaultTransport, which keeps 2 idle connections and closes the
// others after one answer.
func TestModelClientsReuseConnections(t *testing.T) {
	t.Parallel()
	const calls, inFlight = 200, 8
	geminiReply := `{"candidates":[{"index":0,"finishReason":"STOP","content":{"role":"model","parts":[{"text":"ok"}]}}],` +
		`"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2}}`
	openaiReply := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop",` +
		`"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	defaultClient := &http.Client{Transport: http.DefaultTransport}
	for _, tc := range []struct {
		name    string
		reply   string
		model   func(url string) (llm.Model, error)
		control bool // through http.DefaultTransport: connections must be closed
	}{
		{"gemini", geminiReply, func(url string) (llm.Model, error) {
			return gemini.New(context.Background(), gemini.Config{APIKey: "k", Model: "m", BaseURL: url})
		}, false},
		{"openai", openaiReply, func(url string) (llm.Model, error) {
			return openai.New(openai.Config{Model: "m", BaseURL: url + "/v1"})
		}, false},
		{"control-gemini-default-transport", geminiReply, func(url string) (llm.Model, error) {
			return gemini.New(context.Background(), gemini.Config{APIKey: "k", Model: "m", BaseURL: url, HTTPClient: defaultClient})
		}, true},
		{"control-openai-default-transport", openaiReply, func(url string) (llm.Model, error) {
			return openai.New(openai.Config{Model: "m", BaseURL: url + "/v1", HTTPClient: defaultClient})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conns, closed atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.reply))
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				switch s {
				case http.StateNew:
					conns.Add(1)
				case http.StateClosed, http.StateHijacked:
					closed.Add(1)
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
						if _, err := m.Generate(context.Background(), llm.Request{Prompt: "hi"}); err != nil {
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
			// Read before srv.Close, which closes the idle ones.
			n, c := conns.Load(), closed.Load()
			t.Logf("%d calls, %d at a time: %d connections opened, %d closed while the calls ran", calls, inFlight, n, c)
			if tc.control {
				// Before the fix this test saw 90 to 95 opened.
				if c == 0 || n <= 2*inFlight {
					t.Errorf("control: through http.DefaultTransport %d opened and %d closed; want connections closed and more than %d opened", n, c, 2*inFlight)
				}
				return
			}
			if c != 0 || n > 2*inFlight {
				t.Errorf("%d calls, %d at a time: %d connections opened, %d closed; want none closed and at most %d opened", calls, inFlight, n, c, 2*inFlight)
			}
		})
	}
}
