package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testenv"
)

// payServer is a small payment API: POST /pay charges, keyed by the
// Idempotency-Key header when idempotent is true, and GET /counts reports the
// charges per key.
type payServer struct {
	idempotent bool
	mu         sync.Mutex
	charges    map[string]int
	answers    map[string][]byte
	seq        int
}

func (p *payServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/pay":
		key := r.Header.Get("Idempotency-Key")
		if p.idempotent {
			if b, ok := p.answers[key]; ok {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				w.Write(b)
				return
			}
		}
		p.seq++
		p.charges[key]++
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("ch_%d", p.seq), "amount": 100})
		p.answers[key] = b
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(b)
	case r.Method == http.MethodGet && r.URL.Path == "/counts":
		json.NewEncoder(w).Encode(map[string]any{"counts": p.charges})
	default:
		http.NotFound(w, r)
	}
}

func newPayServer(t *testing.T, idempotent bool) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(&payServer{idempotent: idempotent, charges: map[string]int{}, answers: map[string][]byte{}})
	t.Cleanup(s.Close)
	return s
}

const payScenario = `name: pay
description: one charge per key under lost acks
expect: pass
operation:
  method: POST
  path: /pay
  key: {header: Idempotency-Key}
  body: '{"amount": 100}'
load: {ops: 60, concurrency: 4}
retry: {attempts: 4, backoff: {initial: 1ms, max: 5ms}}
faults:
  - {kind: drop_ack, rate: 0.3}
  - {kind: reset, rate: 0.1}
response:
  fields: {id: "$.id"}
quiet: 10ms
oracles:
  - name: ledger
    effects:
      bulk: {path: /counts, value: "$.counts"}
invariants:
  - {check: exactly_once, oracle: ledger}
  - {check: same_response}
`

func writeScenario(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type result struct {
	code     ExitCode
	out, err string
}

func runMain(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string { return env[k] }
	code := Main(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, getenv)
	return result{code, out.String(), errb.String()}
}

func TestRunCatchesNonIdempotentServer(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, false)
	dir := t.TempDir()
	r := runMain(t, nil, "run", writeScenario(t, payScenario), "--target", srv.URL, "--seed", "7", "--out", dir)
	if r.code != ExitFailed {
		t.Fatalf("run on a naive server: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, ExitFailed, r.out, r.err)
	}
	if !strings.Contains(r.out, "FAIL") || !strings.Contains(r.out, "exactly_once") {
		t.Errorf("report does not show the failed invariant:\n%s", r.out)
	}
	// The evidence names keys that really were charged twice.
	sum := readSummary(t, filepath.Join(dir, "report.json"))
	var exKeys []string
	for _, v := range sum.Verdicts {
		if v.Invariant == "exactly_once" {
			for _, ex := range v.Examples {
				exKeys = append(exKeys, ex.Key)
				if ex.Effects < 2 {
					t.Errorf("example key %s has %d effects; evidence must show a duplicate", ex.Key, ex.Effects)
				}
			}
		}
	}
	if len(exKeys) == 0 {
		t.Fatalf("no example keys in the exactly_once verdict: %+v", sum.Verdicts)
	}
	if !strings.Contains(r.out, exKeys[0]) {
		t.Errorf("text report does not name example key %s:\n%s", exKeys[0], r.out)
	}
	// check DIR re-judges the saved run the same way, offline.
	rc := runMain(t, nil, "check", dir)
	if rc.code != ExitFailed || !strings.Contains(rc.out, exKeys[0]) {
		t.Errorf("check %s: exit %d, want %d, naming %s:\n%s%s", dir, rc.code, ExitFailed, exKeys[0], rc.out, rc.err)
	}
}

func TestRunPassesIdempotentServer(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, true)
	r := runMain(t, nil, "run", writeScenario(t, payScenario), "--target", srv.URL, "--seed", "7")
	if r.code != ExitOK {
		t.Fatalf("run on an idempotent server: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	if !strings.Contains(r.out, "PASS") {
		t.Errorf("no PASS in report:\n%s", r.out)
	}
}

func TestRunExpectViolationSucceedsWhenCaught(t *testing.T) {
	t.Parallel()
	sc := strings.Replace(payScenario, "expect: pass", "expect: violation", 1)
	if r := runMain(t, nil, "run", writeScenario(t, sc), "--target", newPayServer(t, false).URL, "--seed", "3"); r.code != ExitOK {
		t.Errorf("expect violation on a naive server: exit %d, want 0\n%s%s", r.code, r.out, r.err)
	}
	if r := runMain(t, nil, "run", writeScenario(t, sc), "--target", newPayServer(t, true).URL, "--seed", "3"); r.code != ExitFailed {
		t.Errorf("expect violation on an idempotent server: exit %d, want 1\n%s%s", r.code, r.out, r.err)
	}
}

func TestRunSameSeedSameFaults(t *testing.T) {
	t.Parallel()
	run := func(extra ...string) *history.History {
		dir := t.TempDir()
		args := append([]string{"run", writeScenario(t, payScenario), "--target", newPayServer(t, true).URL, "--seed", "99", "--out", dir}, extra...)
		r := runMain(t, nil, args...)
		if r.code != ExitOK {
			t.Fatalf("exit %d\n%s%s", r.code, r.out, r.err)
		}
		return readHistory(t, filepath.Join(dir, "history.jsonl"))
	}
	seqOf := func(h *history.History, withKeys bool) []string {
		var seq []string
		for _, a := range h.Attempts {
			name := fmt.Sprint(a.Op)
			if withKeys {
				name = h.Ops[a.Op].Key
			}
			seq = append(seq, fmt.Sprintf("%s/%d/%s", name, a.N, a.Fault))
		}
		return seq
	}
	// Two runs with the seed: the same faults for the same (op, attempt),
	// but new keys (a random key nonce each), so a stateful target never
	// sees the last run's keys again.
	h1, h2 := run(), run()
	a, b := seqOf(h1, false), seqOf(h2, false)
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("same seed gave different (op, attempt, fault) sequences:\n%v\n%v", a, b)
	}
	if h1.Ops[0].Key == h2.Ops[0].Key || h1.Meta.KeyNonce == h2.Meta.KeyNonce {
		t.Errorf("two runs with one seed sent the same key %s (nonces %d, %d)", h1.Ops[0].Key, h1.Meta.KeyNonce, h2.Meta.KeyNonce)
	}
	// The report's nonce resends the exact keys.
	nonce := fmt.Sprint(h1.Meta.KeyNonce)
	if k1, k3 := seqOf(h1, true), seqOf(run("--key-nonce", nonce), true); strings.Join(k1, ",") != strings.Join(k3, ",") {
		t.Errorf("--seed 99 --key-nonce %s did not resend the first run's keys:\n%v\n%v", nonce, k1, k3)
	}
	injected := 0
	for _, s := range a {
		if !strings.HasSuffix(s, "/") {
			injected++
		}
	}
	if injected == 0 {
		t.Errorf("no fault injected in %d attempts", len(a))
	}
}

func TestRunTargetFromEnv(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, true)
	r := runMain(t, map[string]string{"IDEMCHECK_TARGET": srv.URL}, "run", writeScenario(t, payScenario), "--seed", "1")
	if r.code != ExitOK {
		t.Errorf("target from IDEMCHECK_TARGET: exit %d, want 0\n%s%s", r.code, r.out, r.err)
	}
}

func TestRunBadInput(t *testing.T) {
	t.Parallel()
	garbage := garbageServer(t)
	closed := closedAddr(t)
	ok := newPayServer(t, true).URL
	cases := []struct {
		name     string
		scenario string
		target   string
		code     ExitCode
		want     []string
	}{
		{"malformed yaml", "name: [unclosed\n", ok, ExitUsage, []string{"s.yaml:"}},
		{"unknown field", strings.Replace(payScenario, "retry: {attempts: 4,", "retry: {retires: 4,", 1), ok, ExitUsage, []string{"retires", "attempts"}},
		{"bad duration", strings.Replace(payScenario, "quiet: 10ms", "quiet: 10", 1), ok, ExitUsage, []string{"quiet", "ms"}},
		{"rate and concurrency missing", strings.Replace(payScenario, "load: {ops: 60, concurrency: 4}", "load: {ops: 60}", 1), ok, ExitUsage, []string{"concurrency", "rate"}},
		{"template error", strings.Replace(payScenario, "path: /pay", "path: /pay/{{.Nope", 1), ok, ExitUsage, []string{"operation", "template"}},
		{"missing target", payScenario, "", ExitUsage, []string{"target"}},
		{"unreachable target", payScenario, "http://" + closed, ExitRuntime, []string{"unreachable"}},
		{"target answering garbage", payScenario, "http://" + garbage, ExitRuntime, []string{"pay", "not in HTTP"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"run", writeScenario(t, c.scenario), "--seed", "1"}
			if c.target != "" {
				args = append(args, "--target", c.target)
			}
			r := runMain(t, nil, args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, c.code, r.out, r.err)
			}
			for _, w := range c.want {
				if !strings.Contains(r.err, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, r.err)
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"run"}, {"run", "x.yaml", "--nope"}, {"run", "no-such-builtin"}, {"check"}, {"scenarios", "show", "nope"}, {"run", "x", "--format", "pdf"}} {
		if r := runMain(t, nil, args...); r.code != ExitUsage || r.err == "" {
			t.Errorf("idemcheck %v: exit %d with stderr %q, want %d and a message", args, r.code, r.err, ExitUsage)
		}
	}
}

// garbageServer answers every connection with bytes that are not HTTP.
func garbageServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Read the request first, so the client is waiting for an
			// answer when the garbage comes, not still writing.
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				var got []byte
				// A TLS ClientHello (a record of type 22: the run's probe
				// of whether the target speaks TLS) never holds a blank
				// line: it gets its garbage at once, as from a server
				// that talks first.
				for !bytes.Contains(got, []byte("\r\n\r\n")) && (len(got) == 0 || got[0] != 0x16) {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					got = append(got, buf[:n]...)
				}
				c.Write([]byte("SSH-2.0-not-http\r\n\r\n"))
			}()
		}
	}()
	return ln.Addr().String()
}

func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestRunInterruptedStillReports(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, true)
	sc := strings.Replace(payScenario, "load: {ops: 60, concurrency: 4}", "load: {duration: 30s, concurrency: 4}", 1)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	done := make(chan ExitCode)
	go func() {
		done <- Main(ctx, []string{"run", writeScenario(t, sc), "--target", srv.URL, "--seed", "5", "--out", dir},
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) string { return "" })
	}()
	// Cancel once some attempts were made (the server counted charges).
	waitFor(t, func() bool {
		resp, err := http.Get(srv.URL + "/counts")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var c struct{ Counts map[string]int }
		json.NewDecoder(resp.Body).Decode(&c)
		return len(c.Counts) >= 20
	})
	cancel()
	code := <-done
	if code != ExitInterrupted {
		t.Fatalf("interrupted run: exit %d, want %d\n%s%s", code, ExitInterrupted, out.String(), errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "report.json")); err != nil {
		t.Fatalf("interrupted run wrote no report: %v", err)
	}
	sum := readSummary(t, filepath.Join(dir, "report.json"))
	if !sum.Interrupted || sum.Load.Ops < 20 {
		t.Errorf("report: interrupted=%v ops=%d, want interrupted with the ops that ran", sum.Interrupted, sum.Load.Ops)
	}
	for _, v := range sum.Verdicts {
		if v.Status == checks.Fail {
			t.Errorf("an interrupted run of an idempotent server accused it: %+v", v)
		}
	}
	if !strings.Contains(out.String(), "INTERRUPTED") {
		t.Errorf("text report does not say the run was interrupted:\n%s", out.String())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	// a bound that catches a hang: -race on a loaded machine once took
	// more than 10 s to send a run's first 200 requests
	bound := testenv.Bound(10 * time.Second)
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", bound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A re-run with the same seed against a target that kept its state must not
// accuse it: the second run's keys are new.
func TestRerunSameSeedOnStatefulTarget(t *testing.T) {
	t.Parallel()
	url := startTestLab(t, memoryBackend())
	for i := range 2 {
		if code, _, out := runBuiltin(t, url, "likes-duplicate", 42, 60); code != ExitOK {
			t.Fatalf("run %d of likes-duplicate --seed 42 on one lab: exit %d, want 0\n%s", i+1, code, out)
		}
	}
}

// A password in the target URL reaches no report, history or message.
func TestTargetPasswordNeverReported(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, false)
	target := strings.Replace(srv.URL, "http://", "http://bob:s3cretpw@", 1)
	dir := t.TempDir()
	r := runMain(t, nil, "run", writeScenario(t, payScenario), "--target", target, "--seed", "1", "--out", dir, "--format", "json")
	if r.code != ExitFailed {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, ExitFailed, r.out, r.err)
	}
	files := r.out + r.err
	for _, f := range []string{"report.json", "history.jsonl"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		files += string(b)
	}
	if strings.Contains(files, "s3cretpw") {
		t.Errorf("the target's password appears in the output or the saved run")
	}
	r = runMain(t, nil, "run", writeScenario(t, payScenario), "--target", "http://bob:s3cretpw@"+closedAddr(t), "--seed", "1")
	if r.code != ExitRuntime || strings.Contains(r.err, "s3cretpw") {
		t.Errorf("unreachable target with a password: exit %d, stderr %q", r.code, r.err)
	}
}

// The rerun line a report prints repeats the run: run as printed, it
// sends the same keys to the same target with the same load.
func TestRerunLineRepeatsTheRun(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	dir := t.TempDir()
	md := filepath.Join(dir, "report.md")
	r := runMain(t, nil, "run", "charges-lost-ack", "--target", target, "--ops", "12", "--concurrency", "3",
		"--out", dir, "--report", "markdown="+md, "-q")
	if r.code != ExitOK {
		t.Fatalf("run: exit %d\n%s", r.code, r.err)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	_, line, ok := strings.Cut(string(b), "rerun: `")
	line, _, _ = strings.Cut(line, "`")
	if !ok || !strings.HasPrefix(line, "idemcheck run charges-lost-ack ") {
		t.Fatalf("no rerun line in the report:\n%s", b)
	}
	for _, want := range []string{"--target " + target, "--ops 12", "--concurrency 3", "--seed ", "--key-nonce "} {
		if !strings.Contains(line, want) {
			t.Errorf("rerun line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "--out") || strings.Contains(line, "--report") || strings.Contains(line, "-q") {
		t.Errorf("rerun line %q keeps output flags", line)
	}
	first := readHistory(t, filepath.Join(dir, "history.jsonl"))
	if first.Meta.Rerun != line {
		t.Errorf("history rerun %q, the report's %q", first.Meta.Rerun, line)
	}
	dir2 := t.TempDir()
	args := append(strings.Fields(line)[1:], "--out", dir2, "-q")
	if r := runMain(t, nil, args...); r.code != ExitOK {
		t.Fatalf("the rerun line: exit %d\n%s", r.code, r.err)
	}
	again := readHistory(t, filepath.Join(dir2, "history.jsonl"))
	if len(again.Ops) != len(first.Ops) {
		t.Fatalf("the rerun made %d ops, the run %d", len(again.Ops), len(first.Ops))
	}
	for i := range first.Ops {
		if again.Ops[i].Key != first.Ops[i].Key {
			t.Fatalf("op %d: key %q in the rerun, %q in the run", i, again.Ops[i].Key, first.Ops[i].Key)
		}
	}
}

func TestShellArg(t *testing.T) {
	for in, want := range map[string]string{
		"charges-lost-ack":          "charges-lost-ack",
		"http://127.0.0.1:8080/x?a": "'http://127.0.0.1:8080/x?a'",
		"it's here":                 `'it'\''s here'`,
		"":                          "''",
	} {
		if got := shellArg(in); got != want {
			t.Errorf("shellArg(%q) = %s, want %s", in, got, want)
		}
	}
}

// An explicit zero for a load flag is refused: leaving the flag out is
// how to keep the scenario's own value.
func TestRunRefusesZeroLoadFlags(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--ops", "--duration", "--concurrency", "--rate"} {
		r := runMain(t, nil, "run", "charges-lost-ack", "--target", "http://127.0.0.1:1", flag, "0")
		if r.code != ExitUsage || !strings.Contains(r.err, flag+" 0") || !strings.Contains(r.err, "leave "+flag+" out") {
			t.Errorf("%s 0: exit %d, want %d and a hint\n%s", flag, r.code, ExitUsage, r.err)
		}
	}
}

// A target from IDEMCHECK_TARGET is named in the rerun line: elsewhere
// the variable may hold another.
func TestRerunLineNamesTheEnvTarget(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	dir := t.TempDir()
	r := runMain(t, map[string]string{"IDEMCHECK_TARGET": target}, "run", "charges-lost-ack", "--ops", "4", "--out", dir, "-q")
	if r.code != ExitOK {
		t.Fatalf("run: exit %d\n%s", r.code, r.err)
	}
	h := readHistory(t, filepath.Join(dir, "history.jsonl"))
	if !strings.Contains(h.Meta.Rerun, "--ops 4 --target "+target+" --seed ") {
		t.Errorf("rerun line %q does not name the target from IDEMCHECK_TARGET", h.Meta.Rerun)
	}
}
