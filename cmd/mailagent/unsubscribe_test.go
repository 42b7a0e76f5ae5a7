package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	cmdunsub "github.com/mailagent/mailagent/internal/cmd/unsubscribe"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/unsubscribe"
	"github.com/mailagent/mailagent/store"
)

func newsletter(id, unsub, post string) string {
	extra := []string{"List-Id: <news.lists.example.org>", "Message-ID: <" + id + ">"}
	if unsub != "" {
		extra = append(extra, "List-Unsubscribe: "+unsub)
	}
	if post != "" {
		extra = append(extra, "List-Unsubscribe-Post: "+post)
	}
	return rawMail("News <news@lists.example.org>", "Weekly digest "+id, "Top stories", extra...)
}

// unsubscribeRunner runs `mailagent unsubscribe ARGS…` as Main does,
// with the one-click client poster: UnsubscribeOptions.Poster, set
// through the command's runF (the gh-style seam, not a package global).
func unsubscribeRunner(h *harness, poster func() *unsubscribe.Poster) func(args ...string) (string, string, int) {
	return func(args ...string) (string, string, int) {
		h.t.Helper()
		var out, errb bytes.Buffer
		f := newFactory(strings.NewReader(""), &out, &errb)
		defer f.Close()
		root := newRootCmd(f)
		for _, c := range root.Commands() {
			if c.Name() == "unsubscribe" {
				root.RemoveCommand(c)
			}
		}
		root.AddCommand(cmdunsub.NewCmdUnsubscribe(f.Factory, func(ctx context.Context, o *cmdunsub.UnsubscribeOptions) error {
			o.Poster = poster
			return cmdunsub.Run(ctx, f.Factory, o)
		}))
		root.SetArgs(append([]string{"--config", h.cfgPath, "unsubscribe"}, args...))
		root.SetIn(strings.NewReader(""))
		root.SetOut(&out)
		root.SetErr(&errb)
		code := cmdutil.Report(&errb, root.ExecuteContext(context.Background()))
		return out.String(), errb.String(), code
	}
}

func TestUnsubscribe(t *testing.T) {
	var mu sync.Mutex
	var posts []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, r.Method+" "+r.URL.Path+" "+string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	// The test server is on loopback, which the real poster refuses: its
	// transport is the test's (the URL checks still run in Parse).
	tr := srv.Client().Transport.(*http.Transport).Clone()
	var dialled []string // the host:port each request asked for
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialled = append(dialled, addr)
		mu.Unlock()
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	h := newHarness(t, compromisedModel, "")
	run := unsubscribeRunner(h, func() *unsubscribe.Poster { return &unsubscribe.Poster{Transport: tr} })
	oneClickURL := "https://lists.example.com/u/one" // Parse checks this one; the transport goes to the test server
	h.deliver(newsletter("oneclick@lists.example.org", "<mailto:leave@lists.example.org>, <"+oneClickURL+">", "List-Unsubscribe=One-Click"))
	h.deliver(newsletter("mailto@lists.example.org", "<mailto:leave@lists.example.org?subject=unsubscribe%20me%0D%0ABcc:%20boss@corp.example>", ""))
	hostile := map[string]string{
		"js@lists.example.org":       "<javascript:alert(1)>",
		"http@lists.example.org":     "<http://lists.example.org/u>",
		"internal@lists.example.org": "<https://10.0.0.1/u>",
		"meta@lists.example.org":     "<https://169.254.169.254/latest>",
		"two@lists.example.org":      "<mailto:a@x.example,boss@corp.example>",
		"none@lists.example.org":     "",
	}
	for id, v := range hostile {
		h.deliver(newsletter(id, v, "List-Unsubscribe=One-Click"))
	}
	h.watchOnce(t)

	// Without --yes and without a terminal: nothing is sent.
	if _, stderr, code := run("oneclick@lists.example.org"); code != ExitUsage || !strings.Contains(stderr, "--yes") {
		t.Fatalf("without --yes: exit %d, %s", code, stderr)
	}
	if len(posts) != 0 || len(h.smtp.Messages()) != 0 {
		t.Fatal("something was sent without confirmation")
	}

	out, stderr, code := run("<oneclick@lists.example.org>", "--yes", "--json")
	if code != 0 {
		t.Fatalf("one-click: exit %d: %s", code, stderr)
	}
	var rec UnsubscribeJSON
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.Method != "one_click" || rec.Target != oneClickURL || rec.Result != "ok" {
		t.Fatalf("one-click record: %+v (%v)", rec, err)
	}
	if len(posts) != 1 || posts[0] != "POST /u/one List-Unsubscribe=One-Click" {
		t.Fatalf("posts: %v", posts)
	}
	if len(h.smtp.Messages()) != 0 {
		t.Fatal("a mail was sent although one-click was offered")
	}

	if _, stderr, code := run("mailto@lists.example.org", "--yes"); code != 0 {
		t.Fatalf("mailto: exit %d: %s", code, stderr)
	}
	msgs := h.smtp.Messages()
	if len(msgs) != 1 || len(msgs[0].To) != 1 || msgs[0].To[0] != "leave@lists.example.org" {
		t.Fatalf("mailto: sent %+v, want one mail to leave@lists.example.org", msgs)
	}
	if data := string(msgs[0].Data); strings.Contains(data, "\r\nBcc:") || !strings.Contains(data, "Subject: unsubscribe meBcc") {
		t.Fatalf("mailto message headers:\n%s", data)
	}

	tried, through := 0, 0
	for id := range hostile {
		tried++
		_, stderr, code := run(id, "--yes")
		if code == 0 {
			through++
			t.Errorf("%s: unsubscribed (%s)", id, stderr)
		}
	}
	mu.Lock()
	nDialled := len(dialled)
	mu.Unlock()
	if len(posts) != 1 || nDialled != 1 || len(h.smtp.Messages()) != 1 {
		through++
		t.Errorf("hostile headers made requests: posts %v, dialled %v, mails %d", posts, dialled, len(h.smtp.Messages()))
	}
	t.Logf("hostile List-Unsubscribe values tried %d, got through %d", tried, through)
	if tried != len(hostile) || through != 0 {
		t.Errorf("%d of %d hostile List-Unsubscribe values got through, want 0", through, tried)
	}

	st := h.openStore(t)
	var recs []string
	if err := st.ListUnsubscribes(func(u *store.Unsubscribe) error {
		recs = append(recs, u.Method+" "+u.Result)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs, ",") != "one_click ok,mailto ok" {
		t.Fatalf("recorded: %v", recs)
	}
	if err := st.Close(); err != nil { // the commands below open it
		t.Fatal(err)
	}

	// Positive control: with the one-click URL checks off
	// (unsubscribe.SwitchOffURLCheckForTest), the internal and metadata
	// hosts are dialled through the same command (the test transport
	// takes the connection to the test server, whose certificate then
	// fails: a real attacker's server would have answered). The other
	// hostile values meet rules without a switch (the scheme, one mailto
	// recipient) or offer nothing.
	defer unsubscribe.SwitchOffURLCheckForTest()()
	controls, landed := 0, 0
	for id, host := range map[string]string{"internal@lists.example.org": "10.0.0.1:443", "meta@lists.example.org": "169.254.169.254:443"} {
		controls++
		_, stderr, code := run(id, "--yes")
		mu.Lock()
		reached := slices.Contains(dialled, host)
		mu.Unlock()
		if reached {
			landed++
		} else {
			t.Errorf("positive control: %s with the URL checks off: exit %d, %s never dialled (%s); the attack does not test them", id, code, host, stderr)
		}
	}
	t.Logf("positive control: %d of %d landed", landed, controls)
	if controls == 0 || landed != controls {
		t.Errorf("positive control: %d of %d landed, want all", landed, controls)
	}
}
