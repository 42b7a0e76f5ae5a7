package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/api/apitest"
	"github.com/mailagent/mailagent/internal/app/mcpserver"
	"github.com/mailagent/mailagent/store"
)

// mode is how the server reaches the World: through the watcher's socket,
// or over the store with no actions (what `mailagent mcp` gets from a
// read-only store when no watcher runs).
type mode struct {
	name string
	open func(t *testing.T, w *apitest.World) func(context.Context) (api.Service, func() error, error)
}

var modes = []mode{
	{"socket", func(t *testing.T, w *apitest.World) func(context.Context) (api.Service, func() error, error) {
		c := w.Serve(t)
		return func(context.Context) (api.Service, func() error, error) { return c, func() error { return nil }, nil }
	}},
	{"store", func(_ *testing.T, w *apitest.World) func(context.Context) (api.Service, func() error, error) {
		return overStore(w.Store)
	}},
}

// syncedWorld is the store of a World after its first sync (apitest.NewWorld),
// for the tests that only read it over the store (modes[1], no watcher):
// the World is built once per package, by the first test that asks, and
// each test opens its own copy of the file.
var syncedWorld struct {
	once  sync.Once
	data  []byte
	draft string // the World's Draft (Carol's queued draft)
}

// syncedStore returns a copy of syncedWorld's store, open, and the id of
// Carol's queued draft in it.
func syncedStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	syncedWorld.once.Do(func() {
		w := apitest.NewWorld(t)
		// Nothing writes after the first sync: the file is the World.
		data, err := os.ReadFile(w.Store.Path())
		if err != nil {
			t.Fatal(err)
		}
		syncedWorld.data, syncedWorld.draft = data, w.Draft
	})
	if syncedWorld.data == nil {
		t.Fatal("the World of syncedStore was not built: see the test that built it")
	}
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, syncedWorld.data, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(path, store.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, syncedWorld.draft
}

// overStore opens st as `mailagent mcp` does without a watcher (modes[1]).
func overStore(st *store.Store) func(context.Context) (api.Service, func() error, error) {
	return func(context.Context) (api.Service, func() error, error) {
		return &api.Local{DB: st}, func() error { return nil }, nil
	}
}

// connect runs the server in process and returns a connected SDK client.
func connect(t *testing.T, o mcpserver.Options) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	srv := mcpserver.New(o)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls a tool and decodes its structured result into out. It
// returns the tool's error text ("" when it succeeded).
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		if b.Len() == 0 {
			b.WriteString("(error without text)")
		}
		return b.String()
	}
	if out != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: decode %s: %v", tool, raw, err)
		}
	}
	return ""
}

// outsideUntrusted returns the paths of the string values of v that
// contain needle and are not inside an untrusted_external_content object.
func outsideUntrusted(v any, needle, path string) []string {
	var bad []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "untrusted_external_content" {
				continue
			}
			bad = append(bad, outsideUntrusted(e, needle, path+"."+k)...)
		}
	case []any:
		for _, e := range x {
			bad = append(bad, outsideUntrusted(e, needle, path+"[]")...)
		}
	case string:
		if strings.Contains(strings.ToLower(x), strings.ToLower(needle)) {
			bad = append(bad, path)
		}
	}
	return bad
}
