//go:build unix

// Package childlab serves the lab in a child process of a test binary,
// for the tests of a nemesis: a process that a command kills and another
// starts again, as a user's scripts would do to their API. A test
// binary's TestMain calls Serve first; Start starts the child.
package childlab

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/lab"
)

// The child's configuration, from its environment: its address (set: the
// test binary serves the lab instead of running tests), its ledger (a
// Postgres URL, or memory), its namespace in that ledger and its bugs.
const (
	addrEnv      = "IDEMCHECK_CHILDLAB_ADDR"
	ledgerEnv    = "IDEMCHECK_CHILDLAB_LEDGER"
	namespaceEnv = "IDEMCHECK_CHILDLAB_NAMESPACE"
	bugsEnv      = "IDEMCHECK_CHILDLAB_BUGS"
	latencyEnv   = "IDEMCHECK_CHILDLAB_PROCESSOR_LATENCY"
)

// LockTTL is the child lab's in-flight lease: a correct lab's key in
// flight when it was killed is usable again this soon.
const LockTTL = time.Second

// Serve serves the lab and never returns when this process is a child
// lab; else it returns at once. Call it first in TestMain.
func Serve() {
	addr := os.Getenv(addrEnv)
	if addr == "" {
		return
	}
	cfg := lab.Config{LockTTL: LockTTL} // a charge takes 20 ms at the processor
	if bugs := os.Getenv(bugsEnv); bugs != "" {
		cfg.Bugs = strings.Split(bugs, ",")
	}
	if d, err := time.ParseDuration(os.Getenv(latencyEnv)); err == nil && d > 0 {
		cfg.ProcessorLatency = d
	}
	b := lab.Backends{Store: "memory", Ledger: "memory", Namespace: os.Getenv(namespaceEnv)}
	if l := os.Getenv(ledgerEnv); l != "" {
		b.Ledger = l
	}
	if _, err := lab.Start(context.Background(), cfg, b, 1, addr); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
	select {}
}

// Lab is a lab served by a child process of the test binary, with the
// commands that stop and start it (for a nemesis or an audit's crash).
type Lab struct {
	URL         string
	Start, Stop []string
	pidFile     string
}

// Start starts the lab in a child process on a free port, waits until
// it answers, and kills whichever child serves it when the test ends.
// ledger and namespace choose its ledger ("" for memory); bugs are its
// seeded bugs. The child runs the test binary, whose TestMain must call
// Serve.
func Start(t testing.TB, ledger, namespace string, bugs ...string) *Lab {
	t.Helper()
	return StartSlow(t, 0, ledger, namespace, bugs...)
}

// StartSlow is Start with the lab's card processor taking latency per
// charge (0: the lab's default), so that a request is surely in flight
// for that long: a kill that takes a few milliseconds to land still
// lands mid-request on a loaded machine.
func StartSlow(t testing.TB, latency time.Duration, ledger, namespace string, bugs ...string) *Lab {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	c := &Lab{URL: "http://" + addr, pidFile: filepath.Join(dir, "lab.pid")}
	// The start command leaves the lab running in the background, its
	// output in a file, its pid in another: as a user's start script would.
	c.Start = []string{"sh", "-c", `env ` + addrEnv + `="$1" ` + ledgerEnv + `="$2" ` + namespaceEnv + `="$3" ` + bugsEnv + `="$4" ` + latencyEnv + `="$7" "$0" -test.run='^$' >>"$5" 2>&1 & echo $! >"$6"`,
		os.Args[0], addr, ledger, namespace, strings.Join(bugs, ","), filepath.Join(dir, "lab.log"), c.pidFile, latency.String()}
	c.Stop = []string{"sh", "-c", `kill -9 "$(cat "$0")"`, c.pidFile}
	t.Cleanup(func() {
		if pid := c.PID(); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if out, err := exec.Command(c.Start[0], c.Start[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("starting the lab: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(c.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "lab.log"))
			t.Fatalf("the child lab did not answer within 10s: %v\n%s", err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// PID is the pid of the child serving the lab now; 0 when unknown.
func (c *Lab) PID() int {
	b, err := os.ReadFile(c.pidFile)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// Shell is argv as one shell command line, each word quoted.
func Shell(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
