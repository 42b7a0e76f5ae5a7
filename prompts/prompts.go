// Package prompts renders the model prompts of mailagent from templates.
//
// Contract:
//   - The templates are embedded (classify.tmpl, draft.tmpl, summary.tmpl,
//     style.tmpl, owner.tmpl),
//     each defining a "system" and a "user" template. A file with the same
//     name in the override directory given to Load replaces the embedded
//     one. Load parses and trial-renders every template, so a broken
//     override fails at start-up with an error naming the file.
//   - All untrusted text (email bodies, subjects, names, addresses, thread
//     excerpts, contact memory) is rendered between the fence lines
//     "<<<BOUNDARY" and "BOUNDARY>>>", and the system prompts tell the model
//     that fenced text is third-party data, never instructions. Render
//     functions delete every occurrence of the boundary from every field
//     first, so content cannot close a fence. Use NewBoundary per render.
//   - Rendering is pure: no I/O after Load. A *Set is safe for concurrent
//     use.
//   - Callers cap text first (TrimText); templates never truncate.
package prompts

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"text/template"
	"unicode/utf8"
)

//go:embed *.tmpl
var embedded embed.FS

// Template file names; each must define "system" and "user".
const (
	classifyFile = "classify.tmpl"
	draftFile    = "draft.tmpl"
	summaryFile  = "summary.tmpl"
	styleFile    = "style.tmpl"
	ownerFile    = "owner.tmpl"
)

var fileNames = []string{classifyFile, draftFile, summaryFile, styleFile, ownerFile}

// Recommended TrimText caps for the classify prompt: with them a full
// prompt (body plus three excerpts) stays near 1,300 tokens.
const (
	BodyLimit    = 2048 // runes of cleaned body text
	ExcerptLimit = 300  // runes per earlier thread message
)

// boundaryPrefix starts every boundary made by NewBoundary.
const boundaryPrefix = "MAILAGENT-DATA-"

// minBoundaryLen rejects boundaries too short to be unguessable.
const minBoundaryLen = 16

// Set is a loaded, validated set of prompt templates.
type Set struct {
	tmpl map[string]*template.Template
	src  map[string]string // file name → where it came from, for errors
}

// Load parses the embedded templates, each replaced by a file of the same
// name in overrideDir when one exists. overrideDir "" means embedded only.
// A missing override directory, an unknown *.tmpl file in it (likely a
// typo), or a template that fails to parse or render sample data is an
// error naming the file. The embedded set (overrideDir "") is parsed and
// checked once per process and shared: a *Set is immutable after Load.
func Load(overrideDir string) (*Set, error) {
	if overrideDir == "" {
		return loadEmbedded()
	}
	return load(overrideDir)
}

// loadEmbedded is load("") done once: every agent a process builds (a
// watcher per account, each command, each test) would otherwise parse and
// trial-render the same five templates again.
var loadEmbedded = sync.OnceValues(func() (*Set, error) { return load("") })

func load(overrideDir string) (*Set, error) {
	s := &Set{tmpl: map[string]*template.Template{}, src: map[string]string{}}
	if overrideDir != "" {
		entries, err := os.ReadDir(overrideDir)
		if err != nil {
			return nil, fmt.Errorf("prompts: read override dir: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".tmpl") && !slices.Contains(fileNames, e.Name()) {
				return nil, fmt.Errorf("prompts: override %s: unknown template (want one of %s)",
					filepath.Join(overrideDir, e.Name()), strings.Join(fileNames, ", "))
			}
		}
	}
	for _, name := range fileNames {
		text, src, err := readTemplate(overrideDir, name)
		if err != nil {
			return nil, err
		}
		t, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(text)
		if err != nil {
			return nil, fmt.Errorf("prompts: %s: %w", src, err)
		}
		for _, def := range []string{"system", "user"} {
			if t.Lookup(def) == nil {
				return nil, fmt.Errorf("prompts: %s: template %q is not defined", src, def)
			}
		}
		s.tmpl[name] = t
		s.src[name] = src
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

func readTemplate(overrideDir, name string) (text, src string, err error) {
	if overrideDir != "" {
		p := filepath.Join(overrideDir, name)
		b, err := os.ReadFile(p)
		switch {
		case err == nil:
			if !utf8.Valid(b) {
				return "", "", fmt.Errorf("prompts: override %s: not valid UTF-8", p)
			}
			return string(b), "override " + p, nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", "", fmt.Errorf("prompts: override %s: %w", p, err)
		}
	}
	b, err := embedded.ReadFile(name)
	if err != nil {
		return "", "", fmt.Errorf("prompts: embedded %s: %w", name, err)
	}
	return string(b), "embedded " + name, nil
}

// check renders every template with sample data, so errors that only show
// at execution (unknown fields, bad calls) surface at Load.
func (s *Set) check() error {
	b := NewBoundary()
	owner := Owner{Name: "Sample Owner", Email: "owner@example.com"}
	thread := []ThreadMessage{{From: "a@example.com", Date: "Mon, 1 Jan 2024 10:00:00 +0000", Subject: "s", Text: "t"}}
	if _, _, err := s.Classify(ClassifyData{Owner: owner, Boundary: b, Thread: thread, From: "a@example.com", To: "owner@example.com", Subject: "s", Date: "d", Body: "b", Attachments: []string{"a.pdf"}, Route: "external"}); err != nil {
		return err
	}
	if _, _, err := s.Draft(DraftData{Owner: owner, Profile: "p", ContactSummary: "c", ContactNotes: []string{"n"}, ContactHistory: []string{"h"}, Boundary: b, Thread: thread, From: "a@example.com", Subject: "s", Date: "d", Body: "b", Intents: []string{"scheduling"}, Tone: "warm", Instruction: "i", Memory: Memory{OwnerReplies: []string{"r"}, Examples: []string{"e"}, Records: []string{"x"}, Style: []string{"y"}}}); err != nil {
		return err
	}
	if _, _, err := s.Summarize(SummaryData{Owner: owner, Contact: "a@example.com", Previous: "p", History: []string{"h"}, Boundary: b}); err != nil {
		return err
	}
	if _, _, err := s.Style(StyleData{Owner: owner, Boundary: b, Edits: []string{"e"}, MaxRules: 3}); err != nil {
		return err
	}
	for _, mode := range []string{ModeInstruction, ModeObserve, ModeContext, ModeDelegate} {
		if _, _, err := s.OwnerTurn(OwnerData{Owner: owner, Boundary: b, Mode: mode, Today: "2006-01-02", Contacts: []string{"a@example.com"}, Steps: []string{"s"}, From: "f", To: "t", Subject: "s", Text: "x"}); err != nil {
			return err
		}
	}
	return nil
}

var funcs = template.FuncMap{
	"join": strings.Join,
	"inc":  func(i int) int { return i + 1 },
}

// NewBoundary returns a fresh random fence marker, "MAILAGENT-DATA-"
// followed by 128 random bits in hex. Use one per rendered prompt.
func NewBoundary() string {
	var r [16]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never returns an error (Go ≥ 1.24)
	return boundaryPrefix + hex.EncodeToString(r[:])
}

// Owner identifies the mailbox owner. It comes from configuration.
type Owner struct {
	Name  string
	Email string
}

// ThreadMessage is one earlier message of a thread, as excerpted for a
// prompt.
type ThreadMessage struct {
	From, Date, Subject string
	Text                string // already trimmed by the caller (TrimText)
}

// ClassifyData is the input of the classification prompt. Route is decided
// by code and trusted; every other field except Owner is untrusted.
type ClassifyData struct {
	Owner       Owner
	Boundary    string // from NewBoundary
	Thread      []ThreadMessage
	From, To    string
	Subject     string
	Date        string
	Body        string // cleaned text, already trimmed
	Attachments []string
	Route       string
}

// Classify renders the classification prompt.
func (s *Set) Classify(d ClassifyData) (system, user string, err error) {
	if err := checkBoundary(d.Boundary); err != nil {
		return "", "", err
	}
	return s.render(classifyFile, sanitize(d, d.Boundary))
}

// DraftData is the input of the reply-draft prompt. Owner, Profile and
// Instruction come from the owner and are trusted; Intents and Tone come
// from the validated classification; the rest is untrusted.
type DraftData struct {
	Owner          Owner
	Profile        string // owner profile and style notes
	ContactSummary string
	ContactNotes   []string
	ContactHistory []string
	Boundary       string
	Thread         []ThreadMessage
	From           string
	Subject        string
	Date           string
	Body           string
	Intents        []string
	Tone           string
	Instruction    string // owner's regenerate instruction; may be empty
	// Memory is what was learned, selected by the caller within a token
	// budget (agent.SelectMemory): Records and Style come from the owner
	// (their corrections, instructions, `memory add`) and are trusted;
	// OwnerReplies and Examples are fenced like the thread.
	Memory Memory
	// FreeSlots lists the owner's free slots, computed by code from the
	// calendar (scheduling mail only; "" otherwise): the only times the
	// draft may offer. Trusted.
	FreeSlots string
	// Tools are results of the tool step's external lookups, chosen and
	// called by code: untrusted, fenced like the thread.
	Tools []ToolResult
}

// ToolResult is one tool's answer as the drafter sees it.
type ToolResult struct {
	Name string // the tool, named by the configuration
	Text string // untrusted, already cleaned and capped
}

// Memory is the learned part of a draft prompt, each list in the order it
// should be read.
type Memory struct {
	OwnerReplies []string // the owner's own recent replies to this contact
	Examples     []string // approved replies to similar emails (few-shot)
	Records      []string // this contact's records, then the owner's global ones
	Style        []string // the owner's global style rules
}

// Draft renders the reply-draft prompt. The model's answer is expected to
// match {"body": string, "tone": string, "needs_owner_input": bool}.
func (s *Set) Draft(d DraftData) (system, user string, err error) {
	if err := checkBoundary(d.Boundary); err != nil {
		return "", "", err
	}
	return s.render(draftFile, sanitize(d, d.Boundary))
}

// SummaryData is the input of the contact-summary prompt. Contact,
// Previous and History are untrusted.
type SummaryData struct {
	Owner    Owner
	Contact  string // the contact's name and address
	Previous string // the previous summary; may be empty
	History  []string
	Boundary string
}

// Summarize renders the rolling contact-summary prompt.
func (s *Set) Summarize(d SummaryData) (system, user string, err error) {
	if err := checkBoundary(d.Boundary); err != nil {
		return "", "", err
	}
	return s.render(summaryFile, sanitize(d, d.Boundary))
}

func checkBoundary(b string) error {
	if len(b) < minBoundaryLen || strings.ContainsAny(b, " \t\r\n<>") {
		return fmt.Errorf("prompts: invalid boundary %q: use NewBoundary", b)
	}
	return nil
}

func (s *Set) render(name string, data any) (system, user string, err error) {
	t := s.tmpl[name]
	var sys, usr bytes.Buffer
	if err := t.ExecuteTemplate(&sys, "system", data); err != nil {
		return "", "", fmt.Errorf("prompts: render %s: %w", s.src[name], err)
	}
	if err := t.ExecuteTemplate(&usr, "user", data); err != nil {
		return "", "", fmt.Errorf("prompts: render %s: %w", s.src[name], err)
	}
	return strings.TrimSpace(sys.String()) + "\n", strings.TrimSpace(usr.String()) + "\n", nil
}

// sanitize returns a copy of v (a data struct) with the boundary removed
// from every string, except the Boundary field itself. Reflection keeps
// every present and future field covered.
func sanitize[T any](v T, boundary string) T {
	rv := reflect.ValueOf(&v).Elem()
	scrub(rv, boundary)
	return v
}

func scrub(v reflect.Value, boundary string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(StripBoundary(v.String(), boundary))
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).Name == "Boundary" {
				continue
			}
			scrub(v.Field(i), boundary)
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len()) // copy: never mutate the caller's slice
		reflect.Copy(c, v)
		for i := 0; i < c.Len(); i++ {
			scrub(c.Index(i), boundary)
		}
		v.Set(c)
	}
}

// StripBoundary deletes every occurrence of boundary from s, repeating until
// none is left (a deletion can join two halves into a new occurrence).
func StripBoundary(s, boundary string) string {
	if boundary == "" {
		return s
	}
	for strings.Contains(s, boundary) {
		s = strings.ReplaceAll(s, boundary, "")
	}
	return s
}

// TrimText caps s at max runes, cutting on a rune boundary, and appends a
// visible "[… trimmed N chars]" marker (N in runes) when it cut anything.
// Trailing whitespace before the marker is dropped. max ≤ 0 keeps nothing
// but the marker.
func TrimText(s string, max int) string {
	total := utf8.RuneCountInString(s)
	if total <= max {
		return s
	}
	if max < 0 {
		max = 0
	}
	cut := len(s)
	n := 0
	for i := range s {
		if n == max {
			cut = i
			break
		}
		n++
	}
	kept := strings.TrimRight(s[:cut], " \t\r\n")
	if kept == "" {
		return fmt.Sprintf("[… trimmed %d chars]", total)
	}
	return fmt.Sprintf("%s\n[… trimmed %d chars]", kept, total-max)
}
