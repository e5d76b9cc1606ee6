//go:build !linux

package testsvc

import (
	"os"
	"testing"
)

// Throwaway servers are started on Linux only (a parent-death signal, a
// process group, dropping root): elsewhere a test that needs one is
// skipped as a whole, or fails under IDEMCHECK_REQUIRE_SERVICES=1.

// Redis skips t: throwaway servers start on Linux only.
func Redis(t testing.TB) string {
	t.Helper()
	u, _ := RedisWithStop(t)
	return u
}

// RedisWithStop skips t: throwaway servers start on Linux only.
func RedisWithStop(t testing.TB) (string, func()) {
	t.Helper()
	need(t, RedisServer)
	unsupported(t)
	return "", func() {}
}

// Postgres skips t: throwaway servers start on Linux only.
func Postgres(t testing.TB) string {
	t.Helper()
	u, _ := PostgresWithStop(t)
	return u
}

// PostgresWithStop skips t: throwaway servers start on Linux only.
func PostgresWithStop(t testing.TB) (string, func()) {
	t.Helper()
	need(t, PostgresServer)
	unsupported(t)
	return "", func() {}
}

// Pushgateway skips t: throwaway servers start on Linux only.
func Pushgateway(t testing.TB) string {
	t.Helper()
	need(t, PushgatewayServer)
	unsupported(t)
	return ""
}

func unsupported(t testing.TB) {
	t.Helper()
	msg := "testsvc: throwaway servers are started on Linux only"
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg + " (" + RequireEnv + "=1)")
	}
	t.Skip(msg)
}

// Main runs a package's tests, m.Run: no server is shared where none
// starts.
func Main(m *testing.M) int { return m.Run() }

// NATS skips t: throwaway servers start on Linux only.
func NATS(t testing.TB) string {
	t.Helper()
	need(t, NATSServer)
	unsupported(t)
	return ""
}

// RabbitMQBroker is a running throwaway RabbitMQ (Linux only).
type RabbitMQBroker struct {
	URL        string
	Management string
}

// RabbitMQ skips t: throwaway servers start on Linux only.
func RabbitMQ(t testing.TB) RabbitMQBroker {
	t.Helper()
	need(t, RabbitMQServer)
	unsupported(t)
	return RabbitMQBroker{}
}
