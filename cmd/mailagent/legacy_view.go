package main

import "github.com/mailagent/mailagent/internal/app/view"

// The JSON output types live in internal/app/view; these are their old
// names for the files still in package main (issue 27's move; see legacy.go).

type (
	AddressJSON         = view.AddressJSON
	MessageKeyJSON      = view.MessageKeyJSON
	MessageJSON         = view.MessageJSON
	TriageJSON          = view.TriageJSON
	OccurrenceJSON      = view.OccurrenceJSON
	SnapshotJSON        = view.SnapshotJSON
	ExplainJSON         = view.ExplainJSON
	AccountStatusJSON   = view.AccountStatusJSON
	StatusJSON          = view.StatusJSON
	CostJSON            = view.CostJSON
	ReplayThresholdJSON = view.ReplayThresholdJSON
	ReplayAutoSendJSON  = view.ReplayAutoSendJSON
	ReplayJSON          = view.ReplayJSON
	DigestJSON          = view.DigestJSON
	MemoryJSON          = view.MemoryJSON
	CheckJSON           = view.CheckJSON
	FollowupJSON        = view.FollowupJSON
	UnsubscribeJSON     = view.UnsubscribeJSON
)

var toInvitationJSON = view.ToInvitationJSON
