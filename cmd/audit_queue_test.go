package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/testsvc"
	"github.com/idemcheck/idemcheck/lab"
)

// TestAuditQueueRefusals: a queue scenario's audit plans the consumer
// battery (--dry-run sends nothing), and refuses what it cannot do,
// before anything is published.
func TestAuditQueueRefusals(t *testing.T) {
	t.Parallel()
	broker := "redis://127.0.0.1:1/0" // nothing listens: nothing may be sent
	r := runMain(t, nil, "audit", "stream-charges", "--target", broker, "--service", "http://127.0.0.1:1", "--dry-run")
	if r.code != ExitOK {
		t.Fatalf("--dry-run: exit %d\n%s%s", r.code, r.out, r.err)
	}
	for _, want := range []string{"nothing sent", "Q01", "duplicate-publish", "Q02", "skipped: the scenario has no consumer_cut", "Q03", "Q04", "poison-then-valid"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("--dry-run output lacks %q:\n%s", want, r.out)
		}
	}
	for _, tc := range []struct {
		args []string
		code ExitCode
		says string
	}{
		{[]string{"--out", "/dev/null/x"}, ExitRuntime, "nothing was sent"},
		{[]string{"--checks", "C06"}, ExitUsage, "Q01 to Q04"},
		{[]string{"--as", "Authorization: Bearer bob"}, ExitUsage, "--as does not apply to a queue scenario"},
		{[]string{"--ca-cert", "/nonexistent/ca.pem"}, ExitUsage, "ca.pem"},
		{nil, ExitRuntime, "unreachable"},
	} {
		args := append([]string{"audit", "stream-charges", "--target", broker, "--service", "http://127.0.0.1:1"}, tc.args...)
		r := runMain(t, nil, args...)
		if r.code != tc.code || !strings.Contains(r.err, tc.says) {
			t.Errorf("%v: exit %d, %q; want %d saying %q", tc.args, r.code, r.err, tc.code, tc.says)
		}
	}
	// and the other way: --service on an HTTP endpoint's audit
	r = runMain(t, nil, "audit", "POST", "http://127.0.0.1:1/charges", "--service", "http://127.0.0.1:2", "--dry-run")
	if r.code != ExitUsage || !strings.Contains(r.err, "--service names the API behind a queue") {
		t.Errorf("--service on an HTTP audit: exit %d, %q; want it refused", r.code, r.err)
	}
}

// TestAuditQueueConsumer: the lab's naive consumer on a real Redis fails
// the consumer battery's duplicate publish (exit 1), the protected one
// passes it (exit 0), and the scorecard reaches a --report file.
func TestAuditQueueConsumer(t *testing.T) {
	testsvc.Need(t, testsvc.RedisServer)
	t.Parallel()
	broker := testsvc.Redis(t)
	l, err := lab.Start(context.Background(), lab.Config{}, lab.Backends{Store: "memory", Ledger: "memory", Consumer: broker}, 1, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	for _, tc := range []struct {
		scenario string
		code     ExitCode
		result   checks.Status
	}{{"stream-charges-naive", ExitFailed, checks.Fail}, {"stream-charges", ExitOK, checks.Pass}} {
		path := filepath.Join(t.TempDir(), "card.json")
		r := runMain(t, nil, "audit", tc.scenario, "--target", broker, "--service", l.URL, "--checks", "Q01", "--report", "json="+path)
		if r.code != tc.code {
			t.Fatalf("%s: exit %d, want %d\n%s%s", tc.scenario, r.code, tc.code, r.out, r.err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var card checks.Scorecard
		if err := json.Unmarshal(raw, &card); err != nil || len(card.Checks) != 4 || card.Checks[0].Result != tc.result {
			t.Fatalf("%s: scorecard %s (%v), want Q01 %s", tc.scenario, raw, err, tc.result)
		}
	}
	// --out keeps each check's run; check judges them again alike
	out := filepath.Join(t.TempDir(), "audit")
	r := runMain(t, nil, "audit", "stream-charges-naive", "--target", broker, "--service", l.URL, "--checks", "Q01,Q03", "--retention", "100ms", "--out", out)
	if r.code != ExitFailed || !strings.Contains(r.err, "audit written to "+out) {
		t.Fatalf("--out: exit %d, want %d\n%s", r.code, ExitFailed, r.err)
	}
	for _, f := range []string{"scorecard.json", "Q01-duplicate-publish/history.jsonl", "Q03-late-redelivery-first/history.jsonl", "Q03-late-redelivery/report.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("--out lacks %s: %v", f, err)
		}
	}
	if r := runMain(t, nil, "audit", "stream-charges", "--target", broker, "--service", l.URL, "--out", out); r.code != ExitUsage || !strings.Contains(r.err, "already holds saved runs") {
		t.Errorf("--out over saved runs: exit %d, want %d refused\n%s", r.code, ExitUsage, r.err)
	}
	r = runMain(t, nil, "check", out, "--format", "json")
	var rep struct {
		Runs []struct {
			Result checks.Result `json:"result"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != ExitFailed || len(rep.Runs) != 3 {
		t.Fatalf("check %s: exit %d, %d runs (%v), want 3 runs and exit %d\n%s%s", out, r.code, len(rep.Runs), err, ExitFailed, r.out, r.err)
	}
	got := map[checks.Result]int{}
	for _, s := range rep.Runs {
		got[s.Result]++
	}
	if got[checks.NotMet] != 2 || got[checks.Met] != 1 { // Q01 and Q03's republish caught; Q03's first publish sound
		t.Errorf("check %s judged %v, want 2 not met and 1 met", out, got)
	}
}
