//go:build unix

package cmd

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/childlab"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

var crashNS atomic.Int64

// auditCrashed audits C28 on a lab served by a child process on Postgres,
// killed with kill -9 while a charge is in flight and started again.
func auditCrashed(t *testing.T, bugs ...string) (ExitCode, checks.ContractCheck, string) {
	t.Helper()
	// A charge takes 300 ms at the processor: the kill command (a shell
	// and a kill, a few milliseconds, more on a loaded machine) lands
	// while it is in flight.
	c := childlab.StartSlow(t, 300*time.Millisecond, testsvc.Postgres(t), fmt.Sprintf("crash%d", crashNS.Add(1)), bugs...)
	code, sc, out := runAudit(t, labAuditArgs(c.URL, "--checks", "C28", "--lease", "2s",
		"--kill-cmd", childlab.Shell(c.Stop), "--start-cmd", childlab.Shell(c.Start), "--ready", "GET /healthz")...)
	return code, checkResults(sc)["C28"], out
}

// C28: a lab killed mid-charge and restarted processes the retry once
// (its in-flight record's lease runs out within the declared one); with
// crash-stuck the record outlives the crash and the key answers 409 for
// good, which C28 alone catches.
func TestAuditCrashInFlight(t *testing.T) {
	t.Parallel()
	testsvc.Need(t, testsvc.PostgresServer)
	t.Run("correct", func(t *testing.T) {
		t.Parallel()
		code, c, out := auditCrashed(t)
		if c.Result != checks.Pass || code != ExitOK {
			t.Errorf("C28 on the correct lab: %s (%s), exit %d; want pass, 0\n%s", c.Result, c.Summary, code, out)
		}
	})
	t.Run("crash-stuck", func(t *testing.T) {
		t.Parallel()
		code, c, out := auditCrashed(t, "crash-stuck")
		if c.Result != checks.Fail || c.Severity != checks.High || !strings.Contains(c.Summary, "stuck") || code != ExitFailed {
			t.Errorf("C28 on crash-stuck: %s %s (%s), exit %d; want a high failure naming the stuck key, 1\n%s", c.Result, c.Severity, c.Summary, code, out)
		}
	})
}

// --kill-cmd without --ready, and --start-cmd alone, are refused before
// anything is sent.
func TestAuditCrashFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--kill-cmd", "true"},
		{"--start-cmd", "true"},
		{"--kill-cmd", "true", "--ready", "/healthz"},
	} {
		r := runMain(t, nil, append([]string{"audit", "POST", "http://127.0.0.1:1/charges", "-d", "{}"}, args...)...)
		if r.code != ExitUsage || !strings.Contains(r.err, "--") {
			t.Errorf("audit %v: exit %d, want %d with the flag named\n%s", args, r.code, ExitUsage, r.err)
		}
	}
}
