package api

import (
	"context"
	"errors"
	"testing"
)

// TestContactNamesSocketAndStore: through the watcher's socket and on the
// store directly, ContactNames gives the same page, and a limit outside
// 0..MaxContactNames is a bad request on both paths. The store holds the
// contacts a watcher's first sync of apitest's World leaves (bob, carol,
// dave, erin: dave sorts right after the names asked for), and three more.
func TestContactNamesSocketAndStore(t *testing.T) {
	t.Parallel()
	const account = "personal"
	st := openStore(t)
	ctx := context.Background()
	for _, email := range []string{"bob@example.net", "carol@example.org", "dave@example.org", "erin@example.org",
		"dan@example.org", "dana@example.org", "eve@example.org"} {
		if _, err := st.UpdateContact(account, email, nil); err != nil {
			t.Fatal(err)
		}
	}
	local := &Local{DB: st}
	client := dial(t, startServer(t, local).path)
	for name, svc := range map[string]Service{"local": local, "socket": client} {
		got, err := svc.ContactNames(ctx, account, "DAN", 10)
		if err != nil || len(got) != 2 || got[0].Email != "dan@example.org" || got[1].Email != "dana@example.org" {
			t.Errorf("%s: ContactNames(DAN) = %+v, %v", name, got, err)
		}
		if got, err := svc.ContactNames(ctx, account, "da", 1); err != nil || len(got) != 1 {
			t.Errorf("%s: limit 1 gave %+v, %v", name, got, err)
		}
		for _, limit := range []int{-1, MaxContactNames + 1} {
			if _, err := svc.ContactNames(ctx, account, "", limit); !errors.Is(err, ErrBadRequest) {
				t.Errorf("%s: limit %d: %v, want ErrBadRequest", name, limit, err)
			}
		}
	}
}
