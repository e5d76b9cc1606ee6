package cmd

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/scenarios"
)

// TestRunRefusesLinkBelowOut: a symbolic link planted in a shared --out
// (out/charges-lost-ack -> victim) is refused before any request is sent,
// and nothing is written through it.
func TestRunRefusesLinkBelowOut(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	root := t.TempDir()
	out, victim := filepath.Join(root, "out"), filepath.Join(root, "victim")
	for _, d := range []string{out, victim} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(victim, filepath.Join(out, "charges-lost-ack")); err != nil {
		t.Fatal(err)
	}
	r := runMain(t, nil, "run", "charges-lost-ack", "likes-duplicate", "--target", target, "--ops", "5", "--out", out, "--quiet")
	if r.code != ExitUsage || !strings.Contains(r.err, "symbolic link") {
		t.Errorf("exit %d, want %d and the link named\n%s", r.code, ExitUsage, r.err)
	}
	if left, _ := os.ReadDir(victim); len(left) != 0 {
		t.Errorf("files written through the link: %v", left)
	}
}

// TestBenchHidesQueryValues: bench overhead states what it will send with
// the path's query values masked (an api_key in the URL never reaches
// stderr, text or Markdown).
func TestBenchHidesQueryValues(t *testing.T) {
	t.Parallel()
	const secret = "SeCrEt-4q7z"
	r := runMain(t, nil, "bench", "overhead", "POST", "http://user:pw-"+secret+"@127.0.0.1:1/charges?api_key="+secret, "--baseline-no-key", "--dry-run")
	if r.code != ExitOK || !strings.Contains(r.err, "/charges?api_key=xxxxx") {
		t.Errorf("exit %d, want 0 and the plan with the query masked:\n%s", r.code, r.err)
	}
	if strings.Contains(r.out+r.err, secret) {
		t.Errorf("the secret reached the output:\n%s%s", r.out, r.err)
	}
}

// TestPreflightTimeoutIsNotAnInterrupt: a target that accepts connections
// and never answers runs the setup request out of time: exit 4 (the
// target did not answer), not 130 (no signal was sent).
func TestPreflightTimeoutIsNotAnInterrupt(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn // held open, never answered
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	for _, name := range []string{"debit-cas", "charges-lost-ack"} { // with setup requests, and without (the preflight)
		r := runMain(t, nil, "run", name, "--target", "http://"+l.Addr().String(), "--request-timeout", "200ms", "--quiet")
		if r.code != ExitRuntime || !strings.Contains(r.err, "did not answer") {
			t.Errorf("%s against a silent target: exit %d, want %d and why\n%s", name, r.code, ExitRuntime, r.err)
		}
	}
}

// TestBoundsRefused: a count, size or duration past its documented bound
// is a usage error that names the bound, before anything is sent or
// started; --max-requests 0 is one in every command that has it.
func TestBoundsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"proxy", "tcp", "--upstream", "127.0.0.1:1", "--latency", "1h"}, "want 0 to 1m0s"},
		{[]string{"proxy", "tcp", "--upstream", "127.0.0.1:1", "--jitter", "1000h"}, "want 0 to 1m0s"},
		{[]string{"lab", "--processor-latency", "-5s"}, "want 0 to 1m0s"},
		{[]string{"lab", "--key-ttl", "0s"}, "at least 1s"},
		{[]string{"demo", "--key-ttl", "0s"}, "at least 1s"},
		{[]string{"bench", "overhead", "POST", "http://127.0.0.1:1/c", "--baseline-no-key", "--max-overhead", "p50=NaN%"}, "not a percentage"},
		{[]string{"bench", "overhead", "POST", "http://127.0.0.1:1/c", "--baseline-no-key", "--max-requests", "0"}, "the default is 1000000"},
		{[]string{"bench", "store", "--redis", "redis://127.0.0.1:1/0", "--value-size", "400000000"}, "16 MiB"},
		{[]string{"audit", "POST", "http://127.0.0.1:1/c", "--max-requests", "0"}, "the default is 500"},
		{[]string{"proxy", "--target", "http://127.0.0.1:1", "--fault", "duplicate=0.5,copies=100000"}, "at most 100 copies"},
		{[]string{"run", "charges-lost-ack", "--target", "http://127.0.0.1:1", "--phase", "prepare", "--shards", "100000", "--out", t.TempDir()}, "at most 1000 load processes"},
		{[]string{"run", "charges-lost-ack", "--target", "http://127.0.0.1:1", "--ops", "400", "--phase", "prepare", "--shards", "500", "--out", t.TempDir()}, "use --shards 400 or fewer"},
	} {
		r := runMain(t, nil, tc.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, tc.says) {
			t.Errorf("idemcheck %s: exit %d, want %d and %q\n%s", strings.Join(tc.args, " "), r.code, ExitUsage, tc.says, r.err)
		}
	}
}

// TestFailedReadingBeforeSendsNothing: an oracle that cannot read the
// state before the load stops the run there: exit 4, and not one op of
// the load reaches the target (the lab's processor charged nothing).
func TestFailedReadingBeforeSendsNothing(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	sc := writeScenario(t, `name: unreadable
operation:
  method: POST
  path: /charges
  headers: {Authorization: Bearer alice}
  key: {header: Idempotency-Key}
  body: '{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}'
load: {ops: 20, concurrency: 2}
oracles:
  - name: ledger
    effects:
      bulk: {path: /no/such/read, value: $.counts}
invariants:
  - {check: exactly_once, oracle: ledger}
`)
	r := runMain(t, nil, "run", sc, "--target", target, "--quiet")
	if r.code != ExitRuntime || !strings.Contains(r.err, "before the load") {
		t.Errorf("exit %d, want %d and the reason\n%s", r.code, ExitRuntime, r.err)
	}
	resp, err := http.Get(target + "/processor/charges/counts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct{ Counts map[string]int }
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if len(c.Counts) != 0 {
		t.Errorf("the lab charged %d keys: the load was sent although its state could not be read before", len(c.Counts))
	}
}

// TestAuditEffectsWithoutPath: --effects without --effects-path reads the
// whole answer as the count, as the help says (it was refused: "a
// JSONPath is required").
func TestAuditEffectsWithoutPath(t *testing.T) {
	p, err := scenarios.EffectsProbe("GET /charges/count?key={{.Key}}", "", nil)
	if err != nil || p.Value != "$" || p.Method != http.MethodGet {
		t.Errorf("effectsProbe without a path = %+v, %v; want GET and the whole answer ($)", p, err)
	}
	if _, err := fromRequest(scenarios.RequestSpec{Name: "audit", Request: scenarios.Request{Method: "POST", Path: "/c"},
		Key: scenarios.KeyPlace{Header: "Idempotency-Key"}, Targets: []string{"http://127.0.0.1:1"}, Load: scenarios.Load{Ops: 1, Concurrency: 1},
		Oracles:    []scenarios.Oracle{{Name: "effects", Effects: &scenarios.EffectsOracle{PerKey: p}}},
		Invariants: []scenarios.Invariant{{Check: "at_most_once", Oracle: "effects"}}}); err != nil {
		t.Errorf("the audit's scenario with that probe: %v", err)
	}
}
