//go:build linux

package testsvc

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// server is how serveOn starts one kind of single-binary server.
type server struct {
	name string // as a message names it: "redis-server"
	// args are the binary's arguments to listen on addr (127.0.0.1:PORT),
	// keeping its files under dir; try numbers the attempt (a fresh port
	// each time).
	args func(addr string, port int, dir string, try int) []string
	// ready returns nil once the server at addr answers.
	ready func(ctx context.Context, addr string) error
}

// serveOn starts s's binary bin on a free loopback port in t's temp dir,
// trying other ports when one is taken, waits until it is ready,
// registers t.Cleanup to stop it, and returns its address and a stop
// that may be called earlier (and again).
func serveOn(t testing.TB, s server, bin string) (addr string, stop func()) {
	t.Helper()
	dir := t.TempDir()
	begin := time.Now()
	var lastErr error
	for try := 0; try < startTries; try++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("testsvc: %s: %v", s.name, err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		logPath := filepath.Join(dir, fmt.Sprintf("%s-%d.log", s.name, try))
		cmd := exec.Command(bin, s.args(addr, port, dir, try)...)
		cmd.Dir = dir
		p, err := start(cmd, logPath, nil)
		if err != nil {
			t.Fatalf("testsvc: %s: %v", s.name, err)
		}
		if err := p.waitReady(func(ctx context.Context) error { return s.ready(ctx, addr) }); err != nil {
			p.stop(syscall.SIGKILL)
			lastErr = fmt.Errorf("%w\n%s", err, tail(logPath))
			continue
		}
		stop := func() { p.stop(syscall.SIGTERM) }
		t.Cleanup(stop)
		t.Logf("testsvc: %s ready on %s in %v", s.name, addr, time.Since(begin).Round(time.Millisecond))
		return addr, stop
	}
	t.Fatalf("testsvc: %s did not start: %v", s.name, lastErr)
	return "", nil
}
