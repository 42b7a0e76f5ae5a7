package api_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/api/apitest"
)

// TestContactNamesSocketAndStore: through the watcher's socket and on the
// store directly, ContactNames gives the same page, and a limit outside
// 0..MaxContactNames is a bad request on both paths.
func TestContactNamesSocketAndStore(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	ctx := context.Background()
	for _, email := range []string{"dan@example.org", "dana@example.org", "eve@example.org"} {
		if _, err := w.Store.UpdateContact(apitest.Account, email, nil); err != nil {
			t.Fatal(err)
		}
	}
	local := &api.Local{DB: w.Store}
	client := w.Serve(t)
	for name, svc := range map[string]api.Service{"local": local, "socket": client} {
		got, err := svc.ContactNames(ctx, apitest.Account, "DAN", 10)
		if err != nil || len(got) != 2 || got[0].Email != "dan@example.org" || got[1].Email != "dana@example.org" {
			t.Errorf("%s: ContactNames(DAN) = %+v, %v", name, got, err)
		}
		if got, err := svc.ContactNames(ctx, apitest.Account, "da", 1); err != nil || len(got) != 1 {
			t.Errorf("%s: limit 1 gave %+v, %v", name, got, err)
		}
		for _, limit := range []int{-1, api.MaxContactNames + 1} {
			if _, err := svc.ContactNames(ctx, apitest.Account, "", limit); !errors.Is(err, api.ErrBadRequest) {
				t.Errorf("%s: limit %d: %v, want ErrBadRequest", name, limit, err)
			}
		}
	}
}
