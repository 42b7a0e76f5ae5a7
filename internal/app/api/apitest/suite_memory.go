package apitest

import (
	"fmt"
	"strings"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/store"
)

// caseMemory: records are added (always as "manual"), listed by contact,
// shown, edited and forgotten one by one; bad records are bad requests.
func caseMemory(r *run) {
	w := r.w
	rec, err := r.svc.AddMemory(r.ctx, store.MemoryRecord{Account: Account, Kind: store.MemoryPreference, Contact: "Carol@Example.org",
		Text: "answer in German", Source: "mail:forged@example.org"})
	r.check("add", err, nil)
	if rec == nil || rec.Source != store.SourceManual || rec.Contact != "carol@example.org" {
		r.t.Fatalf("add: got %+v, want a manual record about carol@example.org", rec)
	}
	_, err = r.svc.AddMemory(r.ctx, store.MemoryRecord{Account: Account, Kind: store.MemoryStyle, Text: "Signs off with 'Best, Ada'"})
	r.check("add style", err, nil)
	_, err = r.svc.AddMemory(r.ctx, store.MemoryRecord{Account: Account, Kind: "secret", Text: "x"})
	r.check("add bad kind", err, api.ErrBadRequest)
	_, err = r.svc.AddMemory(r.ctx, store.MemoryRecord{Account: Account, Kind: store.MemoryTemporary, Text: "away"})
	r.check("add temporary without expiry", err, api.ErrBadRequest)

	all, err := r.svc.Memory(r.ctx, api.MemoryFilter{Account: Account})
	r.check("list", err, nil)
	mine, err := r.svc.Memory(r.ctx, api.MemoryFilter{Account: Account, Contact: "CAROL@example.org"})
	r.check("list by contact", err, nil)
	var kinds []string
	for _, m := range all {
		kinds = append(kinds, m.Kind+":"+m.Contact)
	}
	r.state("memory", strings.Join(kinds, ", "))
	if len(all) != 2 || len(mine) != 1 || mine[0].ID != rec.ID {
		r.t.Errorf("list: got %d records, %d for Carol; want 2 and 1", len(all), len(mine))
	}
	got, err := r.svc.MemoryRecord(r.ctx, rec.ID)
	r.check("show", err, nil)
	sameJSON(r.t, "show", got, rec)
	_, err = r.svc.MemoryRecord(r.ctx, "mem_unknown")
	r.check("show unknown", err, store.ErrNotFound)
	_, err = r.svc.MemoryRecord(r.ctx, "")
	r.check("show empty id", err, api.ErrBadRequest)
	ed, err := r.svc.EditMemory(r.ctx, rec.ID, "answer in German, formally")
	r.check("edit", err, nil)
	if ed == nil || ed.Text != "answer in German, formally" || ed.Source != store.SourceManual {
		r.t.Errorf("edit: got %+v", ed)
	}
	_, err = r.svc.EditMemory(r.ctx, rec.ID, " ")
	r.check("edit to empty", err, api.ErrBadRequest)
	r.check("forget", r.svc.ForgetMemory(r.ctx, rec.ID), nil)
	if _, err := w.Store.GetMemory(rec.ID); err == nil {
		r.t.Error("forget: the record is still stored")
	}
	r.check("forget again", r.svc.ForgetMemory(r.ctx, rec.ID), store.ErrNotFound)
	r.state("after forget", fmt.Sprint(len(mustList(r))))

	// Examples (the owner's Sent replies, approved drafts) are listed,
	// shown, edited and forgotten as records of kind "example".
	if err := w.Store.AddExample(&store.Example{Account: Account, Kind: store.ExampleOwnerReply, Contact: "carol@example.org",
		Text: "Tuesday works, Carol.", Source: "<sent-1@example.org>"}); err != nil {
		r.t.Fatal(err)
	}
	exs, err := r.svc.Memory(r.ctx, api.MemoryFilter{Account: Account, Kind: store.MemoryExample})
	r.check("list examples", err, nil)
	if len(exs) != 1 || exs[0].Kind != store.MemoryExample || exs[0].Contact != "carol@example.org" || exs[0].Source != store.SourceSent+"<sent-1@example.org>" {
		r.t.Fatalf("list examples: got %+v", exs)
	}
	if carol, _ := r.svc.Memory(r.ctx, api.MemoryFilter{Account: Account, Contact: "carol@example.org"}); len(carol) != 1 || carol[0].ID != exs[0].ID {
		r.t.Errorf("carol's memory: got %+v, want her example", carol)
	}
	ex, err := r.svc.MemoryRecord(r.ctx, exs[0].ID)
	r.check("show example", err, nil)
	sameJSON(r.t, "show example", ex, &exs[0])
	ed, err = r.svc.EditMemory(r.ctx, exs[0].ID, "Tuesday works.")
	r.check("edit example", err, nil)
	if ed == nil || ed.Text != "Tuesday works." || ed.Kind != store.MemoryExample {
		r.t.Errorf("edit example: got %+v", ed)
	}
	r.check("forget example", r.svc.ForgetMemory(r.ctx, exs[0].ID), nil)
	if left, _ := w.Store.ListExamples(Account); len(left) != 0 {
		r.t.Errorf("forget example: %d examples still stored", len(left))
	}
	r.check("forget example again", r.svc.ForgetMemory(r.ctx, exs[0].ID), store.ErrNotFound)
}

func mustList(r *run) []store.MemoryRecord {
	l, _ := r.svc.Memory(r.ctx, api.MemoryFilter{Account: Account})
	return l
}
