package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestDemo runs the whole demo, as the README's first command does, then
// check DIR on its --out, which must re-judge every saved scenario
// offline as the demo judged them. The fast suite runs the demo's pairs
// in three parts side by side (each its own lab) and checks the same of
// each part: the scenarios run one after the other, and most of their
// time is waiting (quiet periods, late replays).
func TestDemo(t *testing.T) {
	t.Parallel()
	pairs := scenarios.Showcase()
	total := 0
	for _, p := range pairs {
		total++
		if scenarios.HasNaive(p) {
			total++
		}
	}
	if testenv.Long() {
		demoPart(t, nil, total, true)
		return
	}
	// The replays wait 1.5 s each, the timeouts and duplicates longer than
	// the rest: they are dealt first, so that each part gets one of them
	// at most.
	slow := []string{"charges-replay", "charges-duplicate", "charges-timeout"}
	dealt := slices.Concat(slow, slices.DeleteFunc(slices.Clone(pairs), func(p string) bool { return slices.Contains(slow, p) }))
	if len(dealt) != len(pairs) {
		t.Fatalf("the showcase %v lacks one of %v", pairs, slow)
	}
	parts := make([][]string, 5)
	for i, p := range dealt {
		parts[i%len(parts)] = append(parts[i%len(parts)], p)
	}
	var mu sync.Mutex
	var said strings.Builder
	t.Run("parts", func(t *testing.T) {
		for i, part := range parts {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				n := 0
				for _, p := range part {
					n++
					if scenarios.HasNaive(p) {
						n++
					}
				}
				out := demoPart(t, part, n, false)
				mu.Lock()
				said.WriteString(out)
				mu.Unlock()
			})
		}
	})
	for _, want := range []string{"caught ✓", "held ✓", "customers charged more than once", "likes 0 →", "OVERHEAD"} {
		if !strings.Contains(said.String(), want) {
			t.Errorf("the demo's parts never said %q:\n%s", want, said.String())
		}
	}
}

// demoPart runs the demo on pairs (nil: all of them, as a user does),
// expecting n scenarios, every one met, then check DIR on its --out;
// it returns the demo's output.
func demoPart(t *testing.T, pairs []string, n int, whole bool) string {
	dir := t.TempDir()
	var r result
	if whole {
		r = runMain(t, nil, "demo", "--ops", "40", "--out", dir)
	} else {
		var out, errb bytes.Buffer
		f := &Factory{Streams: Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Getenv: func(string) string { return "" }}
		c := NewCmdDemo(f, func(ctx context.Context, o *DemoOptions) error {
			o.Only = pairs
			return demoRun(ctx, o)
		})
		c.SilenceUsage, c.SilenceErrors = true, true // as under the root
		c.SetArgs([]string{"--ops", "40", "--out", dir})
		r = result{report(&errb, c.Execute()), out.String(), errb.String()}
	}
	if r.code != ExitOK {
		t.Fatalf("demo %v: exit %d, want 0\n%s%s", pairs, r.code, r.out, r.err)
	}
	if want := fmt.Sprintf("%d of %d expectations met", n, n); !strings.Contains(r.out, want) {
		t.Errorf("demo %v output lacks %q:\n%s", pairs, want, r.out)
	}
	if whole {
		for _, want := range []string{"caught ✓", "held ✓", "customers charged more than once", "likes 0 →", "OVERHEAD"} {
			if !strings.Contains(r.out, want) {
				t.Errorf("demo output lacks %q:\n%s", want, r.out)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		for _, f := range []string{"report.json", "history.jsonl"} {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), f)); err != nil {
				t.Errorf("demo did not write %s/%s: %v", e.Name(), f, err)
			}
		}
	}
	if len(entries) != n {
		t.Errorf("demo %v wrote %d run directories, want %d", pairs, len(entries), n)
	}
	ch := runMain(t, nil, "check", dir)
	if ch.code != ExitOK {
		t.Fatalf("check %s: exit %d, want 0\n%s%s", dir, ch.code, ch.out, ch.err)
	}
	if got := strings.Count(ch.out, "result: MET"); got != n {
		t.Errorf("check of the demo dir judged %d runs met, want %d\n%s", got, n, ch.out)
	}
	if whole {
		if e := runMain(t, nil, "check", t.TempDir()); e.code != ExitUsage || !strings.Contains(e.err, "no saved run") {
			t.Errorf("check of an empty dir: exit %d, stderr %q", e.code, e.err)
		}
	}
	return r.out
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

// TestDemoWithBroker: given a broker (--consumer), the demo runs the
// lab's queue consumers on it and the built-ins that publish there: the
// naive consumer caught, the protected one held, beside the HTTP pairs.
func TestDemoWithBroker(t *testing.T) {
	t.Parallel()
	broker := testsvc.Redis(t)
	var out, errb bytes.Buffer
	f := &Factory{Streams: Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, Getenv: func(string) string { return "" }}
	c := NewCmdDemo(f, func(ctx context.Context, o *DemoOptions) error {
		o.Only = []string{"likes-duplicate"}
		return demoRun(ctx, o)
	})
	c.SilenceUsage, c.SilenceErrors = true, true // as under the root
	c.SetArgs([]string{"--ops", "40", "--out", t.TempDir(), "--consumer", broker})
	r := result{report(&errb, c.Execute()), out.String(), errb.String()}
	if r.code != ExitOK || !strings.Contains(r.out, "4 of 4 expectations met") {
		t.Fatalf("demo --consumer %s: exit %d, want 0 and 4 of 4 expectations met\n%s%s", broker, r.code, r.out, r.err)
	}
	for _, want := range []string{`stream-charges +naive .*caught ✓`, `stream-charges +protected .*held ✓`} {
		if !regexp.MustCompile(want).MatchString(r.out) {
			t.Errorf("demo output lacks a line matching %q:\n%s", want, r.out)
		}
	}
}
