// Package testenv holds the switches every package's tests share.
//
// The default suite (go test ./...) covers every package's logic in well
// under a minute. The long end-to-end sweeps (seed sweeps, the detection
// matrix on real Redis and Postgres, fail-closed runs, long fuzzing and
// benchmarks) run when IDEMCHECK_LONG=1, as .ci/run always sets it.
//
// The fast suite's budget is 45 s on 2 cores, and no test in it may pass or
// fail with the machine's load: a test that waits on a clock runs on
// testing/synctest's fake one where it can (HandlerTransport serves its
// HTTP in the bubble), tests that wait run side by side (Parallel), and a
// test that measures a rate or a latency is a Timing test.
package testenv

import (
	"flag"
	"os"
	"strconv"
	"testing"
	"time"
)

// LongEnv is the environment variable that turns the long suite on.
const LongEnv = "IDEMCHECK_LONG"

// Long reports whether the long suite is on.
func Long() bool {
	v := os.Getenv(LongEnv)
	return v != "" && v != "0" && v != "false"
}

// SkipUnlessLong skips t unless the long suite is on, saying how to run it.
func SkipUnlessLong(t testing.TB) {
	t.Helper()
	if !Long() {
		t.Skipf("long test: run with %s=1 (as .ci/run does)", LongEnv)
	}
}

// Pick returns long when the long suite is on, else short: a sweep's size.
func Pick[T any](short, long T) T {
	if Long() {
		return long
	}
	return short
}

// Timing skips t under the race detector, whose slowdown (several times,
// unevenly) makes a measured rate or latency meaningless, and when
// IDEMCHECK_SKIP_TIMING is set: .ci/without-services sets it, as its
// packages run side by side. .ci/run runs every Timing test again
// without -race, one package at a time, so each is run where its figures
// mean something.
func Timing(t testing.TB) {
	t.Helper()
	switch {
	case Race:
		t.Skip("timing test: meaningless under -race; .ci/run runs it without")
	case os.Getenv("IDEMCHECK_SKIP_TIMING") != "":
		t.Skip("timing test: IDEMCHECK_SKIP_TIMING is set; .ci/run runs it alone")
	}
}

// Parallel sets -test.parallel to n unless the command line gave one: a
// package whose tests mostly wait (on timers, on a server) runs more of
// them at once than the default, GOMAXPROCS, which on 2 cores leaves the
// machine idle while the tests queue. Call it from TestMain before m.Run.
func Parallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	explicit := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			explicit = true
		}
	})
	if !explicit {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// Bound is d, how long a test lets something take that must end (a bound
// that catches a hang, not a measure), scaled for the race detector: it
// slows code several times over, unevenly, more so on a loaded machine.
// Without -race it is d; with it, 10×d.
func Bound(d time.Duration) time.Duration {
	if Race {
		return 10 * d
	}
	return d
}
