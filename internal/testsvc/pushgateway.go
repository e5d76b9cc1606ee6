//go:build linux

package testsvc

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Pushgateway starts a Prometheus Pushgateway (the Debian package's
// prometheus-pushgateway) on a free 127.0.0.1 port in t.TempDir() with
// persistence off (what is pushed lives in its memory only), waits until
// /-/ready answers 200, registers t.Cleanup to stop it, and returns its
// URL "http://127.0.0.1:PORT". What it holds is served at URL/metrics.
//
// Without prometheus-pushgateway on PATH the test is skipped (or fails
// when IDEMCHECK_REQUIRE_SERVICES=1).
func Pushgateway(t testing.TB) string {
	t.Helper()
	bin := need(t, PushgatewayServer)[0]
	dir := t.TempDir()
	begin := time.Now()
	var lastErr error
	for try := 0; try < startTries; try++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("testsvc: pushgateway: %v", err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		logPath := filepath.Join(dir, fmt.Sprintf("pushgateway-%d.log", try))
		cmd := exec.Command(bin,
			"--web.listen-address="+addr,
			"--persistence.file=", // memory only
			"--log.level=warn",
		)
		cmd.Dir = dir
		p, err := start(cmd, logPath, nil)
		if err != nil {
			t.Fatalf("testsvc: pushgateway: %v", err)
		}
		u := "http://" + addr
		if err := p.waitReady(func(ctx context.Context) error { return httpReady(ctx, u+"/-/ready") }); err != nil {
			p.stop(syscall.SIGKILL)
			lastErr = fmt.Errorf("%w\n%s", err, tail(logPath))
			continue
		}
		t.Cleanup(func() { p.stop(syscall.SIGTERM) })
		t.Logf("testsvc: prometheus-pushgateway ready on %s in %v", addr, time.Since(begin).Round(time.Millisecond))
		return u
	}
	t.Fatalf("testsvc: prometheus-pushgateway did not start: %v", lastErr)
	return ""
}

// httpReady expects 200 from a GET of u.
func httpReady(ctx context.Context, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s = %s", u, resp.Status)
	}
	return nil
}
