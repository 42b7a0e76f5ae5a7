package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
)

// TestStreamNDJSONWire pins the bytes streamNDJSON writes: one line per
// item, then {"done":true}, or {"error":…} when the walk fails, and no end
// line at all when the client went away.
func TestStreamNDJSONWire(t *testing.T) {
	t.Parallel()
	in1 := mail.ThreadInput{MessageID: "a@x", Subject: "hi\n{\"done\":true}", Date: testNow}
	in2 := mail.ThreadInput{MessageID: "b@x", References: []string{"a@x"}}
	itemLine := func(in mail.ThreadInput) string {
		b, err := json.Marshal(threadInputLine{Input: &in})
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	run := func(ctx context.Context, walkErr error) (*httptest.ResponseRecorder, int) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/store/thread-inputs", nil).WithContext(ctx)
		emitted := 0
		streamNDJSON(w, r, func(emit func(threadInputLine) error) error {
			for _, in := range []mail.ThreadInput{in1, in2} {
				if err := emit(threadInputLine{Input: &in}); err != nil {
					return err
				}
				emitted++
			}
			return walkErr
		})
		return w, emitted
	}

	t.Run("done", func(t *testing.T) {
		w, _ := run(context.Background(), nil)
		if ct := w.Header().Get("Content-Type"); ct != "application/x-ndjson" {
			t.Errorf("Content-Type %q", ct)
		}
		if want := itemLine(in1) + itemLine(in2) + "{\"done\":true}\n"; w.Body.String() != want {
			t.Errorf("body\n%s\nwant\n%s", w.Body, want)
		}
	})
	t.Run("error", func(t *testing.T) {
		w, _ := run(context.Background(), errors.New("disk on fire"))
		lines := strings.SplitAfter(w.Body.String(), "\n")
		if len(lines) != 4 || lines[3] != "" {
			t.Fatalf("want 2 items and an error line, got %q", w.Body)
		}
		var last threadInputLine
		if err := json.Unmarshal([]byte(lines[2]), &last); err != nil {
			t.Fatal(err)
		}
		if last.Error == nil || last.Error.Message != "disk on fire" || last.Done || last.Input != nil {
			t.Errorf("last line %q, want only the walk's error", lines[2])
		}
	})
	t.Run("client gone", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		w, emitted := run(ctx, nil)
		if emitted != 0 {
			t.Errorf("the walk went on for %d items after the client left", emitted)
		}
		if body := w.Body.String(); body != itemLine(in1) {
			t.Errorf("body %q, want the one item written before the walk saw the client leave, and no end line", body)
		}
	})
}

// TestReadNDJSON feeds readNDJSON streams a watcher could send, whole, cut
// and hostile, and checks what reaches fn and what is returned.
func TestReadNDJSON(t *testing.T) {
	t.Parallel()
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c := &Client{path: "test", hc: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
		},
	}}}
	errCut := errors.New("cut")
	errStop := errors.New("stop")
	for _, tc := range []struct {
		name   string
		body   string
		stopAt string // fn fails on this message ID
		want   []string
		check  func(error) bool
	}{
		{"whole", `{"input":{"MessageID":"a"}}` + "\n" + `{"input":{"MessageID":"b"}}` + "\n" + `{"done":true}` + "\n",
			"", []string{"a", "b"}, func(err error) bool { return err == nil }},
		{"error line", `{"input":{"MessageID":"a"}}` + "\n" + `{"error":{"code":"internal","message":"boom"}}` + "\n" +
			`{"input":{"MessageID":"after"}}` + "\n",
			"", []string{"a"}, func(err error) bool {
				var e *Error
				return errors.As(err, &e) && e.Message == "boom"
			}},
		{"cut short", `{"input":{"MessageID":"a"}}` + "\n",
			"", []string{"a"}, func(err error) bool { return errors.Is(err, errCut) && errors.Is(err, io.ErrUnexpectedEOF) }},
		{"empty", "", "", nil, func(err error) bool { return errors.Is(err, errCut) && errors.Is(err, io.ErrUnexpectedEOF) }},
		{"garbage", `{"input":{"MessageID":"a"}}` + "\nnot json\n" + `{"done":true}` + "\n",
			"", []string{"a"}, func(err error) bool { return errors.Is(err, errCut) && !errors.Is(err, io.ErrUnexpectedEOF) }},
		{"fn stops", `{"input":{"MessageID":"a"}}` + "\n" + `{"input":{"MessageID":"b"}}` + "\n" + `{"done":true}` + "\n",
			"a", []string{"a"}, func(err error) bool { return errors.Is(err, errStop) && !errors.Is(err, errCut) }},
		{"line without item or end", `{}` + "\n" + `{"input":{"MessageID":"a"}}` + "\n" + `{"done":true}` + "\n",
			"", []string{"a"}, func(err error) bool { return err == nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body = tc.body
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			var got []string
			err := readNDJSON[mail.ThreadInput, threadInputLine](ctx, c, "/v1/store/thread-inputs", threadInputsReq{Limit: 1},
				func(in mail.ThreadInput) error {
					got = append(got, in.MessageID)
					if in.MessageID == tc.stopAt {
						return errStop
					}
					return nil
				}, func(err error) error { return errors.Join(errCut, err) })
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("fn saw %v, want %v", got, tc.want)
			}
			if !tc.check(err) {
				t.Errorf("returned %v", err)
			}
		})
	}
}
