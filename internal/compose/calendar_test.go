package compose

import (
	"bytes"
	"io"
	"strings"
	"testing"

	message "github.com/emersion/go-message"

	"github.com/mailagent/mailagent/internal/mail"
)

// TestBuildCalendar: with Calendar set, Build writes an iMIP message:
// multipart/alternative, the text, then text/calendar with the method
// parameter, the calendar bytes intact; a method that is not a token is
// refused.
func TestBuildCalendar(t *testing.T) {
	t.Parallel()
	ics := "BEGIN:VCALENDAR\r\nMETHOD:REPLY\r\nSUMMARY:caf\u00e9 = ok\r\nEND:VCALENDAR\r\n"
	r := Reply{From: mail.Address{Email: "ada@example.com"}, To: []mail.Address{{Email: "bob@example.org"}}, Subject: "Invitation",
		Body: "Ada has accepted.", Calendar: []byte(ics), CalendarMethod: "REPLY"}
	raw, _, err := Build(r)
	if err != nil {
		t.Fatal(err)
	}
	e, err := message.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if mt, _, _ := e.Header.ContentType(); mt != "multipart/alternative" {
		t.Fatalf("Content-Type %q", mt)
	}
	mr := e.MultipartReader()
	var types []string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		mt, params, _ := p.Header.ContentType()
		b, _ := io.ReadAll(p.Body)
		types = append(types, mt)
		if mt == "text/calendar" && (params["method"] != "REPLY" || string(b) != ics) {
			t.Errorf("calendar part: method %q, body %q", params["method"], b)
		}
		if mt == "text/plain" && !strings.Contains(string(b), "Ada has accepted.") {
			t.Errorf("text part %q", b)
		}
	}
	if strings.Join(types, ",") != "text/plain,text/calendar" {
		t.Errorf("parts %v", types)
	}
	for _, m := range []string{"REPLY\r\nBcc: x@evil.example", "reply", "", "REPLY;x=y"} {
		r.CalendarMethod = m
		if _, _, err := Build(r); err == nil {
			t.Errorf("method %q accepted", m)
		}
	}
}
