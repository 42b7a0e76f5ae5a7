package notify

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// sessionBus starts a real D-Bus session bus (dbus-daemon, as a desktop
// login does) for the test and returns its address. It skips when
// dbus-daemon is not installed (apt-get install dbus).
func sessionBus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skip("dbus-daemon is not installed (apt-get install dbus)")
	}
	cmd := exec.Command(bin, "--session", "--nofork", "--nopidfile", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dbus-daemon: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return strings.TrimSpace(line)
}

// received is one Notify call as the notification server got it.
type received struct {
	AppName, Summary, Body string
}

// notificationServer is a minimal freedesktop notification server
// (org.freedesktop.Notifications, the service notify-send talks to),
// exported on a real bus; it records what arrives.
type notificationServer struct {
	caps []string
	mu   sync.Mutex
	got  []received
}

func (s *notificationServer) GetCapabilities() ([]string, *dbus.Error) { return s.caps, nil }

func (s *notificationServer) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "test", "mailagent", "1", "1.2", nil
}

func (s *notificationServer) Notify(app string, replaces uint32, icon, summary, body string, actions []string,
	hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, received{AppName: app, Summary: summary, Body: body})
	return uint32(len(s.got)), nil
}

func (s *notificationServer) CloseNotification(id uint32) *dbus.Error { return nil }

func (s *notificationServer) received() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

// serveNotifications exports a notification server on the bus at addr.
func serveNotifications(t *testing.T, addr string, caps ...string) *notificationServer {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connect to the test bus: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	s := &notificationServer{caps: caps}
	if err := conn.Export(s, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own org.freedesktop.Notifications: %v, %v", reply, err)
	}
	return s
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
