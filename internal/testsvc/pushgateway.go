//go:build linux

package testsvc

import (
	"context"
	"fmt"
	"net/http"
	"testing"
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
	addr, _ := serveOn(t, server{name: "prometheus-pushgateway",
		args: func(addr string, _ int, _ string, _ int) []string {
			return []string{"--web.listen-address=" + addr, "--persistence.file=" /* memory only */, "--log.level=warn"}
		},
		ready: func(ctx context.Context, addr string) error { return httpReady(ctx, "http://"+addr+"/-/ready") },
	}, need(t, PushgatewayServer)[0])
	return "http://" + addr
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
