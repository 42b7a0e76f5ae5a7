package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/mailagent/mailagent/store"
)

// ScheduleFilter selects the durable scheduler's jobs; the zero value
// lists those that wait (pending and running) and those that gave up
// (failed).
type ScheduleFilter struct {
	// All adds the jobs that are done.
	All bool `json:"all,omitempty"`
}

// jobOrder ranks states for listing: what waits first, then failures,
// then what is done.
var jobOrder = map[store.JobState]int{store.JobRunning: 0, store.JobPending: 0, store.JobFailed: 1, store.JobDone: 2}

// Schedule implements Service: the scheduler's jobs, the next due first.
// A running job's due time is its lease's end (when another start may
// resume it).
func (l *Local) Schedule(ctx context.Context, f ScheduleFilter) ([]store.Job, error) {
	out := []store.Job{}
	err := l.DB.ListJobs(func(j *store.Job) error {
		if f.All || j.State != store.JobDone {
			out = append(out, *j)
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	due := func(j store.Job) int64 {
		if j.State == store.JobRunning {
			return j.LeaseUntil.UnixNano()
		}
		return j.Due.UnixNano()
	}
	slices.SortStableFunc(out, func(a, b store.Job) int {
		if c := jobOrder[a.State] - jobOrder[b.State]; c != 0 {
			return c
		}
		switch da, db := due(a), due(b); {
		case da < db:
			return -1
		case da > db:
			return 1
		}
		return cmpString(a.ID, b.ID)
	})
	return out, nil
}

// Schedule implements Service.
func (c *Client) Schedule(ctx context.Context, f ScheduleFilter) ([]store.Job, error) {
	out := []store.Job{}
	if err := c.call(ctx, http.MethodPost, "/v1/schedule", nil, f, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (h *handler) scheduleList(w http.ResponseWriter, r *http.Request) {
	var f ScheduleFilter
	if err := decode(w, r, &f); err != nil {
		h.fail(w, err)
		return
	}
	out, err := h.svc.Schedule(r.Context(), f)
	h.reply(w, out, err)
}
