// Package testsvc starts throwaway real servers (Redis, PostgreSQL, the
// Prometheus Pushgateway, NATS with JetStream, RabbitMQ) for tests and
// stops them when the test ends.
//
// Each helper picks a free 127.0.0.1 port, starts the server in its own
// temporary directory with persistence turned off, waits until it answers,
// registers a t.Cleanup that stops it and removes its files, and returns a
// connection URL:
//
//	url := testsvc.Redis(t)       // "redis://127.0.0.1:PORT/0"
//	dsn := testsvc.Postgres(t)    // "postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable"
//	pgw := testsvc.Pushgateway(t) // "http://127.0.0.1:PORT"
//	nats := testsvc.NATS(t)       // "nats://127.0.0.1:PORT"
//	mq := testsvc.RabbitMQ(t)     // mq.URL "amqp://guest:guest@127.0.0.1:PORT/VHOST", mq.Management
//
// A package whose TestMain runs its tests through Main shares one Postgres
// among them: each Postgres(t) is then a fresh database on it (a server
// costs about two seconds of CPU, most of it initdb; a database a tenth of
// that), and PostgresWithStop still starts a server of the test's own.
// They share one RabbitMQ too (an Erlang node boots for seconds), each
// RabbitMQ(t) a virtual host of its own on it.
//
//	func TestMain(m *testing.M) { os.Exit(testsvc.Main(m)) }
//
// Servers are children of the test binary with a parent-death signal, so a
// test binary that dies without running its cleanups (a -timeout panic) takes
// them with it.
//
// When a server binary is missing the test is skipped as a whole with a hint
// naming the Debian package to install, unless IDEMCHECK_REQUIRE_SERVICES=1,
// in which case it fails. The server is asked for by the top-level test:
// a skip in a subtest would end only the subtest and leave its parent
// running without the server. A test that starts a server per subtest
// calls Need in the top-level test first:
//
//	func TestFailsClosed(t *testing.T) {
//		testsvc.Need(t, testsvc.RedisServer)
//		for _, c := range cases {
//			t.Run(c.name, func(t *testing.T) { url, stop := testsvc.RedisWithStop(t); ... })
//		}
//	}
//
// Asking in a subtest without that fails the test on every machine, so
// the mistake cannot wait for a machine without the server to show. This
// package is for tests only; it reads the environment.
package testsvc
