//go:build linux

package testsvc

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// NATS starts a throwaway nats-server with JetStream (its store in the
// test's temp dir) on a free 127.0.0.1 port and returns its URL
// "nats://127.0.0.1:PORT".
//
// Without nats-server on PATH the test is skipped (or fails when
// IDEMCHECK_REQUIRE_SERVICES=1).
func NATS(t testing.TB) string {
	t.Helper()
	addr, _ := serveOn(t, server{name: "nats-server",
		args: func(_ string, port int, dir string, try int) []string {
			return []string{"-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", filepath.Join(dir, fmt.Sprintf("js-%d", try)),
				"--http_port", "0"}
		},
		ready: natsPing,
	}, need(t, NATSServer)[0])
	return "nats://" + addr
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
