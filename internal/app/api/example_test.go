package api_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/store"
)

// The watcher serves its store on the socket; a command started later
// finds it with Open and gets a Client. Events published by the watcher
// reach the client's subscription.
func Example() {
	stateDir, err := os.MkdirTemp("", "ma") // short: unix socket paths are limited
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(stateDir) }()
	openStore := func() (*store.Store, error) {
		return store.Open(filepath.Join(stateDir, "state.db"), store.Options{Timeout: 100 * time.Millisecond})
	}

	// The watcher.
	st, err := openStore()
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	events := &api.Broker{}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- api.Serve(ctx, api.SocketPath(stateDir), &api.Local{DB: st, Broker: events,
			StatusFunc: func(context.Context) api.Status { return api.Status{Watcher: true, PID: os.Getpid()} }}, nil)
	}()

	// A command. Until the socket answers, Open fails: the watcher holds
	// the database lock.
	var svc api.Service
	for {
		var closeFn func() error
		if svc, closeFn, err = api.Open(context.Background(), stateDir, openStore, nil); err == nil {
			defer func() { _ = closeFn() }()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("%T\n", svc)
	status, err := svc.Status(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("watcher:", status.Watcher)

	// The stream's goroutine ends with its context.
	evctx, stopEvents := context.WithCancel(context.Background())
	defer stopEvents()
	ch, err := svc.Events(evctx)
	if err != nil {
		log.Fatal(err)
	}
	events.Publish(agent.Event{Kind: "queue_added", ID: "q_1"})
	e := <-ch
	fmt.Println(e.Kind, e.ID)

	stop()
	fmt.Println("serve:", <-served)
	// Output:
	// *api.Client
	// watcher: true
	// queue_added q_1
	// serve: <nil>
}
