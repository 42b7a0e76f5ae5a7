package replay

import "github.com/mailagent/mailagent/internal/config"

// ScoreRun scores the results under the runner's policy and prices them
// at cfg's classify model's list price: every message is classified, and
// drafts (with a Drafter) are the smaller share.
func (r *Runner) ScoreRun(results []*Result, cfg *config.Config) Summary {
	pol := r.Pipeline.Policy
	sum := NewSummary(Score(results, pol), cfg.LLM.ForTask(config.TaskClassify).Model)
	sum.MinConfidence, sum.WithDrafts = pol.MinConfidence, r.Drafter != nil
	return sum
}
