package compose

import (
	"fmt"
	"io"
	"regexp"
	"sync"

	message "github.com/emersion/go-message"
	gomail "github.com/emersion/go-message/mail"
)

// iTIP method names are tokens (RFC 5545 §3.7.2 iana-token).
var methodRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z][A-Z-]{0,19}$`) })

// writeCalendar writes an iMIP body (RFC 6047 §2.4): the text, then the
// calendar object as text/calendar with the method parameter, in one
// multipart/alternative.
func writeCalendar(w io.Writer, h gomail.Header, text string, ics []byte, method string) error {
	if !methodRE().MatchString(method) {
		return fmt.Errorf("build reply: calendar method %q is not a token", oneLine(method))
	}
	mw, err := message.CreateWriter(w, h.Header)
	if err != nil {
		return fmt.Errorf("build reply: write header: %w", err)
	}
	var th message.Header
	th.SetContentType("text/plain", map[string]string{"charset": "utf-8"})
	th.Set("Content-Transfer-Encoding", "quoted-printable")
	var ch message.Header
	ch.SetContentType("text/calendar", map[string]string{"charset": "utf-8", "method": method})
	ch.Set("Content-Transfer-Encoding", "quoted-printable")
	for _, p := range []struct {
		h    message.Header
		body []byte
	}{{th, []byte(text)}, {ch, ics}} {
		pw, err := mw.CreatePart(p.h)
		if err != nil {
			return fmt.Errorf("build reply: write part: %w", err)
		}
		if _, err := pw.Write(p.body); err != nil {
			return fmt.Errorf("build reply: write part: %w", err)
		}
		if err := pw.Close(); err != nil {
			return fmt.Errorf("build reply: write part: %w", err)
		}
	}
	if err := mw.Close(); err != nil {
		return fmt.Errorf("build reply: write body: %w", err)
	}
	return nil
}
