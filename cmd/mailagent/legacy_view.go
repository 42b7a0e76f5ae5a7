package main

import "github.com/mailagent/mailagent/internal/app/view"

// The JSON output types live in internal/app/view; these are their old
// names for the files still in package main (issue 27's move; see legacy.go).

type (
	AddressJSON         = view.AddressJSON
	MessageKeyJSON      = view.MessageKeyJSON
	GateJSON            = view.GateJSON
	ClassificationJSON  = view.ClassificationJSON
	SenderAuthJSON      = view.SenderAuthJSON
	MessageJSON         = view.MessageJSON
	TriageJSON          = view.TriageJSON
	QueueItemJSON       = view.QueueItemJSON
	InvitationJSON      = view.InvitationJSON
	OccurrenceJSON      = view.OccurrenceJSON
	OutboxJSON          = view.OutboxJSON
	DecisionJSON        = view.DecisionJSON
	QueueShowJSON       = view.QueueShowJSON
	StepJSON            = view.StepJSON
	SnapshotJSON        = view.SnapshotJSON
	TraceJSON           = view.TraceJSON
	ExplainJSON         = view.ExplainJSON
	AccountStatusJSON   = view.AccountStatusJSON
	UsageJSON           = view.UsageJSON
	StatusJSON          = view.StatusJSON
	HistoryJSON         = view.HistoryJSON
	ContactJSON         = view.ContactJSON
	CostJSON            = view.CostJSON
	ReplayThresholdJSON = view.ReplayThresholdJSON
	ReplayAutoSendJSON  = view.ReplayAutoSendJSON
	ReplayJSON          = view.ReplayJSON
	DigestSendJSON      = view.DigestSendJSON
	DigestWaitingJSON   = view.DigestWaitingJSON
	DigestReviewJSON    = view.DigestReviewJSON
	DigestDueJSON       = view.DigestDueJSON
	DigestJSON          = view.DigestJSON
	MemoryJSON          = view.MemoryJSON
	CheckJSON           = view.CheckJSON
	ScheduleJobJSON     = view.ScheduleJobJSON
	FollowupJSON        = view.FollowupJSON
	UnsubscribeJSON     = view.UnsubscribeJSON
	FreeSlotJSON        = view.FreeSlotJSON
)

var (
	toUsageJSON          = view.ToUsageJSON
	toMemoryJSON         = view.ToMemoryJSON
	toMemoryJSONs        = view.ToMemoryJSONs
	toScheduleJobJSON    = view.ToScheduleJobJSON
	toFollowupJSON       = view.ToFollowupJSON
	toFollowupsJSON      = view.ToFollowupsJSON
	optStr               = view.OptStr
	optTime              = view.OptTime
	strs                 = view.Strs
	toAddressJSON        = view.ToAddressJSON
	emailsJSON           = view.EmailsJSON
	toAddressesJSON      = view.ToAddressesJSON
	toKeyJSON            = view.ToKeyJSON
	toGatesJSON          = view.ToGatesJSON
	toClassificationJSON = view.ToClassificationJSON
	toMessageJSON        = view.ToMessageJSON
	toQueueItemJSON      = view.ToQueueItemJSON
	toInvitationJSON     = view.ToInvitationJSON
	toQueueItemsJSON     = view.ToQueueItemsJSON
	toQueueShowJSON      = view.ToQueueShowJSON
	toOutboxJSON         = view.ToOutboxJSON
	toExplainJSON        = view.ToExplainJSON
	toStatusJSON         = view.ToStatusJSON
	toContactJSON        = view.ToContactJSON
	toContactsJSON       = view.ToContactsJSON
	toFreeSlotJSON       = view.ToFreeSlotJSON
	toSnapshotJSON       = view.ToSnapshotJSON
	optRFC3339           = view.OptRFC3339
)
