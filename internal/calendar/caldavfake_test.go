package calendar

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeCalDAV is a CalDAV server with one calendar at /cal/ that keeps
// preconditions as RFC 7232 and RFC 4791 say: If-None-Match: * fails on
// an existing resource, If-Match fails unless it names the current ETag,
// and every write gives a new ETag. It records every write request's
// headers, and other clients can change objects (Touch).
type fakeCalDAV struct {
	*httptest.Server
	mu     sync.Mutex
	objs   map[string]fakeObj
	n      int
	writes []fakeWrite
	noETag bool // PUT answers without an ETag header (RFC 4791 5.3.4)
}

type fakeObj struct {
	etag string
	data string
}

type fakeWrite struct {
	method, path, ifMatch, ifNoneMatch string
	status                             int
}

func newFakeCalDAV(t *testing.T) *fakeCalDAV {
	f := &fakeCalDAV{objs: map[string]fakeObj{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

const fakePropfind = `<?xml version="1.0" encoding="utf-8"?>
<d:multistatus xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">
 <d:response><d:href>/cal/</d:href><d:propstat><d:prop>
  <d:resourcetype><d:collection/><c:calendar/></d:resourcetype>
  <d:displayname>Fake</d:displayname>
  <c:supported-calendar-component-set><c:comp name="VEVENT"/></c:supported-calendar-component-set>
 </d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
</d:multistatus>`

func (f *fakeCalDAV) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	cur, exists := f.objs[r.URL.Path]
	switch r.Method {
	case "PROPFIND":
		w.Header().Set("Content-Type", "application/xml; charset=utf-8")
		w.WriteHeader(http.StatusMultiStatus)
		_, _ = io.WriteString(w, fakePropfind)
		return
	case http.MethodGet, http.MethodHead:
		if !exists {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("ETag", cur.etag)
		w.Header().Set("Content-Type", "text/calendar")
		_, _ = io.WriteString(w, cur.data)
		return
	}
	wr := fakeWrite{method: r.Method, path: r.URL.Path, ifMatch: r.Header.Get("If-Match"), ifNoneMatch: r.Header.Get("If-None-Match")}
	defer func() { f.writes = append(f.writes, wr) }()
	switch {
	case wr.ifNoneMatch == "*" && exists, wr.ifMatch != "" && (!exists || wr.ifMatch != cur.etag):
		wr.status = http.StatusPreconditionFailed
	case r.Method == http.MethodDelete && !exists:
		wr.status = http.StatusNotFound
	case r.Method == http.MethodDelete:
		delete(f.objs, r.URL.Path)
		wr.status = http.StatusNoContent
	case r.Method == http.MethodPut:
		f.n++
		f.objs[r.URL.Path] = fakeObj{etag: fmt.Sprintf(`"v%d"`, f.n), data: string(body)}
		if !f.noETag {
			w.Header().Set("ETag", f.objs[r.URL.Path].etag)
		}
		wr.status = http.StatusCreated
		if exists {
			wr.status = http.StatusNoContent
		}
	default:
		wr.status = http.StatusMethodNotAllowed
	}
	w.WriteHeader(wr.status)
}

// Touch is another client changing the object at path.
func (f *fakeCalDAV) Touch(path, data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.objs[path] = fakeObj{etag: fmt.Sprintf(`"other%d"`, f.n), data: data}
}

func (f *fakeCalDAV) get(path string) (fakeObj, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objs[path]
	return o, ok
}

func (f *fakeCalDAV) writeLog() []fakeWrite {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeWrite(nil), f.writes...)
}

func (w fakeWrite) String() string {
	return strings.Join([]string{w.method, w.path, "If-Match=" + w.ifMatch, "If-None-Match=" + w.ifNoneMatch, fmt.Sprint(w.status)}, " ")
}
