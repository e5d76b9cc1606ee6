package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/testenv"
)

// TestDemo runs the whole demo, then check DIR on its --out, which must
// re-judge every saved scenario offline as the demo judged them.
func TestDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runMain(t, nil, "demo", "--ops", "40", "--out", dir)
	if r.code != ExitOK {
		t.Fatalf("demo: exit %d, want 0\n%s%s", r.code, r.out, r.err)
	}
	for _, want := range []string{"19 of 19 expectations met", "caught ✓", "held ✓", "customers charged more than once", "likes 0 →", "OVERHEAD"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.out)
		}
	}
	for _, name := range []string{"charges-lost-ack", "charges-lost-ack-naive", "debit-cas"} {
		for _, f := range []string{"report.json", "history.jsonl"} {
			if _, err := os.Stat(filepath.Join(dir, name, f)); err != nil {
				t.Errorf("demo did not write %s/%s: %v", name, f, err)
			}
		}
	}
	c := runMain(t, nil, "check", dir)
	if c.code != ExitOK {
		t.Fatalf("check %s: exit %d, want 0\n%s%s", dir, c.code, c.out, c.err)
	}
	if n := strings.Count(c.out, "result: MET"); n != 19 {
		t.Errorf("check of the demo dir judged %d runs met, want 19\n%s", n, c.out)
	}
	if e := runMain(t, nil, "check", t.TempDir()); e.code != ExitUsage || !strings.Contains(e.err, "no saved run") {
		t.Errorf("check of an empty dir: exit %d, stderr %q", e.code, e.err)
	}
}

// TestDemoCatchesSeededBug: with --bug the protected endpoint is shown
// broken and the demo exits 1. One pair is enough to show it (DemoOptions.Only);
// TestDemo runs them all.
func TestDemoCatchesSeededBug(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	f := &Factory{Streams: Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Getenv: func(string) string { return "" }}
	c := NewCmdDemo(f, func(ctx context.Context, o *DemoOptions) error {
		o.Only = []string{"charges-lost-ack"}
		return demoRun(ctx, o)
	})
	c.SilenceUsage, c.SilenceErrors = true, true // as under the root
	dir := t.TempDir()
	c.SetArgs([]string{"--ops", "40", "--out", dir, "--bug", "no-key"})
	r := result{report(&errb, c.Execute()), out.String(), errb.String()}
	if r.code != ExitFailed {
		t.Fatalf("demo --bug no-key: exit %d, want %d\n%s%s", r.code, ExitFailed, r.out, r.err)
	}
	if !strings.Contains(r.out, "BROKEN ✗") {
		t.Errorf("demo --bug no-key does not show the broken protected endpoint:\n%s", r.out)
	}
	// Each violated invariant says which fault came before its violations:
	// the lost acks the scenario injects on the first attempt.
	raw, err := os.ReadFile(filepath.Join(dir, "charges-lost-ack", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct{ Verdicts []checks.Verdict }
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Verdicts {
		if v.Status != checks.Fail {
			continue
		}
		a := v.Attribution
		if a == nil || len(a.Faults) == 0 || a.Faults[0].Fault != "drop_ack" || a.Faults[0].Attempt != 1 || a.Faults[0].Violating != a.Violating {
			t.Errorf("%s: attribution %+v, want every violating op blamed on drop_ack on attempt 1", v.Invariant, a)
		}
	}
}

func TestDemoOnRedisAndPostgres(t *testing.T) {
	testenv.SkipUnlessLong(t)
	be := realBackend(t)
	r := runMain(t, nil, "demo", "--ops", "40", "--out", t.TempDir(), "--store", be.store, "--ledger", be.ledger, "--namespace", "demo_test")
	if r.code != ExitOK {
		t.Fatalf("demo on Redis+Postgres: exit %d, want 0\n%s%s", r.code, r.out, r.err)
	}
	if !strings.Contains(r.err, "store redis://") || !strings.Contains(r.err, "ledger postgres://") {
		t.Errorf("demo does not say it runs on Redis and Postgres:\n%s", r.err)
	}
	// Again on the same servers, which kept the first demo's data.
	r = runMain(t, nil, "demo", "--ops", "40", "--out", t.TempDir(), "--store", be.store, "--ledger", be.ledger, "--namespace", "demo_test")
	if r.code != ExitOK {
		t.Fatalf("second demo on the same Redis+Postgres: exit %d, want 0\n%s%s", r.code, r.out, r.err)
	}
}
