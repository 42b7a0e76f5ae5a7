package demo

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"sync"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Delivered is one message the outside world received.
type Delivered struct {
	From string
	To   []string
	Data []byte
}

// World is an SMTP server on loopback that stands for the rest of the
// internet in the demo: whatever mailagent sends ends up here, and nowhere
// else. It requires AUTH PLAIN with the given credentials.
type World struct {
	Host string
	Port int

	srv  *smtp.Server
	done chan struct{}

	mu        sync.Mutex
	delivered []Delivered
	notify    chan struct{}
}

// StartWorld listens on 127.0.0.1 with a random port.
func StartWorld(user, password string) (*World, error) {
	w := &World{done: make(chan struct{}), notify: make(chan struct{}, 1)}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		return &worldSession{w: w, user: user, password: password}, nil
	}))
	srv.Domain = "world.demo.example"
	srv.AllowInsecureAuth = true // loopback only
	srv.ErrorLog = log.New(io.Discard, "", 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo smtp: listen: %w", err)
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	w.Host = host
	w.Port, _ = strconv.Atoi(port)
	w.srv = srv
	go func() {
		defer close(w.done)
		_ = srv.Serve(ln)
	}()
	return w, nil
}

// Close stops the server.
func (w *World) Close() error {
	err := w.srv.Close()
	<-w.done
	return err
}

// Delivered returns what was received so far.
func (w *World) Delivered() []Delivered {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Delivered(nil), w.delivered...)
}

// Notify receives a value after each delivery (it never blocks the server).
func (w *World) Notify() <-chan struct{} { return w.notify }

type worldSession struct {
	w              *World
	user, password string
	authed         bool
	from           string
	to             []string
}

func (s *worldSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *worldSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.user || pass != s.password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "bad credentials"}
		}
		s.authed = true
		return nil
	}), nil
}

func (s *worldSession) Mail(from string, _ *smtp.MailOptions) error {
	if !s.authed {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}

func (s *worldSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

func (s *worldSession) Data(r io.Reader) error {
	var b bytes.Buffer
	if _, err := io.Copy(&b, r); err != nil {
		return err
	}
	s.w.mu.Lock()
	s.w.delivered = append(s.w.delivered, Delivered{From: s.from, To: append([]string(nil), s.to...), Data: b.Bytes()})
	s.w.mu.Unlock()
	select {
	case s.w.notify <- struct{}{}:
	default:
	}
	return nil
}

func (s *worldSession) Reset()        { s.from, s.to = "", nil }
func (s *worldSession) Logout() error { return nil }
