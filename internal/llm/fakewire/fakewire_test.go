package fakewire

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestServer: requests are recorded in order, a reply's delay ends when
// the client gives up, a hang-up is a connection error, and a JSON reply
// carries its headers with status 200 unless told.
func TestServer(t *testing.T) {
	t.Parallel()
	var s *Server[string]
	s = Start[string](t, func(w http.ResponseWriter, r *http.Request) {
		s.Record(r.URL.Path)
		switch r.URL.Path {
		case "/slow":
			if s.Wait(r, time.Hour) {
				t.Error("a wait of an hour ended as if it had run out")
			}
		case "/hangup":
			Hangup(w)
		default:
			WriteJSON(w, http.Header{"Retry-After": {"7"}}, 0, `{"ok":true}`)
		}
	})
	c := s.Client()
	resp, err := c.Get(s.URL() + "/a")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" ||
		resp.Header.Get("Retry-After") != "7" || string(body) != `{"ok":true}` {
		t.Errorf("reply: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	// A POST: net/http would retry an idempotent GET on a dropped connection.
	if _, err := c.Post(s.URL()+"/hangup", "application/json", nil); err == nil {
		t.Error("a hang-up answered")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/slow", nil)
	start := time.Now()
	if _, err := c.Do(req); err == nil {
		t.Error("a slow reply answered")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the client waited %s", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(s.Requests()) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the slow handler records as it starts
	}
	if got := s.Requests(); len(got) != 3 || got[0] != "/a" || got[1] != "/hangup" || got[2] != "/slow" {
		t.Errorf("recorded %v", got)
	}
}
