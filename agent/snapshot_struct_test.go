package agent

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// TestSnapshotStructsRenderLikeMaps: the structs the hot steps' snapshots
// are made of list their fields in the order of their JSON names, so they
// render byte for byte as the maps they replaced (encoding/json sorts map
// keys), and a filled one renders as the same values in a map would.
func TestSnapshotStructsRenderLikeMaps(t *testing.T) {
	t.Parallel()
	for _, v := range []any{parseOut{}, authIn{}, routeIn{}, decideIn{}, decisionOut{}, threadIn{}, threadOut{}} {
		typ := reflect.TypeOf(v)
		var names []string
		for f := range typ.Fields() {
			names = append(names, strings.Split(f.Tag.Get("json"), ",")[0])
		}
		if !slices.IsSorted(names) {
			t.Errorf("%s: JSON names %v are not in order: it would render unlike the map it replaced", typ.Name(), names)
		}
	}
	m := mail.Parse([]byte("From: Ada <ada@example.test>\r\nTo: bob@example.test\r\nSubject: hi\r\nMessage-ID: <m1@x>\r\n" +
		"Date: Fri, 27 Nov 2026 10:00:00 +0000\r\nList-Id: <l.example.test>\r\n\r\nhello\r\n"))
	asMap := func(v any) string {
		b, _ := json.Marshal(v)
		var mm map[string]any
		if err := json.Unmarshal(b, &mm); err != nil {
			t.Fatal(err)
		}
		text, _ := snapText(mm)
		return text
	}
	for name, v := range map[string]any{
		"parse": parseSummary(m), "route": routeInputs(m, false),
		"decide": decisionSnapshot(&store.MessageRecord{Decision: "archive", Reasons: []string{"r"}, Gates: []store.GateResult{{Gate: "g", Pass: true}}}),
		"auth":   authIn{From: "ada@example.test", AuthservID: "mx", AuthenticationResults: []string{"mx; dmarc=pass"}},
		"thread": threadOut{ThreadID: "t1", Why: "w", MessagesInThread: 2, OtherMessageIDs: []string{"<a@x>"}},
	} {
		if got, want := firstOf(snapText(v)), asMap(v); got != want {
			t.Errorf("%s renders\n%s\nwant (as a map)\n%s", name, got, want)
		}
	}
}

func firstOf(s string, _ bool) string { return s }
