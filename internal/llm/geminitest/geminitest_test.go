package geminitest_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/llm/geminitest"
)

func TestServerRejectsOtherPaths(t *testing.T) {
	t.Parallel()
	srv := geminitest.NewServer(t, nil)
	tests := []struct {
		name, method, path string
	}{
		{name: "get", method: http.MethodGet, path: "/v1beta/models/m:generateContent"},
		{name: "stream", method: http.MethodPost, path: "/v1beta/models/m:streamGenerateContent"},
		{name: "no model", method: http.MethodPost, path: "/v1beta/m:generateContent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+tt.path, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("status: got %d, want 404", resp.StatusCode)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("recorded requests: got %d, want 0", n)
	}
}

func TestServerRecordsRequest(t *testing.T) {
	t.Parallel()
	srv := geminitest.NewServer(t, func(r *geminitest.Request) geminitest.Reply {
		return geminitest.Reply{Text: r.Model + "/" + r.Version}
	})
	body := `{"contents":[{"role":"user","parts":[{"text":"hi "},{"text":"there"}]}],"systemInstruction":{"parts":[{"text":"sys"}]}}`
	resp, err := srv.Client().Post(srv.URL+"/v1beta/models/gemini-x:generateContent", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests: got %d, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "gemini-x" || r.Version != "v1beta" {
		t.Errorf("model/version: got %q/%q, want gemini-x/v1beta", r.Model, r.Version)
	}
	if got, want := r.UserText(), "hi there"; got != want {
		t.Errorf("user text: got %q, want %q", got, want)
	}
	if got, want := r.SystemText(), "sys"; got != want {
		t.Errorf("system text: got %q, want %q", got, want)
	}
	if string(r.Raw) != body {
		t.Errorf("raw: got %q, want %q", r.Raw, body)
	}
}

// TestDelayDoesNotBlockCleanup relies on t.Cleanup: a reply delayed for an
// hour must not hold the server open once the client has gone away.
func TestDelayDoesNotBlockCleanup(t *testing.T) {
	t.Parallel()
	srv := geminitest.NewServer(t, func(*geminitest.Request) geminitest.Reply {
		return geminitest.Reply{Text: "late", Delay: time.Hour}
	})
	c := srv.Client()
	c.Timeout = 10 * time.Millisecond
	if _, err := c.Post(srv.URL+"/v1beta/models/m:generateContent", "application/json", strings.NewReader("{}")); err == nil {
		t.Fatal("got a response, want a client timeout")
	}
}
