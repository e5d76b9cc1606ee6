//go:build linux

package testsvc

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

func TestRedis(t *testing.T) {
	t.Parallel()
	Need(t, RedisServer)
	var addr string
	// The server lives as long as the subtest that started it.
	t.Run("up", func(t *testing.T) {
		u := Redis(t)
		opt, err := redis.ParseURL(u)
		if err != nil {
			t.Fatalf("redis.ParseURL(%q) = %v, want nil", u, err)
		}
		addr = opt.Addr
		c := redis.NewClient(opt)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if got, err := c.Ping(ctx).Result(); err != nil || got != "PONG" {
			t.Fatalf("PING = %q, %v, want PONG, nil", got, err)
		}
		// Persistence is off: nothing may be written to disk.
		if got, err := c.ConfigGet(ctx, "save").Result(); err != nil || got["save"] != "" {
			t.Errorf("CONFIG GET save = %v, %v, want empty", got, err)
		}
	})
	assertGone(t, addr)
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	Need(t, PostgresServer)
	var addr string
	var dataDir string
	t.Run("up", func(t *testing.T) {
		dsn := Postgres(t)
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("url.Parse(%q) = %v", dsn, err)
		}
		addr = u.Host
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatalf("pgx.Connect(%q) = %v, want nil", dsn, err)
		}
		defer c.Close(context.Background())
		var one int
		if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("SELECT 1 = %d, %v, want 1, nil", one, err)
		}
		var fsync string
		if err := c.QueryRow(ctx, "SHOW fsync").Scan(&fsync); err != nil || fsync != "off" {
			t.Errorf("SHOW fsync = %q, %v, want off", fsync, err)
		}
		if err := c.QueryRow(ctx, "SHOW data_directory").Scan(&dataDir); err != nil {
			t.Fatalf("SHOW data_directory = %v", err)
		}
	})
	assertGone(t, addr)
	if dataDir == "" {
		t.Fatal("data directory unknown")
	}
	if _, err := os.Stat(filepath.Dir(dataDir)); !os.IsNotExist(err) {
		t.Errorf("os.Stat(%s) after cleanup = %v, want not exist", filepath.Dir(dataDir), err)
	}
}

// TestPostgresManyConnections holds more connections open at once than
// Postgres's default max_connections (100) allows: parallel tests each
// with a lab's pool must not run into "too many clients".
func TestPostgresManyConnections(t *testing.T) {
	testenv.SkipUnlessLong(t) // 101 backends to start: the long suite's
	t.Parallel()
	const conns = 101 // one past the default, as many backends to start as that takes
	dsn := Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("pgx.Connect(%q) = %v", dsn, err)
	}
	defer c.Close(context.Background())
	var maxConns, buffers string
	if err := c.QueryRow(ctx, "SHOW max_connections").Scan(&maxConns); err != nil || maxConns != strconv.Itoa(PostgresMaxConnections) {
		t.Errorf("SHOW max_connections = %q, %v, want %d", maxConns, err, PostgresMaxConnections)
	}
	if err := c.QueryRow(ctx, "SHOW shared_buffers").Scan(&buffers); err != nil || buffers != pgSharedBuffers {
		t.Errorf("SHOW shared_buffers = %q, %v, want %s", buffers, err, pgSharedBuffers)
	}

	// Open them all, then count them from the server's side while they
	// are all held.
	open := make([]*pgx.Conn, 0, conns)
	defer func() {
		for _, oc := range open {
			oc.Close(context.Background())
		}
	}()
	for i := range conns {
		oc, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatalf("connection %d of %d: pgx.Connect = %v", i+1, conns, err)
		}
		open = append(open, oc)
	}
	var n int
	err = c.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'").Scan(&n)
	if err != nil || n < conns+1 {
		t.Errorf("client backends = %d, %v, want at least %d", n, err, conns+1)
	}
}

// TestMissing checks the skip/fatal switch on a missing binary, and that a
// subtest cannot ask for a server its top-level test has not: that
// mistake fails on every machine, with or without the server.
func TestMissing(t *testing.T) {
	tests := []struct {
		name     string // the test name the helper sees
		env      string
		path     bool // the binaries' directory on PATH
		need     bool // the top-level test called Need first
		wantSkip bool
		wantFail bool
	}{
		{name: "TestFake", env: "", wantSkip: true},
		{name: "TestFake", env: "1", wantFail: true},
		// A subtest of a test that did not call Need fails, skip or not.
		{name: "TestFake/sub", env: "", wantFail: true},
		{name: "TestFake/sub", env: "", path: true, wantFail: true},
		// Without the binary, Need in the top-level test skips it whole.
		{name: "TestFake", env: "", need: true, wantSkip: true},
		// With it, Need in the top-level test lets the subtest start one.
		{name: "TestFake/sub", env: "1", path: true, need: true},
	}
	_, noRedis := RedisServer.binaries()
	required := os.Getenv(RequireEnv) == "1"
	for i, tt := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if tt.path && noRedis != nil {
				if required {
					t.Fatalf("redis-server: %v (%s=1)", noRedis, RequireEnv)
				}
				t.Skipf("redis-server not here (apt-get install -y redis-server): %v", noRedis)
			}
			t.Setenv(RequireEnv, tt.env)
			if !tt.path {
				t.Setenv("PATH", t.TempDir())
			}
			top, _ := topLevel(tt.name)
			call := func(rec *recorder, f func(testing.TB)) {
				done := make(chan struct{})
				go func() { // Skip and Fatal end the goroutine with runtime.Goexit.
					defer close(done)
					f(rec)
				}()
				<-done
			}
			rec := &recorder{TB: t, name: tt.name}
			f := func(tb testing.TB) { need(tb, RedisServer) }
			if tt.need {
				f = func(tb testing.TB) {
					if tt.name == top {
						Need(rec, RedisServer)
						return
					}
					top := &recorder{TB: t, name: top}
					defer func() { rec.failed, rec.skipped = rec.failed || top.failed, rec.skipped || top.skipped }()
					Need(top, RedisServer)
					need(tb, RedisServer)
				}
				t.Cleanup(func() {
					checked.Lock()
					delete(checked.m, top)
					checked.Unlock()
				})
			}
			call(rec, f)
			if rec.skipped != tt.wantSkip || rec.failed != tt.wantFail {
				t.Errorf("Redis in %s with %s=%q: skipped, failed = %v, %v, want %v, %v (%s)",
					tt.name, RequireEnv, tt.env, rec.skipped, rec.failed, tt.wantSkip, tt.wantFail, rec.msg)
			}
		})
	}
}

// recorder records Skip and Fatal instead of ending the real test, under
// a test name of its own.
type recorder struct {
	testing.TB
	name            string
	skipped, failed bool
	msg             string
}

func (r *recorder) Name() string      { return r.name }
func (r *recorder) Helper()           {}
func (r *recorder) Cleanup(func())    {}
func (r *recorder) Skip(args ...any)  { r.skipped, r.msg = true, fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any) { r.failed, r.msg = true, fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatalf(f string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(f, args...)
	runtime.Goexit()
}

func assertGone(t *testing.T, addr string) {
	t.Helper()
	if addr == "" {
		t.Fatal("server address unknown")
	}
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		t.Errorf("net.Dial(%s) after cleanup = nil error, want connection refused", addr)
	}
}

func TestPushgateway(t *testing.T) {
	t.Parallel()
	Need(t, PushgatewayServer)
	var addr string
	t.Run("up", func(t *testing.T) {
		u := Pushgateway(t)
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatalf("url.Parse(%q) = %v", u, err)
		}
		addr = parsed.Host
		// A push is kept and served back at /metrics.
		req, _ := http.NewRequest(http.MethodPut, u+"/metrics/job/testsvc", strings.NewReader("testsvc_up 1\n"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("PUT %s/metrics/job/testsvc = %v", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
			t.Fatalf("PUT %s/metrics/job/testsvc = %s, want 200 or 202", u, resp.Status)
		}
		resp, err = http.Get(u + "/metrics")
		if err != nil {
			t.Fatalf("GET %s/metrics = %v", u, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := `testsvc_up{instance="",job="testsvc"} 1`; !strings.Contains(string(b), want) {
			t.Errorf("GET /metrics after a push lacks %s:\n%s", want, b)
		}
	})
	assertGone(t, addr)
}

// TestMissingPushgateway checks that a machine without
// prometheus-pushgateway skips a test that asks for one, or fails it when
// IDEMCHECK_REQUIRE_SERVICES=1, naming the package to install.
func TestMissingPushgateway(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, env := range []string{"", "1"} {
		t.Setenv(RequireEnv, env)
		rec := &recorder{TB: t, name: "TestFake"}
		done := make(chan struct{})
		go func() { // Skip and Fatal end the goroutine with runtime.Goexit.
			defer close(done)
			Pushgateway(rec)
		}()
		<-done
		if want := env == "1"; rec.failed != want || rec.skipped == want {
			t.Errorf("Pushgateway without the binary, %s=%q: skipped, failed = %v, %v, want %v, %v", RequireEnv, env, rec.skipped, rec.failed, !want, want)
		}
		if !strings.Contains(rec.msg, "apt-get install -y prometheus-pushgateway") {
			t.Errorf("Pushgateway without the binary says %q, want the package to install", rec.msg)
		}
	}
}
