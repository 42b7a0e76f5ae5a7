package compose_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/compose"
	"github.com/mailagent/mailagent/internal/mail"
)

func Example() {
	parent := &mail.Message{
		MessageID: "abc@example.com",
		Subject:   "Quick question",
		From:      mail.Address{Name: "Bob", Email: "bob@example.com"},
		ReplyTo:   []mail.Address{{Email: "bob.work@example.com"}},
	}
	r, err := compose.NewReply(parent, mail.Address{Name: "Ada", Email: "ada@example.org"}, []string{"ada@example.org"}, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	r.Body = "Yes, Thursday is fine."
	r.AutoSubmitted = true
	r.Date = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	r.MessageID = "reply-1@example.org"

	raw, id, err := compose.Build(r)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(id)
	fmt.Print(strings.ReplaceAll(string(raw), "\r\n", "\n")) // CRLF on the wire
	// Output:
	// reply-1@example.org
	// From: "Ada" <ada@example.org>
	// To: <bob.work@example.com>
	// Subject: Re: Quick question
	// Date: Thu, 02 Jan 2025 03:04:05 +0000
	// Message-Id: <reply-1@example.org>
	// In-Reply-To: <abc@example.com>
	// References: <abc@example.com>
	// Auto-Submitted: auto-replied
	// Mime-Version: 1.0
	// Content-Type: text/plain; charset=utf-8
	// Content-Transfer-Encoding: quoted-printable
	//
	// Yes, Thursday is fine.
}
