package testsvc

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// NATS starts a throwaway nats-server with JetStream (its store in the
// test's temp dir) on a free 127.0.0.1 port and returns its URL
// "nats://127.0.0.1:PORT".
//
// Without nats-server on PATH the test is skipped (or fails when
// IDEMCHECK_REQUIRE_SERVICES=1).
func NATS(t testing.TB) string {
	t.Helper()
	bin := need(t, NATSServer)[0]
	dir := t.TempDir()
	begin := time.Now()
	var lastErr error
	for try := 0; try < startTries; try++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("testsvc: nats: %v", err)
		}
		logPath := filepath.Join(dir, fmt.Sprintf("nats-%d.log", try))
		cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", filepath.Join(dir, fmt.Sprintf("js-%d", try)),
			"--http_port", "0", "-l", logPath)
		cmd.Dir = dir
		p, err := start(cmd, logPath, nil)
		if err != nil {
			t.Fatalf("testsvc: nats: %v", err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err := p.waitReady(func(ctx context.Context) error { return natsPing(ctx, addr) }); err != nil {
			p.stop(syscall.SIGKILL)
			lastErr = fmt.Errorf("%w\n%s", err, tail(logPath))
			continue
		}
		t.Cleanup(func() { p.stop(syscall.SIGTERM) })
		t.Logf("testsvc: nats-server ready on %s in %v", addr, time.Since(begin).Round(time.Millisecond))
		return "nats://" + addr
	}
	t.Fatalf("testsvc: nats-server did not start: %v", lastErr)
	return ""
}

// natsPing reads the server's INFO line: it answers once it listens.
func natsPing(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "INFO ") {
		return fmt.Errorf("nats-server answered %q", line)
	}
	return nil
}
