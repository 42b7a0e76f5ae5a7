package explain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// explainSubject is what a followup id (fu_…) or a memory id (mem_…)
// stands for in `explain`: lines that describe the record, printed before
// the explanation, and the reference of the message that explains it
// (ref, "" when there is none, with none saying why).
type explainSubject struct {
	header []string // terminal-safe
	ref    string
	none   string
}

// resolveExplainRef turns a followup or memory id into the message to
// explain: a followup is explained by the message that set its state,
// a memory record by the mail or the queue item (edit, rejection) it was
// learned from. Any other ref is returned as it is, with a nil subject.
func resolveExplainRef(ctx context.Context, svc api.Service, ref string, now time.Time) (*explainSubject, error) {
	switch {
	case strings.HasPrefix(ref, "fu_"):
		return explainFollowup(ctx, svc, ref, now)
	case strings.HasPrefix(ref, "mem_"):
		return explainMemory(ctx, svc, ref)
	}
	return nil, nil
}

func explainFollowup(ctx context.Context, svc api.Service, id string, now time.Time) (*explainSubject, error) {
	fs, err := svc.Followups(ctx, api.FollowupFilter{States: []string{store.FollowupNeedsReply, store.FollowupAwaitingReply,
		store.FollowupDone, store.FollowupGaveUp}})
	if err != nil {
		return nil, fmt.Errorf("explain %q: %w", termsafe.Line(id), err)
	}
	var fu *store.Followup
	for i := range fs {
		if fs[i].ID == id {
			fu = &fs[i]
			break
		}
	}
	if fu == nil {
		return nil, &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("no followup %q", termsafe.Line(id)),
			Hint: "`mailagent followups --state all` shows the followup ids"}
	}
	line := termsafe.Line
	deadline := "none"
	if !fu.Deadline.IsZero() {
		deadline = fu.Deadline.Local().Format("Mon 2 Jan 2006 15:04")
		if fu.DeadlineSource != "" {
			deadline += " (" + line(fu.DeadlineSource) + ")"
		}
		if fu.Deadline.Before(now) && (fu.State == store.FollowupNeedsReply || fu.State == store.FollowupAwaitingReply) {
			deadline += ", overdue"
		}
	}
	s := &explainSubject{ref: fu.MessageID, header: []string{
		fmt.Sprintf("followup %s  state %s, deadline %s, nudges %d", line(fu.ID), line(fu.State), deadline, fu.Nudges),
		fmt.Sprintf("  with %s; subject %s", line(strings.Join(fu.Correspondents, ", ")), line(fu.Subject)),
	}}
	if fu.Reason != "" {
		s.header = append(s.header, "  why: "+line(fu.Reason))
	}
	if s.ref == "" {
		s.none = "the followup names no message"
	} else {
		s.header = append(s.header, "  set by <"+line(strings.Trim(fu.MessageID, "<>"))+">:")
	}
	return s, nil
}

func explainMemory(ctx context.Context, svc api.Service, id string) (*explainSubject, error) {
	r, err := svc.MemoryRecord(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("no memory record %q", termsafe.Line(id)),
			Hint: "`mailagent memory list` shows the memory ids (a forgotten record is gone)"}
	}
	if err != nil {
		return nil, fmt.Errorf("explain %q: %w", termsafe.Line(id), err)
	}
	line := termsafe.Line
	about := "everyone"
	if r.Contact != "" {
		about = line(r.Contact)
	}
	s := &explainSubject{header: []string{
		fmt.Sprintf("memory %s  %s about %s, account %s, source %s, created %s", line(r.ID), line(r.Kind), about,
			line(r.Account), line(r.Source), r.Created.Local().Format("Mon 2 Jan 2006 15:04")),
		"  text: " + line(r.Text),
	}}
	switch {
	case strings.HasPrefix(r.Source, store.SourceMail):
		s.ref = strings.Trim(strings.TrimPrefix(r.Source, store.SourceMail), "<> ")
		s.header = append(s.header, "  learned from the mail <"+line(s.ref)+">:")
	case strings.HasPrefix(r.Source, store.SourceEdit):
		s.ref = strings.TrimPrefix(r.Source, store.SourceEdit)
		s.header = append(s.header, "  learned from the owner's edit of "+line(s.ref)+":")
	case strings.HasPrefix(r.Source, store.SourceReject):
		s.ref = strings.TrimPrefix(r.Source, store.SourceReject)
		s.header = append(s.header, "  learned from the owner's rejection of "+line(s.ref)+":")
	case r.Source == store.SourceManual:
		s.none = "it was typed with `mailagent memory add`, not learned from a message"
	case strings.HasPrefix(r.Source, store.SourceDistilled):
		s.none = "it was distilled from the owner's edits, not from one message"
	default:
		s.none = "its source names no message"
	}
	if s.ref == "" && s.none == "" {
		s.none = "its source names no message"
	}
	return s, nil
}
