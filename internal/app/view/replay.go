package view

import "github.com/mailagent/mailagent/internal/app/replay"

func optRatio(r float64) *float64 {
	if r < 0 {
		return nil
	}
	return &r
}

// ToReplayJSON is the report of `replay --json`.
func ToReplayJSON(s replay.Summary) ReplayJSON {
	var j ReplayJSON
	j.Messages, j.Incoming, j.NeedsReview = s.Messages, s.Incoming, s.NeedsReview
	j.Decisions = map[string]int{}
	for k, v := range s.Decisions {
		j.Decisions[k] = v
	}
	j.Owner.Replied, j.Owner.Flagged, j.Owner.Unread, j.Owner.Deleted, j.Owner.Archived = s.Replied, s.Flagged, s.Unread, s.Deleted, s.Archived
	if s.Replied > 0 {
		v := s.MedianLatency.Seconds()
		j.Owner.MedianReplySeconds = &v
	}
	nr := s.NeedsReply
	j.NeedsReply.TruePositive, j.NeedsReply.FalsePositive, j.NeedsReply.FalseNegative, j.NeedsReply.TrueNegative = nr.TP, nr.FP, nr.FN, nr.TN
	j.NeedsReply.Precision, j.NeedsReply.Recall = optRatio(nr.Precision), optRatio(nr.Recall)
	a := s.Auto
	j.AutoSends.MinConfidence, j.AutoSends.Total, j.AutoSends.OwnerAlsoAnswered, j.AutoSends.NeverAnswered = s.MinConfidence, a.Total, a.AlsoAnswered, a.NeverAnswered
	j.AutoSends.Unwanted = a.NeverAnswered
	j.AutoSends.CapLimited, j.AutoSends.MaxPerContactPerDay, j.AutoSends.MaxPerDay = a.CapLimited, s.MaxPerContactPerDay, s.MaxPerDay
	if a.Compared {
		n := a.AnsweredDifferently
		j.AutoSends.AnsweredVeryDifferently = &n
	}
	d := s.Report.Drafts
	j.Drafts.Enabled, j.Drafts.Compared, j.Drafts.Measure, j.Drafts.VeryDifferentBelow = s.WithDrafts, d.Compared, d.Measure, replay.VeryDifferent
	if d.Compared > 0 {
		mean, med := d.Mean, d.Median
		j.Drafts.MeanSimilarity, j.Drafts.MedianSimilarity = &mean, &med
	}
	j.Thresholds = make([]ReplayThresholdJSON, len(s.Thresholds))
	for i, r := range s.Thresholds {
		j.Thresholds[i] = ReplayThresholdJSON{MinConfidence: r.MinConfidence, AutoSends: r.AutoSends, Unwanted: r.Unwanted, CapLimited: r.CapLimited}
	}
	j.Unwanted = toAutoSendsJSON(s.Unwanted)
	if a.Compared {
		j.VeryDifferent = toAutoSendsJSON(s.VeryDifferent)
	}
	j.Cost = ToCostJSON(int64(s.Calls), s.TokensIn, s.TokensOut, s.Model, s.USD, s.PriceKnown)
	j.ElapsedSeconds, j.TotalElapsedSeconds = s.Elapsed.Seconds(), s.TotalElapsed.Seconds()
	return j
}

// toAutoSendsJSON lists auto-sends for replay --json (never null).
func toAutoSendsJSON(items []replay.AutoSent) []ReplayAutoSendJSON {
	out := make([]ReplayAutoSendJSON, 0, len(items))
	for _, u := range items {
		uj := ReplayAutoSendJSON{Message: ToKeyJSON(u.Key), From: u.From, Subject: u.Subject, Date: u.Date, Confidence: u.Confidence}
		if u.Similarity >= 0 {
			sim := u.Similarity
			uj.Similarity = &sim
		}
		out = append(out, uj)
	}
	return out
}
