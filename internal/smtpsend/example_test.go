package smtpsend_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/mailagent/mailagent/internal/smtpsend"
)

func Example() {
	s, err := smtpsend.New(smtpsend.Options{
		Host:     "smtp.example.com",
		Security: smtpsend.SecurityStartTLS,
		Username: "ada@example.com",
		Password: "from the keyring, never a literal",
		Timeout:  30 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	raw := []byte("From: ada@example.com\r\nTo: bob@example.net\r\nSubject: hi\r\n\r\nhello\r\n")
	err = s.Send(context.Background(), "ada@example.com", []string{"bob@example.net"}, raw)
	var se *smtpsend.SendError
	switch {
	case errors.Is(err, smtpsend.ErrAuth):
		log.Print("fix the credentials; retrying will not help")
	case errors.As(err, &se) && se.Temporary:
		log.Print("retry later")
	case err != nil:
		log.Print("give up: ", err)
	}
}
