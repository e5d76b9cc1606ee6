//go:build linux

package testsvc

import (
	"bufio"
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	readyTimeout = 30 * time.Second // longest wait for a server to answer
	stopTimeout  = 10 * time.Second // longest wait for a graceful stop before SIGKILL
	pollEvery    = 20 * time.Millisecond
	startTries   = 3 // a free port can be taken between probe and bind: retry
)

// pgSharedBuffers keeps the server's shared memory small: with
// max_connections at PostgresMaxConnections, the default 128MB of buffers
// per throwaway server adds up, and tests need few.
const pgSharedBuffers = "16MB"

// Redis starts a redis-server on a free 127.0.0.1 port in t.TempDir() with
// persistence off, waits until PING answers, registers t.Cleanup to stop it,
// and returns its URL "redis://127.0.0.1:PORT/0".
//
// Without redis-server on PATH the test is skipped (or fails when
// IDEMCHECK_REQUIRE_SERVICES=1).
func Redis(t testing.TB) string {
	t.Helper()
	u, _ := RedisWithStop(t)
	return u
}

// RedisWithStop is Redis, and also returns a function that stops the server
// before the test ends (for fail-closed tests); it may be called again.
func RedisWithStop(t testing.TB) (string, func()) {
	t.Helper()
	addr, stop := serveOn(t, server{name: "redis-server",
		args: func(_ string, port int, dir string, _ int) []string {
			return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
				"--appendonly", "no", "--daemonize", "no", "--protected-mode", "no", "--logfile", ""}
		},
		ready: redisPing,
	}, need(t, RedisServer)[0])
	return "redis://" + addr + "/0", stop
}

// Postgres initialises a fresh cluster (initdb -A trust -U postgres
// --no-sync) in a temporary directory, starts postgres on a free 127.0.0.1
// port with fsync, synchronous_commit and full_page_writes off and
// max_connections at PostgresMaxConnections, waits until it accepts
// connections, registers t.Cleanup to stop it (immediate shutdown) and
// remove its files, and returns
// "postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable".
//
// In a package whose TestMain runs its tests through Main, Postgres
// instead returns a fresh, empty database of its own
// ("postgres://postgres@127.0.0.1:PORT/testsvc_N?sslmode=disable") on one
// server the package's tests share: started at the first test that asks,
// stopped after the last test. A server costs about two seconds of CPU
// (most of it initdb); a database, a tenth of that.
//
// The cluster is a copy of one initdb made once and kept in the user's
// cache directory (idemcheck-testsvc/, about 40 MB, as Go keeps its build
// cache; remove it at will): copying it costs a tenth of initdb.
//
// The binaries are looked up on PATH, then in `pg_config --bindir`, then in
// the newest /usr/lib/postgresql/*/bin. As root (initdb refuses to run as
// root) the server runs as the user postgres, or nobody. Without the binaries
// the test is skipped (or fails when IDEMCHECK_REQUIRE_SERVICES=1).
func Postgres(t testing.TB) string {
	t.Helper()
	if !sharing.Load() {
		u, _ := PostgresWithStop(t)
		return u
	}
	bins := need(t, PostgresServer)
	dsn, err := sharedPG.database(bins)
	if err != nil {
		t.Fatalf("testsvc: %v", err)
	}
	return dsn
}

// PostgresWithStop is Postgres, and also returns a function that stops the
// server before the test ends (for fail-closed tests); it may be called
// again. The server is the test's own, under Main too.
func PostgresWithStop(t testing.TB) (string, func()) {
	t.Helper()
	bins := need(t, PostgresServer)
	pg, err := startPostgres(bins)
	if err != nil {
		t.Fatalf("testsvc: %v", err)
	}
	t.Cleanup(pg.stop)
	t.Logf("testsvc: %s", pg.ready)
	return pg.dsn, pg.stop
}

// pgServer is a running Postgres.
type pgServer struct {
	dsn   string // of its database postgres
	ready string // how long it took to start, for the log
	stop  func() // stops it and removes its files; may be called again
}

// startPostgres initialises a cluster and starts a server on it, as
// Postgres describes.
func startPostgres(bins []string) (*pgServer, error) {
	initdb, postgres := bins[0], bins[1]
	begin := time.Now()

	cred, uid, gid, err := dropRoot()
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	// Our own directory under os.TempDir(): t.TempDir()'s parents are 0700
	// and not traversable by the unprivileged user.
	dir, err := os.MkdirTemp("", "testsvc-pg-")
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	removeDir := func() { _ = os.RemoveAll(dir) }
	if cred != nil {
		if err := os.Chown(dir, uid, gid); err != nil {
			removeDir()
			return nil, fmt.Errorf("postgres: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	env := []string{"LC_ALL=C", "LANG=C", "HOME=" + dir, "PATH=" + os.Getenv("PATH")}

	if err := initCluster(initdb, dir, data, env, cred); err != nil {
		removeDir()
		return nil, err
	}
	initTook := time.Since(begin)

	var lastErr error
	for try := 0; try < startTries; try++ {
		port, err := freePort()
		if err != nil {
			removeDir()
			return nil, fmt.Errorf("postgres: %w", err)
		}
		logPath := filepath.Join(dir, fmt.Sprintf("postgres-%d.log", try))
		cmd := exec.Command(postgres,
			"-D", data,
			"-p", strconv.Itoa(port),
			"-k", dir,
			"-c", "listen_addresses=127.0.0.1",
			"-c", "fsync=off",
			"-c", "synchronous_commit=off",
			"-c", "full_page_writes=off",
			"-c", "max_connections="+strconv.Itoa(PostgresMaxConnections),
			"-c", "shared_buffers="+pgSharedBuffers,
		)
		cmd.Dir, cmd.Env = dir, env
		p, err := start(cmd, logPath, cred)
		if err != nil {
			removeDir()
			return nil, fmt.Errorf("postgres: %w", err)
		}
		dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
		if err := p.waitReady(func(ctx context.Context) error { return pgPing(ctx, dsn) }); err != nil {
			p.stop(syscall.SIGKILL)
			lastErr = fmt.Errorf("%w\n%s", err, tail(logPath))
			continue
		}
		var once sync.Once
		return &pgServer{
			dsn: dsn,
			ready: fmt.Sprintf("postgres ready on 127.0.0.1:%d in %v (initdb %v)", port,
				time.Since(begin).Round(time.Millisecond), initTook.Round(time.Millisecond)),
			// SIGQUIT is postgres's immediate shutdown (pg_ctl stop -m immediate).
			stop: func() { once.Do(func() { p.stop(syscall.SIGQUIT); removeDir() }) },
		}, nil
	}
	removeDir()
	return nil, fmt.Errorf("postgres did not start: %w", lastErr)
}

// initCluster makes a fresh cluster in data: a copy of the cluster
// initdb made once for this initdb binary, kept in the user's cache
// directory as Go keeps its build cache (a copy takes a tenth of initdb's
// second of CPU), or, when there is none yet, initdb's, which is then kept
// there. Without a cache directory (or when a copy fails) it runs initdb.
func initCluster(initdb, dir, data string, env []string, cred *syscall.Credential) error {
	tmpl := templateDir(initdb)
	if tmpl != "" {
		if _, err := os.Stat(filepath.Join(tmpl, "PG_VERSION")); err == nil {
			if exec.Command("cp", "-a", tmpl, data).Run() == nil {
				return nil
			}
			_ = os.RemoveAll(data)
		}
	}
	init := exec.Command(initdb, "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C")
	init.Dir, init.Env = dir, env
	init.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := init.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if tmpl != "" {
		keepTemplate(data, tmpl)
	}
	return nil
}

// templateDir is where the cluster initdb makes is kept for the next
// server: under the user's cache directory, named by the binary's path,
// size and time, so that another PostgreSQL makes its own; "" when there
// is no cache directory.
func templateDir(initdb string) string {
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(initdb)
	if err != nil {
		return ""
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d\x00%d", initdb, fi.Size(), fi.ModTime().UnixNano())
	return filepath.Join(cache, "idemcheck-testsvc", fmt.Sprintf("pgdata-%016x", h.Sum64()))
}

// keepTemplate copies a fresh cluster to tmpl: into a directory of its
// own beside it, renamed into place whole, so that a server started at the
// same time by another test binary copies either all of it or none. The
// first to finish keeps its copy; a failure keeps nothing.
func keepTemplate(data, tmpl string) {
	if err := os.MkdirAll(filepath.Dir(tmpl), 0o755); err != nil {
		return
	}
	part, err := os.MkdirTemp(filepath.Dir(tmpl), "part-")
	if err != nil {
		return
	}
	defer os.RemoveAll(part)
	copied := filepath.Join(part, "data")
	if exec.Command("cp", "-a", data, copied).Run() != nil {
		return
	}
	_ = os.Rename(copied, tmpl) // another's copy may be there first: keep it
}

// sharing is set by Main: Postgres then hands out databases on sharedPG.
var sharing atomic.Bool

// sharedPG is the server a package's tests share under Main.
var sharedPG sharedServer

// sharedServer is a Postgres started at its first database and stopped
// by Main.
type sharedServer struct {
	mu  sync.Mutex
	srv *pgServer
	err error // why it did not start: every later test is told the same
	n   int   // databases created
}

// database creates a fresh database on the shared server, starting the
// server first if it is not running, and returns its DSN.
func (s *sharedServer) database(bins []string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil && s.err == nil {
		s.srv, s.err = startPostgres(bins)
	}
	if s.err != nil {
		return "", s.err
	}
	s.n++
	name := fmt.Sprintf("testsvc_%d", s.n)
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	c, err := pgx.Connect(ctx, s.srv.dsn)
	if err != nil {
		return "", fmt.Errorf("postgres: %w", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("postgres: create database %s: %w", name, err)
	}
	return strings.Replace(s.srv.dsn, "/postgres?", "/"+name+"?", 1), nil
}

// stop stops the shared server, if it started.
func (s *sharedServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.stop()
	}
}

// Main runs a package's tests, m.Run, with one Postgres server the
// tests share (see Postgres), and stops it after them; it returns the
// exit code for os.Exit. A package calls it from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testsvc.Main(m)) }
//
// Tests on a shared server must not need a server of their own: one that
// stops its server, or reads the server's global state, asks for
// PostgresWithStop.
func Main(m *testing.M) int {
	sharing.Store(true)
	defer sharedPG.stop()
	defer stopSharedRabbit()
	return m.Run()
}

// dropRoot returns the credential to run postgres under when we are root
// (user postgres, else nobody), or nil when we are not.
func dropRoot() (cred *syscall.Credential, uid, gid int, err error) {
	if os.Geteuid() != 0 {
		return nil, -1, -1, nil
	}
	var u *user.User
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("running as root and no unprivileged user (postgres, nobody) to run initdb: %w", err)
	}
	uid, err = strconv.Atoi(u.Uid)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("uid of %s: %w", u.Username, err)
	}
	gid, err = strconv.Atoi(u.Gid)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("gid of %s: %w", u.Username, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid, gid, nil
}

// freePort asks the kernel for a free 127.0.0.1 port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// proc is a running server process.
type proc struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, valid after done
}

// start runs cmd in its own process group with its output in logPath and a
// parent-death SIGKILL, as cred when not nil.
func start(cmd *exec.Cmd, logPath string, cred *syscall.Credential) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(cmd.Path), err)
	}
	p := &proc{cmd: cmd, log: f, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// waitReady polls probe until it succeeds, the process exits, or readyTimeout.
func (p *proc) waitReady(probe func(context.Context) error) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := probe(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready: %v", filepath.Base(p.cmd.Path), p.err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v: %w", filepath.Base(p.cmd.Path), readyTimeout, err)
		}
		time.Sleep(pollEvery)
	}
}

// stop sends sig, waits up to stopTimeout, then kills the process group.
func (p *proc) stop(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// redisPing sends an inline PING and expects +PONG.
func redisPing(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("ping answered %q", strings.TrimSpace(line))
	}
	return nil
}

// pgPing connects and runs SELECT 1.
func pgPing(ctx context.Context, dsn string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	var one int
	return c.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// tail returns the last lines of a log file for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
