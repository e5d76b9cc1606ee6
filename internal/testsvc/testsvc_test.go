package testsvc

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

func TestRedis(t *testing.T) {
	t.Parallel()
	var addr string
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
	t.Parallel()
	const conns = 150
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

// TestMissing checks the skip/fatal switch on a missing binary.
func TestMissing(t *testing.T) {
	tests := []struct {
		env      string
		wantSkip bool
		wantFail bool
	}{
		{env: "", wantSkip: true},
		{env: "1", wantFail: true},
	}
	for _, tt := range tests {
		t.Run("env="+tt.env, func(t *testing.T) {
			t.Setenv(RequireEnv, tt.env)
			t.Setenv("PATH", t.TempDir())
			rec := &recorder{TB: t}
			done := make(chan struct{})
			go func() { // Skip and Fatal end the goroutine with runtime.Goexit.
				defer close(done)
				Redis(rec)
			}()
			<-done
			if rec.skipped != tt.wantSkip || rec.failed != tt.wantFail {
				t.Errorf("Redis with %s=%q: skipped, failed = %v, %v, want %v, %v",
					RequireEnv, tt.env, rec.skipped, rec.failed, tt.wantSkip, tt.wantFail)
			}
		})
	}
}

// recorder records Skip and Fatal instead of ending the real test.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()           {}
func (r *recorder) Skip(args ...any)  { r.skipped = true; runtime.Goexit() }
func (r *recorder) Fatal(args ...any) { r.failed = true; runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = true
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
