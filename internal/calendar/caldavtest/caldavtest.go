// Package caldavtest is a CalDAV server for tests: one event calendar at
// /cal/ (PROPFIND answers it), objects kept in memory, and the write
// preconditions of RFC 9110 13.1 and RFC 4791 5.3.4 kept exactly:
// If-None-Match: * fails with 412 on an existing resource, If-Match fails
// with 412 unless it names the current ETag (also when there is no
// resource), and every write gives a new ETag. It logs every PUT and
// DELETE with its precondition headers and status, and every GET's path
// (Reads), and lets a test play
// another client changing an object (Touch). It imports nothing from the
// project; only tests import it.
package caldavtest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Object is one stored calendar object.
type Object struct {
	ETag string // quoted
	Data string
}

// Write is one PUT or DELETE as the server saw it.
type Write struct {
	Method, Path, IfMatch, IfNoneMatch string
	Status                             int
}

func (w Write) String() string {
	return strings.Join([]string{w.Method, w.Path, "If-Match=" + w.IfMatch, "If-None-Match=" + w.IfNoneMatch, fmt.Sprint(w.Status)}, " ")
}

// Server is the fake; URL + "/cal/" is its calendar.
type Server struct {
	*httptest.Server
	mu     sync.Mutex
	objs   map[string]Object
	n      int
	writes []Write
	reads  []string
	noETag bool
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{objs: map[string]Object{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// OmitETag makes PUT answer without an ETag header, as a server that
// changed the data on the way in does (RFC 4791 5.3.4).
func (s *Server) OmitETag() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noETag = true
}

const propfind = `<?xml version="1.0" encoding="utf-8"?>
<d:multistatus xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">
 <d:response><d:href>/cal/</d:href><d:propstat><d:prop>
  <d:resourcetype><d:collection/><c:calendar/></d:resourcetype>
  <d:displayname>Fake</d:displayname>
  <c:supported-calendar-component-set><c:comp name="VEVENT"/></c:supported-calendar-component-set>
 </d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
</d:multistatus>`

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	cur, exists := s.objs[r.URL.Path]
	switch r.Method {
	case "PROPFIND":
		w.Header().Set("Content-Type", "application/xml; charset=utf-8")
		w.WriteHeader(http.StatusMultiStatus)
		_, _ = io.WriteString(w, propfind)
		return
	case http.MethodGet, http.MethodHead:
		if r.Method == http.MethodGet {
			s.reads = append(s.reads, r.URL.Path)
		}
		if !exists {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("ETag", cur.ETag)
		w.Header().Set("Content-Type", "text/calendar")
		_, _ = io.WriteString(w, cur.Data)
		return
	}
	wr := Write{Method: r.Method, Path: r.URL.Path, IfMatch: r.Header.Get("If-Match"), IfNoneMatch: r.Header.Get("If-None-Match")}
	defer func() { s.writes = append(s.writes, wr) }()
	switch {
	case wr.IfNoneMatch == "*" && exists, wr.IfMatch != "" && (!exists || wr.IfMatch != cur.ETag):
		wr.Status = http.StatusPreconditionFailed
	case r.Method == http.MethodDelete && !exists:
		wr.Status = http.StatusNotFound
	case r.Method == http.MethodDelete:
		delete(s.objs, r.URL.Path)
		wr.Status = http.StatusNoContent
	case r.Method == http.MethodPut:
		s.n++
		s.objs[r.URL.Path] = Object{ETag: fmt.Sprintf(`"v%d"`, s.n), Data: string(body)}
		if !s.noETag {
			w.Header().Set("ETag", s.objs[r.URL.Path].ETag)
		}
		wr.Status = http.StatusCreated
		if exists {
			wr.Status = http.StatusNoContent
		}
	default:
		wr.Status = http.StatusMethodNotAllowed
	}
	w.WriteHeader(wr.Status)
}

// Touch is another client writing data at path (a new ETag).
func (s *Server) Touch(path, data string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.objs[path] = Object{ETag: fmt.Sprintf(`"other%d"`, s.n), Data: data}
}

// Get returns the object at path.
func (s *Server) Get(path string) (Object, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[path]
	return o, ok
}

// Writes returns every PUT and DELETE so far, in order.
func (s *Server) Writes() []Write {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Write(nil), s.writes...)
}

// Reads returns the path of every GET so far, in order.
func (s *Server) Reads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reads...)
}
