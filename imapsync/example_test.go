package imapsync_test

import (
	"context"
	"fmt"
	"log"

	"github.com/mailagent/mailagent/imapsync"
)

// Fetching every unseen message of INBOX without marking it read.
func ExampleClient_Fetch() {
	ctx := context.Background()
	c, err := imapsync.Dial(ctx, imapsync.Options{
		Host: "imap.example.org", Port: 993, Security: imapsync.SecurityTLS,
		Username: "alice@example.org", Password: "resolved-by-the-caller",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Select(ctx, "INBOX", true); err != nil {
		log.Fatal(err)
	}
	uids, err := c.Search(ctx, imapsync.Criteria{Unseen: true})
	if err != nil {
		log.Fatal(err)
	}
	err = c.Fetch(ctx, uids, imapsync.FetchOptions{}, func(m imapsync.RawMessage) error {
		fmt.Println(m.UID, len(m.Raw), m.Truncated)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}
