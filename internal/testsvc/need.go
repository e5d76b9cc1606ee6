package testsvc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// RequireEnv is the environment variable that turns a missing server binary
// from a skip into a test failure (set it to "1" in CI).
const RequireEnv = "IDEMCHECK_REQUIRE_SERVICES"

// PostgresMaxConnections is the max_connections of the Postgres that
// Postgres starts: enough for many labs and oracles, each with its own
// pool, in tests run with a high -parallel on a machine with many cores
// (the server's default of 100 is not).
const PostgresMaxConnections = 1000

// Server names a kind of server this package starts.
type Server int

// The servers this package starts.
const (
	RedisServer       Server = iota // redis-server, Debian package redis-server
	PostgresServer                  // initdb and postgres, Debian package postgresql
	PushgatewayServer               // prometheus-pushgateway, Debian package prometheus-pushgateway
	NATSServer                      // nats-server (JetStream), Debian package nats-server
	RabbitMQServer                  // rabbitmq-server and epmd, Debian package rabbitmq-server
)

func (s Server) String() string {
	switch s {
	case RedisServer:
		return "redis-server"
	case PostgresServer:
		return "postgresql"
	case PushgatewayServer:
		return "prometheus-pushgateway"
	case NATSServer:
		return "nats-server"
	case RabbitMQServer:
		return "rabbitmq-server"
	}
	return fmt.Sprintf("Server(%d)", int(s))
}

// binaries finds the server's binaries, or says what is missing.
func (s Server) binaries() ([]string, error) {
	switch s {
	case NATSServer:
		bin, err := exec.LookPath("nats-server")
		if err != nil {
			return nil, err
		}
		return []string{bin}, nil
	case RabbitMQServer:
		// the script, not the /usr/sbin wrapper, which insists on the
		// rabbitmq user and its directories
		const server = "/usr/lib/rabbitmq/bin/rabbitmq-server"
		if !isExec(server) {
			return nil, fmt.Errorf("no %s", server)
		}
		epmd, err := exec.LookPath("epmd")
		if err != nil {
			return nil, err
		}
		return []string{server, epmd}, nil
	case RedisServer:
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, err
		}
		return []string{bin}, nil
	case PostgresServer:
		initdb, postgres, err := postgresBinaries()
		if err != nil {
			return nil, err
		}
		return []string{initdb, postgres}, nil
	case PushgatewayServer:
		bin, err := exec.LookPath("prometheus-pushgateway")
		if err != nil {
			return nil, err
		}
		return []string{bin}, nil
	}
	return nil, fmt.Errorf("unknown server %d", int(s))
}

// checked records, per top-level test, the servers whose binaries it has
// found: only then may its subtests start one.
var checked = struct {
	sync.Mutex
	m map[string]map[Server]bool
}{m: map[string]map[Server]bool{}}

// Need makes sure the servers' binaries are on this machine before a test
// starts any of them. It must be called from the top-level test, so that a
// machine without a server skips that test as a whole, with the package
// to install (or fails it when IDEMCHECK_REQUIRE_SERVICES=1). A test that
// starts its servers in subtests (a fresh server per case) calls Need
// first; Redis and Postgres call it themselves when called from a
// top-level test, and refuse to run in a subtest of a test that has not.
//
// The rule exists because a skip in a subtest ends only the subtest: the
// parent then runs on without the server it was given, and fails on a
// machine that merely lacks it.
func Need(t testing.TB, servers ...Server) {
	t.Helper()
	top, sub := topLevel(t.Name())
	if sub {
		t.Fatalf("testsvc.Need(%v) called from subtest %s: call it from the top-level test %s, so that a machine without the server skips that test as a whole", servers, t.Name(), top)
	}
	for _, s := range servers {
		need(t, s)
	}
}

// need finds s's binaries for t: when t is a top-level test it skips (or
// fails) t as a whole if they are missing, and records that they were
// found; when t is a subtest, its top-level test must have done so.
func need(t testing.TB, s Server) []string {
	t.Helper()
	top, sub := topLevel(t.Name())
	if sub {
		checked.Lock()
		ok := checked.m[top][s]
		checked.Unlock()
		if !ok {
			t.Fatalf("testsvc: %v asked for in subtest %s: call testsvc.Need(t, testsvc.%s) in the top-level test %s first, so that a machine without %v skips that test as a whole instead of failing it", s, t.Name(), constName(s), top, s)
		}
	}
	bins, err := s.binaries()
	if err != nil {
		msg := fmt.Sprintf("testsvc: %v not found (%v); install the Debian package: apt-get install -y %v", s, err, s)
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(msg + " (" + RequireEnv + "=1)")
		}
		t.Skip(msg)
	}
	if !sub {
		checked.Lock()
		if checked.m[top] == nil {
			checked.m[top] = map[Server]bool{}
			t.Cleanup(func() {
				checked.Lock()
				delete(checked.m, top)
				checked.Unlock()
			})
		}
		checked.m[top][s] = true
		checked.Unlock()
	}
	return bins
}

// topLevel returns the top-level test's name of a test named name, and
// whether name is a subtest's.
func topLevel(name string) (string, bool) {
	top, _, sub := strings.Cut(name, "/")
	return top, sub
}

func constName(s Server) string {
	switch s {
	case PostgresServer:
		return "PostgresServer"
	case PushgatewayServer:
		return "PushgatewayServer"
	case NATSServer:
		return "NATSServer"
	case RabbitMQServer:
		return "RabbitMQServer"
	}
	return "RedisServer"
}

// postgresBinaries finds initdb and postgres: on PATH, in pg_config
// --bindir, then in the newest /usr/lib/postgresql/*/bin.
func postgresBinaries() (initdb, postgres string, err error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(matches, func(i, j int) bool { return pgVersion(matches[i]) > pgVersion(matches[j]) })
	dirs = append(dirs, matches...)
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		if isExec(i) && isExec(p) {
			return i, p, nil
		}
	}
	return "", "", errors.New("no directory holds both initdb and postgres (PATH, pg_config --bindir, /usr/lib/postgresql/*/bin)")
}

// pgVersion reads NN from /usr/lib/postgresql/NN/bin (0 when not a number).
func pgVersion(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
