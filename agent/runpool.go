package agent

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// RunPool is the fetch→worker pipeline shared by triage and watch: fetch
// runs on one goroutine and hands items to send, which feeds concurrency
// workers (at least 1) that each call work. The first error from fetch or
// work cancels the context given to the others and is returned once every
// goroutine has ended; send then returns the context's error, so fetch
// stops too. A worker that wants to go on after a failed item records the
// failure itself and returns nil.
func RunPool[T any](ctx context.Context, concurrency int,
	fetch func(ctx context.Context, send func(T) error) error,
	work func(ctx context.Context, item T) error) error {
	concurrency = max(concurrency, 1)
	jobs := make(chan T, concurrency)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(jobs)
		return fetch(gctx, func(item T) error {
			select {
			case jobs <- item:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
	})
	for range concurrency {
		g.Go(func() error {
			for item := range jobs {
				if err := work(gctx, item); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}
