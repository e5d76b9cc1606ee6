package cmd

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/audit"
	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reports"
)

// labAuditArgs audit the lab's protected charge endpoint with every check
// configured: an oracle, a second principal, an error body and policy. The
// lease and quiet period are short: the lab answers in tens of ms.
func labAuditArgs(target string, extra ...string) []string {
	args := []string{"audit", "POST", target + "/charges",
		"-d", `{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}`,
		"-H", "Authorization: Bearer alice", "--as", "Authorization: Bearer bob",
		"--effects", "GET /charges?idempotency_key={{.Key}}", "--effects-path", "$.count",
		"--error-data", `{"amount":100,"currency":"usd","customer":"cus_fail"}`, "--errors", "re-executed",
		"--lease", "1s", "--quiet-period", "20ms", "--format", "json"}
	return append(args, extra...)
}

// runAudit runs an audit through Main and decodes its JSON scorecard.
func runAudit(t *testing.T, args ...string) (ExitCode, *checks.Scorecard, string) {
	t.Helper()
	return auditResult(t, runMain(t, nil, args...), args)
}

// auditResult decodes the JSON scorecard of r, the audit run with args.
func auditResult(t *testing.T, r result, args []string) (ExitCode, *checks.Scorecard, string) {
	t.Helper()
	var sc checks.Scorecard
	if err := json.Unmarshal([]byte(r.out), &sc); err != nil {
		t.Fatalf("idemcheck %s: exit %d, no JSON scorecard: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, err, r.out, r.err)
	}
	return r.code, &sc, r.out + r.err
}

// checkResults maps check id to result.
func checkResults(sc *checks.Scorecard) map[string]checks.ContractCheck {
	out := map[string]checks.ContractCheck{}
	for _, c := range sc.Checks {
		out[c.ID] = c
	}
	return out
}

// wantScorecard asserts that exactly the checks in fail fail (those in
// may may), that the checks in skip are skipped, and that every other
// check passes: no collateral accusation, no unknown.
func wantScorecard(t *testing.T, name string, sc *checks.Scorecard, fail, may, skip []string, out string) {
	t.Helper()
	if len(sc.Checks) != len(audit.IDs()) {
		t.Fatalf("%s: %d checks, want %d", name, len(sc.Checks), len(audit.IDs()))
	}
	for _, c := range sc.Checks {
		var want checks.Status
		switch {
		case slices.Contains(fail, c.ID):
			want = checks.Fail
		case slices.Contains(may, c.ID) && c.Result != checks.Pass:
			want = c.Result
		case slices.Contains(skip, c.ID):
			want = checks.Skipped
		default:
			want = checks.Pass
		}
		if c.Result != want {
			t.Errorf("%s: %s %s = %s (%s: %s), want %s", name, c.ID, c.Name, c.Result, c.Severity, c.Summary, want)
		}
		if c.Result == checks.Fail && len(c.Evidence) == 0 {
			t.Errorf("%s: %s failed without evidence", name, c.ID)
		}
	}
	if t.Failed() {
		t.Logf("%s output:\n%s", name, out)
	}
}

// slowChecks are the checks audited on labs of their own, whose card
// processor takes longer than the 20ms of the others (a whole audit there
// would take far longer), so that their judgement does not hang on the
// machine's load. C08 sends a copy of a request a quarter of the
// calibrated latency after it, at most 50ms: on a lab whose charges take
// 20ms a loaded machine can finish the first before its copy arrives, and
// C08 is skipped ("the first request finished before its copy arrived").
// At 1 s every copy lands in flight with most of a second to spare, on a
// machine loaded enough (a -race run beside others) to hold a send back a
// few hundred milliseconds. C10 gives up on a request at half its time
// and retries at once: at 20ms a loaded machine held the retry back until
// the first had ended in 5 rounds of 5 (no overlap to test); at 300ms the
// retry has 150ms to arrive in, and the check's rounds take 1 s. C13
// abandons a request the same way, and a first answered before the client
// gives up leaves nothing in flight to test.
var slowChecks = []slowCheck{{[]string{"C08"}, time.Second}, {[]string{"C10", "C13"}, 300 * time.Millisecond}}

type slowCheck struct {
	ids       []string
	processor time.Duration
}

// auditSlow audits a lab with bugs as auditOn does with every check, but
// each of slowChecks on a lab of its own, all at once: args builds the
// audit's arguments for a target. It returns the worst exit code, the
// first audit's scorecard with the slow checks taken from their audits,
// and every output. No check is left out: the scorecard holds every
// check, each judged where its judgement does not hang on the machine's
// load.
func auditSlow(t *testing.T, args func(target string) []string, bugs ...string) (ExitCode, *checks.Scorecard, string) {
	t.Helper()
	return auditSlowOn(t, memoryBackend(), args, bugs...)
}

// auditSlowOn is auditSlow on the labs of a backend.
func auditSlowOn(t *testing.T, be backend, args func(target string) []string, bugs ...string) (ExitCode, *checks.Scorecard, string) {
	t.Helper()
	others := strings.Join(slices.DeleteFunc(audit.IDs(), func(id string) bool {
		return slices.ContainsFunc(slowChecks, func(c slowCheck) bool { return slices.Contains(c.ids, id) })
	}), ",")
	type slowRun struct {
		args []string
		done chan result
	}
	runs := make([]slowRun, len(slowChecks))
	for i, c := range slowChecks {
		url := startLabsWith(t, be, 1, c.processor, bugs...)[0]
		runs[i] = slowRun{append(args(url), "--checks", strings.Join(c.ids, ",")), make(chan result, 1)}
		go func() { runs[i].done <- runMain(t, nil, runs[i].args...) }()
	}
	// Only this goroutine judges.
	code, sc, out := runAudit(t, append(args(startTestLab(t, be, bugs...)), "--checks", others)...)
	for i, c := range slowChecks {
		code1, sc1, out1 := auditResult(t, <-runs[i].done, runs[i].args)
		for j := range sc.Checks {
			if id := sc.Checks[j].ID; slices.Contains(c.ids, id) {
				sc.Checks[j] = checkResults(sc1)[id]
			}
		}
		// An audit of one check that could not judge it is inconclusive;
		// in the whole audit that check is one unknown among judged ones.
		if code1 != ExitInconclusive {
			code = worst(code, code1)
		}
		out += out1
	}
	return code, sc, out
}

// TestAuditCorrectLab: the correct lab passes every applicable check under
// the draft profile, with an oracle, and a full audit of one endpoint on
// loopback takes well under 30 s.
func TestAuditCorrectLab(t *testing.T) {
	t.Parallel()
	start := time.Now()
	// The default lease and quiet period, as a user would run it.
	args := func(target string) []string {
		return slices.DeleteFunc(labAuditArgs(target), func(s string) bool { return s == "--lease" || s == "1s" || s == "--quiet-period" || s == "20ms" })
	}
	code, sc, out := auditSlow(t, args)
	took := time.Since(start)
	t.Logf("full audit of POST /charges on loopback: %v, %d requests", took, sc.Requests)
	if took > 30*time.Second && !testenv.Race { // a latency: meaningless under -race
		t.Errorf("a full audit took %v, want under 30s", took)
	}
	if code != ExitOK || sc.Result != checks.Met {
		t.Errorf("audit of the correct lab: exit %d, result %s; want 0, met", code, sc.Result)
	}
	wantScorecard(t, "correct lab", sc, nil, nil, auditSkipped, out)
	if sc.FormatVersion != 2 || sc.Profile != "draft" || sc.Method != "POST" || !strings.HasSuffix(sc.Target, "/charges") || sc.Oracle == "none" {
		t.Errorf("scorecard header = %+v", sc)
	}
	for _, c := range sc.Checks {
		if c.Result == checks.Pass && c.JudgedBy == "" {
			t.Errorf("%s passed without saying how it judged", c.ID)
		}
	}
	if !strings.Contains(out, "audit: up to ") {
		t.Errorf("the request count is not printed before sending:\n%s", out)
	}
}

// auditMay are checks a bug may also fail or leave undecided, depending on
// timing: the concurrent different bodies of C07 arrive after the winner
// finished only sometimes, and then meet the bug's mismatch answer; under
// shared-record C08's copies meet a 409 only if they overlap a request
// still writing the one record, and C13's abandoned request is caught only
// if another key's request took the one record while it was in flight.
var auditMay = map[string][]string{
	"mismatch-400":   {"C07"},
	"no-fingerprint": {"C07"},
	"shared-record":  {"C08", "C13"},
}

// auditExtra are flags an audit of a bug adds: burnt-key burns a key
// whose first request was an invalid body, so C12's error body is one.
var auditExtra = map[string][]string{
	"burnt-key":          {"--error-data", `{"amount":"one hundred","currency":"usd","customer":"cus_{{.Seq}}"}`},
	"retention-by-count": {"--retention-keys", "150"},
}

// auditAlso are checks a bug fails besides those it is listed under in
// auditCatchers: C27 sends keys longer than 255 characters (keys equal for
// 255, then differing), which long-key-500 answers 500.
var auditAlso = map[string][]string{
	"long-key-500":   {"C27"},
	"keyless-shared": {"C01"},
	"shared-record":  {"C06", "C07", "C10"},
	"narrow-race":    {"C07"},
}

// auditSkipped are the checks a full lab audit skips: C14 without
// --retention, C24 without --retention-keys, C28 without --kill-cmd (the
// in-process lab cannot be killed: TestAuditCrashInFlight crashes one
// served by a child process), W01 without --webhook (TestAuditWebhook).
var auditSkipped = []string{"C14", "C24", "C28", "W01"}

// TestAuditBugTable: each seeded bug an audit check catches (see
// auditCatchers) fails exactly its checks, and every other check passes.
func TestAuditBugTable(t *testing.T) {
	t.Parallel()
	for bug, fails := range auditCatchers {
		t.Run(bug, func(t *testing.T) {
			t.Parallel()
			code, sc, out := auditSlow(t, func(target string) []string { return labAuditArgs(target, auditExtra[bug]...) }, bug)
			wantScorecard(t, bug, sc, append(slices.Clone(fails), auditAlso[bug]...), auditMay[bug], auditSkipped, out)
			want := ExitOK
			for _, c := range sc.Checks {
				if c.Failed("") {
					want = ExitFailed
				}
			}
			if code != want {
				t.Errorf("bug %s: exit %d, want %d", bug, code, want)
			}
		})
	}
}

// TestAuditProfiles: where stripe's codes differ from the draft's (400 for
// another payload; a request without a key processed), the correct lab
// (422) deviates from stripe on C04 only, a medium finding that fails the
// exit code only with --fail-on medium; the mismatch-400 bug is stripe's
// behaviour and passes under stripe.
func TestAuditProfiles(t *testing.T) {
	t.Parallel()
	correct := startTestLab(t, memoryBackend())
	code, sc, out := runAudit(t, labAuditArgs(correct, "--profile", "stripe", "--checks", "C01,C04,C07,C17")...)
	skip := []string{"C02", "C03", "C05", "C06", "C08", "C09", "C10", "C11", "C12", "C13", "C14", "C15", "C16", "C18", "DK", "C24", "C25", "C26", "C27", "C28", "W01"}
	wantScorecard(t, "correct lab, stripe", sc, []string{"C04"}, []string{"C07"}, skip, out)
	if c := checkResults(sc)["C04"]; c.Severity != checks.Medium || !strings.Contains(c.Summary, "422") {
		t.Errorf("C04 under stripe = %s %q, want a medium finding naming 422", c.Severity, c.Summary)
	}
	if code != ExitOK || sc.Result != checks.Met {
		t.Errorf("correct lab under stripe: exit %d, result %s; want 0 (a medium finding only)", code, sc.Result)
	}
	code, _, _ = runAudit(t, labAuditArgs(correct, "--profile", "stripe", "--checks", "C04", "--fail-on", "medium")...)
	if code != ExitFailed {
		t.Errorf("--fail-on medium with a medium finding: exit %d, want %d", code, ExitFailed)
	}

	buggy := startTestLab(t, memoryBackend(), "mismatch-400")
	code, sc, out = runAudit(t, labAuditArgs(buggy, "--profile", "stripe", "--checks", "C01,C04,C17")...)
	skip = append(skip, "C07")
	wantScorecard(t, "mismatch-400, stripe", sc, nil, nil, skip, out)
	if code != ExitOK {
		t.Errorf("mismatch-400 under stripe: exit %d, want 0", code)
	}
}

// TestAuditWithoutOracle: without --effects the checks judge from the
// answers alone and say so; a check the answers cannot decide is unknown,
// never a pass; a duplicate the answers show is still caught.
func TestAuditWithoutOracle(t *testing.T) {
	t.Parallel()
	noOracle := func(args []string) []string {
		for _, f := range []string{"--effects", "--effects-path"} {
			i := slices.Index(args, f)
			args = slices.Delete(args, i, i+2)
		}
		return args
	}
	code, sc, out := auditSlow(t, func(target string) []string { return noOracle(labAuditArgs(target)) })
	if code != ExitOK || sc.Oracle != "none" {
		t.Errorf("correct lab without an oracle: exit %d, oracle %q; want 0, none", code, sc.Oracle)
	}
	for _, c := range sc.Checks {
		switch {
		case c.ID == "C10":
			if c.Result != checks.Unknown || !strings.Contains(c.Summary, "cannot tell") {
				t.Errorf("C10 without an oracle = %s %q, want unknown: the abandoned request's answer is lost", c.Result, c.Summary)
			}
		case slices.Contains(auditSkipped, c.ID):
		case c.Result != checks.Pass:
			t.Errorf("%s without an oracle = %s (%s), want pass", c.ID, c.Result, c.Summary)
		case c.JudgedBy != checks.ByAnswers:
			t.Errorf("%s judged by %q without an oracle", c.ID, c.JudgedBy)
		}
	}
	if c := checkResults(sc)["C06"]; !strings.Contains(c.Summary, "answers alone") {
		t.Errorf("C06 without an oracle does not say it judged from the answers: %q\n%s", c.Summary, out)
	}

	racy := startTestLab(t, memoryBackend(), "check-then-act")
	code, sc, _ = runAudit(t, noOracle(labAuditArgs(racy, "--checks", "C06"))...)
	c := checkResults(sc)["C06"]
	if code != ExitFailed || c.Result != checks.Fail || c.Severity != checks.Critical || !strings.Contains(c.Summary, "different resources") {
		t.Errorf("check-then-act without an oracle: exit %d, C06 %s %s %q; want 1 and a critical failure from the answers", code, c.Result, c.Severity, c.Summary)
	}
}

// TestAuditExpiry: C14 runs with a short --retention: the correct lab with
// keys kept a little longer than 2 s replays within it and processes anew
// after it; the short-ttl bug (keys kept 1 s) against a declared 2 s
// executes again within the retention.
func TestAuditExpiry(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T, ttl time.Duration, bugs ...string) string {
		t.Helper()
		rl, err := startLab(context.Background(), &LabOptions{Store: "memory", Ledger: "memory", Bugs: bugs, KeyTTL: ttl, ProcessorLatency: 20 * time.Millisecond, Instances: 1}, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rl.Stop)
		return rl.URLs[0]
	}
	others := slices.DeleteFunc(audit.IDs(), func(id string) bool { return id == "C14" })
	// Each waits out its retention: the two wait side by side.
	t.Run("correct", func(t *testing.T) {
		t.Parallel()
		// C14 sends the key again at 3/4 of the retention, then at 5/4
		// of it (for 1 s or more) after the first answer. A lab that keeps
		// keys 1.2× the retention replays the first with 0.9 s to spare
		// for a loaded machine's delays, and has let the key go before the
		// second: every delay only makes that one later.
		_, sc, out := runAudit(t, labAuditArgs(start(t, 2400*time.Millisecond), "--checks", "C14", "--retention", "2s")...)
		wantScorecard(t, "correct lab, retention 2s", sc, nil, nil, others, out)
	})
	t.Run("short-ttl", func(t *testing.T) {
		t.Parallel()
		code, sc, out := runAudit(t, labAuditArgs(start(t, 0, "short-ttl"), "--checks", "C14", "--retention", "2s")...)
		wantScorecard(t, "short-ttl, retention 2s", sc, []string{"C14"}, nil, others, out)
		if c := checkResults(sc)["C14"]; c.Severity != checks.Critical || code != ExitFailed {
			t.Errorf("short-ttl: C14 %s, exit %d; want critical, 1", c.Severity, code)
		}
	})
}

// TestAuditRetentionKeys: C24 on the correct lab, which keeps every key:
// each first key's retry is replayed after the fresh keys, and the
// summary says after how many.
func TestAuditRetentionKeys(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	others := slices.DeleteFunc(audit.IDs(), func(id string) bool { return id == "C24" })
	_, sc, out := runAudit(t, labAuditArgs(target, "--checks", "C24", "--retention-keys", "24")...)
	wantScorecard(t, "correct lab, 24 keys", sc, nil, nil, others, out)
	if c := checkResults(sc)["C24"]; !strings.Contains(c.Summary, "still replayed after 24 other keys") || c.JudgedBy != checks.ByEffects {
		t.Errorf("C24 = %q by %s, want it to say after how many keys, judged by the effects", c.Summary, c.JudgedBy)
	}
}

// TestAuditMintedKeys: against a lab that ignores the client's key and
// mints its own (server-minted-key), an audit sending its own keys finds
// every retry charged again; with --key-from-answer it retries with the
// minted key, which the lab deduplicates, and the checks a minted key
// cannot take part in are skipped, each saying why.
func TestAuditMintedKeys(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend(), "server-minted-key")
	code, sc, out := runAudit(t, labAuditArgs(target, "--checks", "C03,C09,C17")...)
	for _, id := range []string{"C03", "C17"} {
		if c := checkResults(sc)[id]; c.Result != checks.Fail || !strings.Contains(c.Summary, "executed twice") {
			t.Errorf("own keys on a minting lab: %s = %s (%s), want a duplicate found", id, c.Result, c.Summary)
		}
	}
	if code != ExitFailed {
		t.Errorf("own keys on a minting lab: exit %d, want %d\n%s", code, ExitFailed, out)
	}
	code, sc, out = runAudit(t, labAuditArgs(target, "--checks", "C03,C09,C17", "--key-from-answer", "Idempotency-Key")...)
	for id, want := range map[string]checks.Status{"C03": checks.Pass, "C17": checks.Pass, "C09": checks.Skipped} {
		c := checkResults(sc)[id]
		if c.Result != want {
			t.Errorf("--key-from-answer: %s = %s (%s), want %s", id, c.Result, c.Summary, want)
		}
		if want == checks.Skipped && !strings.Contains(c.Summary, "mints the keys") {
			t.Errorf("--key-from-answer: %s skipped as %q, want it to say the API mints the keys", id, c.Summary)
		}
	}
	if code != ExitOK || sc.Result != checks.Met {
		t.Errorf("--key-from-answer on a minting lab: exit %d, %s; want 0, met\n%s", code, sc.Result, out)
	}
}

// TestAuditNarrowRace: C06 holds each copy to its last byte and writes
// the last bytes together, so that a check-then-act whose window is a
// yield and one store roundtrip (narrow-race) is caught in at least 9 of
// 10 audits, and the summary says how close the copies arrived.
func TestAuditNarrowRace(t *testing.T) {
	testenv.SkipUnlessLong(t)
	target := startTestLab(t, memoryBackend(), "narrow-race")
	caught := 0
	for i := range 10 {
		_, sc, _ := runAudit(t, labAuditArgs(target, "--checks", "C06")...)
		c := checkResults(sc)["C06"]
		if c.Result == checks.Fail {
			caught++
		}
		if !strings.Contains(c.Summary, "held to its last byte") {
			t.Errorf("audit %d: C06 %q does not say the copies were held to their last byte", i+1, c.Summary)
		}
	}
	if caught < 9 {
		t.Errorf("narrow-race caught in %d of 10 audits, want at least 9", caught)
	}
}

// TestAuditDryRun prints the plan and sends nothing.
func TestAuditDryRun(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	r := runMain(t, nil, "audit", "POST", srv.URL+"/charges", "-d", `{"amount":1}`, "--dry-run")
	if r.code != ExitOK || hits.Load() != 0 {
		t.Fatalf("--dry-run: exit %d, %d requests sent; want 0, none\n%s%s", r.code, hits.Load(), r.out, r.err)
	}
	for _, want := range []string{"nothing sent", "C06", "concurrent-same-key", "C15", "skipped: give --as", "answers alone"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("--dry-run output lacks %q:\n%s", want, r.out)
		}
	}
}

// TestAuditExitCodes: usage errors, an unreachable or failing target, a
// request cap too small for anything, and nothing judged.
func TestAuditExitCodes(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	body := `{"amount":100,"currency":"usd"}`
	cases := []struct {
		name string
		args []string
		want ExitCode
		says string
	}{
		{"no arguments", []string{"audit"}, ExitUsage, "METHOD URL"},
		{"bad format", []string{"audit", "POST", target + "/charges", "--format", "yaml"}, ExitUsage, "--format"},
		{"bad errors policy", []string{"audit", "POST", target + "/charges", "--errors", "sometimes"}, ExitUsage, "--errors"},
		{"bad profile", []string{"audit", "POST", target + "/charges", "--profile", "acme"}, ExitUsage, "profile"},
		{"effects without the key", []string{"audit", "POST", target + "/charges", "--effects", "GET /charges"}, ExitUsage, "{{.Key}}"},
		{"effects on another host", []string{"audit", "POST", target + "/charges", "--effects", "http://x/y?k={{.Key}}"}, ExitUsage, "path"},
		{"bad volatile path", []string{"audit", "POST", target + "/charges", "-d", body, "--volatile", "$[", "--dry-run"}, ExitUsage, "volatile"},
		{"unknown check", []string{"audit", "POST", target + "/charges", "-d", body, "--checks", "C99"}, ExitUsage, "C99"},
		{"request flags with a file", []string{"audit", "charges-lost-ack", "-d", body}, ExitUsage, "METHOD URL"},
		{"unreachable", []string{"audit", "POST", "http://127.0.0.1:1/charges", "-d", body}, ExitRuntime, "audited request failed"},
		{"the request itself fails", []string{"audit", "POST", target + "/charges", "-d", `{"amount":-1}`}, ExitRuntime, "400"},
		{"nothing judged", []string{"audit", "POST", target + "/charges", "-d", body, "--checks", "C14"}, ExitInconclusive, "INCONCLUSIVE"},
		{"cap below every check", []string{"audit", "POST", target + "/charges", "-d", body, "--checks", "C06", "--max-requests", "10"}, ExitInconclusive, "--max-requests 10"},
		{"negative retention keys", []string{"audit", "POST", target + "/charges", "--retention-keys", "-1"}, ExitUsage, "--retention-keys"},
		{"a key minted by an API that wants the client's", []string{"audit", "POST", target + "/charges", "-d", body, "--key-from-answer", "Idempotency-Key"}, ExitRuntime, "--key-from-answer"},
		{"a key minted into a header the audit does not keep", []string{"audit", "POST", target + "/charges", "-d", body, "--key-from-answer", "X-Request-Id"}, ExitUsage, "Idempotency-Key"},
		{"a key minted with the key in the body", []string{"audit", "POST", target + "/charges", "-d", body, "--key-field", "op_id", "--key-from-answer", "Idempotency-Key"}, ExitUsage, "body field"},
	}
	for _, c := range cases {
		r := runMain(t, nil, c.args...)
		if r.code != c.want || !strings.Contains(r.out+r.err, c.says) {
			t.Errorf("%s: exit %d, want %d and %q in\n%s%s", c.name, r.code, c.want, c.says, r.out, r.err)
		}
	}
}

// TestAuditFile audits a built-in scenario's request, key and oracle.
func TestAuditFile(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	code, sc, out := runAudit(t, "audit", "charges-lost-ack", "--target", target, "--checks", "C03,C06", "--quiet-period", "20ms", "--format", "json")
	if code != ExitOK || sc.Oracle == "none" {
		t.Fatalf("audit charges-lost-ack: exit %d, oracle %q; want 0 and the file's oracle\n%s", code, sc.Oracle, out)
	}
	r := checkResults(sc)
	if r["C03"].Result != checks.Pass || r["C06"].Result != checks.Pass || r["C06"].JudgedBy != checks.ByEffects {
		t.Errorf("C03 %s, C06 %s by %s; want both passed, by the effects", r["C03"].Result, r["C06"].Result, r["C06"].JudgedBy)
	}
}

// TestAuditFormatsAndSecrets: every format renders the scorecard, and no
// credential (the -H token, the --as token) appears in any of them.
func TestAuditFormatsAndSecrets(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend(), "global-keys")
	const tokA, tokB = "tok-a-7f3kq9", "tok-b-2m8zx4"
	for _, format := range reports.ScorecardFormats() {
		r := runMain(t, nil, "audit", "POST", target+"/charges", "-d", `{"amount":100,"currency":"usd"}`,
			"-H", "Authorization: Bearer "+tokA, "--as", "Authorization: Bearer "+tokB, "--checks", "C03,C15", "--format", format)
		if r.code != ExitFailed {
			t.Errorf("%s: exit %d, want %d (C15 leaks)\n%s%s", format, r.code, ExitFailed, r.out, r.err)
		}
		if strings.Contains(r.out+r.err, tokA) || strings.Contains(r.out+r.err, tokB) {
			t.Errorf("%s: a credential is in the output:\n%s%s", format, r.out, r.err)
		}
		switch format {
		case "text":
			if !strings.Contains(r.out, "C15  cross-user") || !strings.Contains(r.out, "result: NOT_MET") {
				t.Errorf("text scorecard:\n%s", r.out)
			}
		case "markdown":
			if !strings.Contains(r.out, "| C15 | cross-user | critical | **fail** |") {
				t.Errorf("markdown scorecard:\n%s", r.out)
			}
		case "junit":
			var doc struct {
				Tests    int `xml:"tests,attr"`
				Failures int `xml:"failures,attr"`
			}
			if err := xml.Unmarshal([]byte(r.out), &doc); err != nil || doc.Tests != len(audit.IDs()) || doc.Failures != 1 {
				t.Errorf("junit: %v, %+v; want %d testcases, 1 failure\n%s", err, doc, len(audit.IDs()), r.out)
			}
		case "json":
			var raw map[string]any
			if err := json.Unmarshal([]byte(r.out), &raw); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"format_version", "target", "profile", "checks", "result"} {
				if _, ok := raw[k]; !ok {
					t.Errorf("json scorecard lacks %q", k)
				}
			}
			for _, c := range raw["checks"].([]any) {
				m := c.(map[string]any)
				for _, k := range []string{"id", "name", "severity", "result", "summary", "evidence"} {
					if _, ok := m[k]; !ok || m[k] == nil {
						t.Errorf("json check %v lacks %q", m["id"], k)
					}
				}
			}
		}
	}
}

// TestAuditBugTableOnRealBackends runs the bug table on Redis and Postgres
// in the long suite.
func TestAuditBugTableOnRealBackends(t *testing.T) {
	testenv.SkipUnlessLong(t)
	be := realBackend(t)
	for bug, fails := range auditCatchers {
		t.Run(bug, func(t *testing.T) {
			_, sc, out := auditSlowOn(t, be, func(target string) []string { return labAuditArgs(target, auditExtra[bug]...) }, bug)
			wantScorecard(t, bug, sc, append(slices.Clone(fails), auditAlso[bug]...), auditMay[bug], auditSkipped, out)
		})
	}
}

// TestAuditReplicas: with several --target the concurrency probes spread
// their copies over them: two correct replicas on one store pass, and two
// replicas that lock in process memory (in-process-lock) charge twice.
func TestAuditReplicas(t *testing.T) {
	t.Parallel()
	args := func(urls []string, extra ...string) []string {
		a := labAuditArgs(urls[0], extra...)
		for _, u := range urls {
			a = append(a, "--target", u)
		}
		return a
	}
	correct := startTestLabs(t, memoryBackend(), 2)
	code, sc, out := runAudit(t, args(correct, "--checks", "C06,C07,C08")...)
	if code != ExitOK {
		t.Errorf("two correct replicas: exit %d, want 0\n%s", code, out)
	}
	for _, id := range []string{"C06", "C07"} {
		if c := checkResults(sc)[id]; c.Result != checks.Pass {
			t.Errorf("two correct replicas: %s %s (%s)", id, c.Result, c.Summary)
		}
	}
	racy := startTestLabs(t, memoryBackend(), 2, "in-process-lock")
	code, sc, out = runAudit(t, args(racy, "--checks", "C06")...)
	if c := checkResults(sc)["C06"]; code != ExitFailed || c.Result != checks.Fail || c.Severity != checks.Critical {
		t.Errorf("in-process-lock on two replicas: exit %d, C06 %s %s; want 1, a critical failure\n%s", code, c.Result, c.Severity, out)
	}
}

// TestAuditReportFiles: --report FORMAT=PATH writes the scorecard in that
// format beside stdout's; an audit that cannot start leaves a JUnit file
// that says why; the HTML page draws each probe's requests; a format
// audit does not write is refused before sending.
func TestAuditReportFiles(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	dir := t.TempDir()
	junit, md := filepath.Join(dir, "audit.xml"), filepath.Join(dir, "audit.md")
	r := runMain(t, nil, "audit", "POST", target+"/charges", "-d", `{"amount":100,"currency":"usd"}`, "--checks", "C03",
		"--report", "junit="+junit, "--report", "markdown="+md)
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.out, r.err)
	}
	for path, want := range map[string]string{junit: `name="C03 sequential-replay"`, md: "| C03 | sequential-replay |"} {
		b, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v, want %q in\n%s", path, err, want, b)
		}
	}
	down := filepath.Join(dir, "down.xml")
	r = runMain(t, nil, "audit", "POST", "http://127.0.0.1:1/charges", "-d", `{"amount":1}`, "--report", "junit="+down)
	if b, err := os.ReadFile(down); r.code != ExitRuntime || err != nil || !strings.Contains(string(b), "audited request failed") {
		t.Errorf("unreachable target: exit %d, junit %v:\n%s", r.code, err, b)
	}
	page := filepath.Join(dir, "a.html")
	r = runMain(t, nil, "audit", "POST", target+"/charges", "-d", `{"amount":100,"currency":"usd"}`, "--checks", "C06", "--report", "html="+page)
	b, err := os.ReadFile(page)
	if r.code != ExitOK || err != nil {
		t.Fatalf("--report html: exit %d, %v\n%s", r.code, err, r.err)
	}
	for _, want := range []string{"<h2 id=\"C06\">", "<svg class=\"chart\"", "round 1: copy 10"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the audit's HTML page lacks %q", want)
		}
	}
	r = runMain(t, nil, "audit", "POST", target+"/charges", "--report", "yaml="+filepath.Join(dir, "a.yaml"))
	if r.code != ExitUsage {
		t.Errorf("--report yaml: exit %d, want %d\n%s", r.code, ExitUsage, r.err)
	}
}

// TestAuditSavedAndCheckedAgain: an audit saved with --out is judged again
// by 'idemcheck check' from its history alone, to the same scorecard and
// exit code, correct lab and broken.
func TestAuditSavedAndCheckedAgain(t *testing.T) {
	t.Parallel()
	for _, bug := range []string{"", "check-then-act"} {
		var bugs []string
		if bug != "" {
			bugs = []string{bug}
		}
		target := startTestLab(t, memoryBackend(), bugs...)
		dir := t.TempDir()
		code, live, out := runAudit(t, labAuditArgs(target, "--checks", "C03,C06,C09,C12,C15", "--out", dir)...)
		for _, f := range []string{"history.jsonl", "scorecard.json", "report.html"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Fatalf("bug %q: audit --out wrote no %s: %v\n%s", bug, f, err, out)
			}
		}
		r := runMain(t, nil, "check", dir, "--format", "json")
		var again checks.Scorecard
		if err := json.Unmarshal([]byte(r.out), &again); err != nil {
			t.Fatalf("bug %q: check %s: exit %d, no JSON scorecard: %v\n%s%s", bug, dir, r.code, err, r.out, r.err)
		}
		if r.code != code {
			t.Errorf("bug %q: check exits %d, the audit exited %d", bug, r.code, code)
		}
		a, b := mustJSON(t, live), mustJSON(t, &again)
		if a != b {
			t.Errorf("bug %q: check's scorecard differs from the audit's:\naudit: %s\ncheck: %s", bug, a, b)
		}
		if bug != "" && code != ExitFailed {
			t.Errorf("bug %q: exit %d, want %d", bug, code, ExitFailed)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
