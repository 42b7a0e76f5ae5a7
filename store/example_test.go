package store_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mailagent/mailagent/store"
)

func Example() {
	dir, _ := os.MkdirTemp("", "mailagent")
	defer func() { _ = os.RemoveAll(dir) }()
	s, err := store.Open(filepath.Join(dir, "state.db"), store.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = s.Close() }()

	item := &store.QueueItem{ID: store.NewID(), Kind: store.KindDraft, Status: store.QueuePending, Draft: "Friday works."}
	if err := s.PutQueueItem(item); err != nil {
		fmt.Println(err)
		return
	}
	approve := func() error {
		_, err := s.TransitionQueueItem(item.ID, []string{store.QueuePending}, store.QueueApproved, nil)
		return err
	}
	fmt.Println(approve())
	fmt.Println(errors.Is(approve(), store.ErrConflict)) // approving twice sends once
	// Output:
	// <nil>
	// true
}
