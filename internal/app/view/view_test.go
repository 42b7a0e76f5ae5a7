package view

import (
	"testing"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/store"
)

// TestToDecisionJSONCarriesTheReplyOnlyOfAnAutoSend: a reply is shown
// only for a message the agent answered on its own.
func TestToDecisionJSONCarriesTheReplyOnlyOfAnAutoSend(t *testing.T) {
	t.Parallel()
	reply := &store.OutboxRecord{ID: "ob1", Status: store.OutboxSent}
	auto := &store.MessageRecord{Decision: agent.DecisionAutoSend}
	if j := ToDecisionJSON(auto, reply); j.Reply == nil {
		t.Fatal("auto_send: no reply in the JSON")
	}
	for _, d := range []string{agent.DecisionQueue, agent.DecisionArchive, ""} {
		if j := ToDecisionJSON(&store.MessageRecord{Decision: d}, reply); j.Reply != nil {
			t.Errorf("decision %q: reply %+v, want none", d, j.Reply)
		}
	}
}
