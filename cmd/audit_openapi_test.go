package cmd

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/audit"
	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/openapi"
)

// apiAuditArgs audit the lab through the OpenAPI document it serves,
// with a second principal; the checks that need a slow lab (C08, C10,
// C13) are audited on one endpoint by TestAuditCorrectLab and the bug
// table.
func apiAuditArgs(target string, extra ...string) []string {
	args := []string{"audit", "--openapi", target + "/openapi.json", "--target", target,
		"--auth", "bearerAuth=alice", "--as", "Authorization: Bearer bob",
		"--lease", "1s", "--quiet-period", "20ms", "--format", "json"}
	if !slices.Contains(extra, "--checks") {
		fast := slices.DeleteFunc(audit.IDs(), func(id string) bool {
			return slices.ContainsFunc(slowChecks, func(c slowCheck) bool { return slices.Contains(c.ids, id) })
		})
		args = append(args, "--checks", strings.Join(append(fast, openapi.ConformanceID), ","))
	}
	return append(args, extra...)
}

func runAPIAudit(t *testing.T, args ...string) (ExitCode, *checks.APIScorecard, string) {
	t.Helper()
	r := runMain(t, nil, args...)
	var a checks.APIScorecard
	if err := json.Unmarshal([]byte(r.out), &a); err != nil {
		t.Fatalf("idemcheck %s: exit %d, no JSON scorecard: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, err, r.out, r.err)
	}
	return r.code, &a, r.out + r.err
}

func opCard(t *testing.T, a *checks.APIScorecard, id string) checks.OperationCard {
	t.Helper()
	for _, o := range a.Operations {
		if strings.HasPrefix(o.Operation, id+" ") {
			return o
		}
	}
	t.Fatalf("operation %s not audited: %+v", id, a.Operations)
	return checks.OperationCard{}
}

// TestAuditOpenAPICorrectLab: one command audits every operation the
// lab's document describes with a key; the correct lab meets the
// contract on each, the charges judged by the effects its link names,
// and the keyless naive endpoint is left out with why and where.
func TestAuditOpenAPICorrectLab(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	code, a, out := runAPIAudit(t, apiAuditArgs(target)...)
	if code != ExitOK || a.Result != checks.Met {
		t.Fatalf("exit %d, %s: %s\n%s", code, a.Result, a.Why, out)
	}
	charge := opCard(t, a, "createCharge")
	card := *charge.Card
	if oa := card.Checks[len(card.Checks)-1]; oa.ID != openapi.ConformanceID || oa.Result != checks.Pass {
		t.Errorf("createCharge's answers against the document: %s %s: %s", oa.ID, oa.Result, oa.Summary)
	}
	card.Checks = card.Checks[:len(card.Checks)-1]
	wantScorecard(t, "createCharge", &card, nil, nil, append(slices.Clone(auditSkipped), "C08", "C10", "C13", "C12"), out)
	if !strings.Contains(charge.Card.Oracle, "/charges?idempotency_key=") {
		t.Errorf("createCharge judged by %q: want the read-back its link names", charge.Card.Oracle)
	}
	like := opCard(t, a, "likePost")
	if like.Card.Result != checks.Met {
		t.Errorf("likePost %s: %s", like.Card.Result, like.Card.Why)
	}
	// a like is deduplicated by op_id, without a key format or a payload
	// fingerprint: medium deviations from the draft profile (C02, C04,
	// C07), never more; its answer is the post, whatever the key, so the
	// checks that tell keys apart by their answers cannot judge it
	for _, c := range like.Card.Checks {
		if c.Failed("") || c.Result == checks.Unknown && !strings.Contains(c.Summary, "shared resource") || (c.ID == "C15" || c.ID == "C26") && c.Result != checks.Skipped {
			t.Errorf("likePost %s %s (%s): %s", c.ID, c.Result, c.Severity, c.Summary)
		}
	}
	if len(a.Skipped) != 1 || !strings.HasPrefix(a.Skipped[0].Operation, "createChargeNaive") || a.Skipped[0].Pointer != "#/paths/~1naive~1charges/post" {
		t.Errorf("skipped %+v: want the naive charge, with its pointer", a.Skipped)
	}
	if !strings.Contains(out, "[2/2]") {
		t.Errorf("no progress per operation:\n%s", out)
	}
}

// TestAuditOpenAPIBugs: each seeded bug of the charges that an audit
// catches (auditCatchers) is caught through the lab's document too, on
// createCharge, the operation it breaks; likePost, untouched by it, is not
// accused. C12's bugs get their error body from the fixtures; the bugs
// the slow checks catch (C08, C10, C13) are audited on a lab of their
// check's processor time, in the long suite. narrow-race is caught in 9
// of 10 audits or more (TestAuditNarrowRace), not in every one.
func TestAuditOpenAPIBugs(t *testing.T) {
	t.Parallel()
	fx := filepath.Join(t.TempDir(), "fixtures.yaml")
	if err := os.WriteFile(fx, []byte("operations:\n  createCharge:\n    error_body: '{\"amount\":100,\"currency\":\"usd\",\"customer\":\"cus_fail\"}'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	burnt := filepath.Join(t.TempDir(), "burnt.yaml")
	if err := os.WriteFile(burnt, []byte("operations:\n  createCharge:\n    error_body: '{\"amount\":\"one hundred\",\"currency\":\"usd\",\"customer\":\"cus_{{.Seq}}\"}'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	extra := map[string][]string{
		"cache-errors":       {"--fixtures", fx, "--errors", "re-executed"},
		"burnt-key":          {"--fixtures", burnt, "--errors", "re-executed"},
		"retention-by-count": {"--retention-keys", "150"},
	}
	for bug, catchers := range auditCatchers {
		if bug == "narrow-race" {
			continue
		}
		t.Run(bug, func(t *testing.T) {
			t.Parallel()
			fails := append(slices.Clone(catchers), auditAlso[bug]...)
			if bug == "replay-other-body" {
				// its replay carries a field the document's Charge
				// does not have (additionalProperties: false)
				fails = append(fails, openapi.ConformanceID)
			}
			// the slow checks in the long suite only, on a lab as slow as
			// they need; the fast suite audits the rest of the bug's checks
			processor := 20 * time.Millisecond
			for _, c := range slowChecks {
				slow := func(id string) bool { return slices.Contains(c.ids, id) }
				switch {
				case !slices.ContainsFunc(fails, slow):
				case testenv.Long():
					processor = max(processor, c.processor)
				default:
					fails = slices.DeleteFunc(fails, slow)
				}
			}
			if len(fails) == 0 {
				testenv.SkipUnlessLong(t)
			}
			target := startLabsWith(t, memoryBackend(), 1, processor, bug)[0]
			code, a, out := runAPIAudit(t, apiAuditArgs(target, append([]string{"--checks", strings.Join(fails, ",")}, extra[bug]...)...)...)
			charge := opCard(t, a, "createCharge")
			got := checkResults(charge.Card)
			for _, id := range fails {
				if got[id].Result != checks.Fail {
					t.Errorf("%s: createCharge %s %s: %s\n%s", bug, id, got[id].Result, got[id].Summary, out)
				}
			}
			if like := opCard(t, a, "likePost"); like.Result() == checks.NotMet {
				t.Errorf("%s: likePost accused: %s", bug, like.Card.Why)
			}
			if a.Operations[0].Operation != charge.Operation {
				t.Errorf("%s: the worst operation is not first: %s", bug, a.Operations[0].Operation)
			}
			// likePost may have nothing to judge under the bug's checks
			// alone (C12 without an error body): inconclusive, exit 3
			if want := resultCode(a.Result); code != want || (a.Result == checks.NotMet) != (charge.Result() == checks.NotMet) {
				t.Errorf("%s: exit %d (%s: %s), want %d", bug, code, a.Result, a.Why, want)
			}
		})
	}
}

// TestAuditOpenAPIDryRunAndFormats: the dry run names every operation's
// first request and sends nothing, its credentials masked; JUnit has a
// case per operation and check and one per operation left out; a fixtures
// file that names no operation is a usage error at its line.
func TestAuditOpenAPIDryRunAndFormats(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	const token = "tok-4f9c2a7e81d3"
	r := runMain(t, nil, "audit", "--openapi", target+"/openapi.json", "--target", target, "--auth", "bearerAuth="+token, "--dry-run")
	if r.code != ExitOK || strings.Contains(r.out+r.err, token) {
		t.Errorf("dry run: exit %d, or the token shown:\n%s%s", r.code, r.out, r.err)
	}
	for _, want := range []string{"1. createCharge (POST /charges)", "Authorization: ***", "effects: GET /charges?idempotency_key={{.Key}} at $.count (from links chargesOfKey)",
		"key in body field op_id (required", "createChargeNaive (POST /naive/charges): declares no idempotency key", "dry run: nothing sent. 2 operations"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, r.out)
		}
	}
	r = runMain(t, nil, apiAuditArgs(target, "--checks", "C03,C17", "--format", "junit", "--include", "createCharge,likePost")...)
	var doc struct {
		Tests  int `xml:"tests,attr"`
		Suites []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(r.out), &doc); err != nil || r.code != ExitOK {
		t.Fatalf("junit: exit %d, %v\n%s%s", r.code, err, r.out, r.err)
	}
	if n := len(audit.IDs()); len(doc.Suites) != 2 || doc.Tests != 2*n {
		t.Errorf("junit: %d suites, %d tests: want 2 operations of %d cases\n%s", len(doc.Suites), doc.Tests, n, r.out)
	}

	fx := filepath.Join(t.TempDir(), "fx.yaml")
	if err := os.WriteFile(fx, []byte("operations:\n  createCharge: {}\n  creatCharge:\n    body: '{}'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runMain(t, nil, "audit", "--openapi", target+"/openapi.json", "--fixtures", fx, "--dry-run")
	if r.code != ExitUsage || !strings.Contains(r.err, "fx.yaml:3: operations.creatCharge: no such operation") {
		t.Errorf("a misspelt fixture: exit %d\n%s", r.code, r.err)
	}
}

// TestInitOpenAPI: init writes a scenario per planned operation of the
// lab's document, credentials from the environment, the charges with the
// effects oracle their link names; run holds on the correct lab and
// catches the no-key bug with it. A literal credential is refused.
func TestInitOpenAPI(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	dir := t.TempDir()
	r := runMain(t, nil, "init", "--openapi", target+"/openapi.json", "--target", target, "--auth", `bearerAuth={{env "LAB_TOKEN"}}`, "--out", dir)
	if r.code != ExitOK {
		t.Fatalf("init: exit %d\n%s", r.code, r.err)
	}
	for _, want := range []string{"create-charge.yaml (createCharge (POST /charges))", "like-post.yaml", "left out createChargeNaive"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("init says no %q:\n%s", want, r.err)
		}
	}
	text, err := os.ReadFile(filepath.Join(dir, "create-charge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"path: /charges?idempotency_key={{.Key}}", "check: exactly_once", `Authorization: Bearer {{env "LAB_TOKEN"}}`, "header: Idempotency-Key"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("create-charge.yaml lacks %q:\n%s", want, text)
		}
	}
	env := map[string]string{"LAB_TOKEN": "alice"}
	file := filepath.Join(dir, "create-charge.yaml")
	broken := startTestLab(t, memoryBackend(), "no-key")
	done := make(chan result, 1)
	go func() { done <- runMain(t, env, "run", file, "--target", broken, "--ops", "40", "--seed", "3") }()
	// exit 3 is allowed: under a loaded race suite the starter's timeout
	// (half the calibrated latency) may not bite in 40 ops; no invariant
	// may fail
	if r := runMain(t, env, "run", file, "--target", target, "--ops", "40", "--seed", "3"); r.code == ExitFailed || r.code != ExitOK && !strings.Contains(r.out, "faults that did nothing") ||
		!strings.Contains(r.out, "PASS    exactly_once") {
		t.Errorf("run on the correct lab: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if r := <-done; r.code != ExitFailed || !strings.Contains(r.out, "exactly_once") {
		t.Errorf("run on the no-key lab: exit %d, want %d\n%s%s", r.code, ExitFailed, r.out, r.err)
	}

	r = runMain(t, nil, "init", "--openapi", target+"/openapi.json", "--auth", "bearerAuth=alice", "--out", t.TempDir())
	if r.code != ExitUsage || !strings.Contains(r.err, "literal value") {
		t.Errorf("a literal credential: exit %d\n%s", r.code, r.err)
	}
}

// chainSpec is an API whose charges are made on a customer that another
// operation creates: the link from createCustomer's answer gives the path.
const chainSpec = `openapi: 3.0.3
info: {title: customers, version: "1"}
paths:
  /customers:
    post:
      operationId: createCustomer
      requestBody: {content: {application/json: {schema: {type: object, properties: {name: {type: string}}}}}}
      responses:
        "201":
          description: created
          links:
            chargeIt: {operationId: createCustomerCharge, parameters: {customer: $response.body#/id}}
  /customers/{customer}/charges:
    post:
      operationId: createCustomerCharge
      parameters:
        - {name: customer, in: path, required: true, schema: {type: string}}
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
      requestBody: {content: {application/json: {schema: {type: object, required: [amount], properties: {amount: {type: integer}}}}}}
      responses:
        "201": {description: charged, content: {application/json: {schema: {type: object, required: [id], properties: {id: {type: string}}}}}}
        "400": {description: no key}
        "404": {description: no such customer}
`

// TestAuditOpenAPIChain: a path parameter another operation's answer
// gives is taken from it (the source sent once first); a source that
// fails leaves the operation not audited, saying why.
func TestAuditOpenAPIChain(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	customers, charges, failSource := map[string]bool{}, map[string]string{}, false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/openapi.yaml":
			w.Write([]byte(chainSpec))
		case r.Method == "POST" && r.URL.Path == "/customers":
			if failSource {
				w.WriteHeader(500)
				return
			}
			id := fmt.Sprintf("cus_%d", len(customers)+1)
			customers[id] = true
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			fmt.Fprintf(w, `{"id":%q}`, id)
		case r.Method == "POST" && strings.HasPrefix(r.URL.Path, "/customers/") && strings.HasSuffix(r.URL.Path, "/charges"):
			if !customers[strings.Split(r.URL.Path, "/")[2]] {
				w.WriteHeader(404)
				return
			}
			key := r.Header.Get("Idempotency-Key")
			if key == "" {
				w.WriteHeader(400)
				return
			}
			if charges[key] == "" {
				charges[key] = fmt.Sprintf(`{"id":"ch_%d"}`, len(charges)+1)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			w.Write([]byte(charges[key]))
		default:
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()
	args := []string{"audit", "--openapi", srv.URL + "/openapi.yaml", "--target", srv.URL, "--checks", "C01,C03,OA", "--format", "json"}
	dir := t.TempDir()
	code, a, out := runAPIAudit(t, append(args, "--out", dir)...)
	if code != ExitOK || a.Result != checks.Met {
		t.Fatalf("exit %d, %s: %s\n%s", code, a.Result, a.Why, out)
	}
	// the source's request is in the operation's history, an op of its
	// own that no check judges
	saved, _ := filepath.Glob(filepath.Join(dir, "*createCustomerCharge*", "history.jsonl"))
	if len(saved) != 1 {
		t.Fatalf("saved histories %v, want createCustomerCharge's", saved)
	}
	h := readHistory(t, saved[0])
	var links []history.Attempt
	for i, op := range h.Ops {
		if op.Check == history.CheckLinks {
			links = append(links, h.AttemptsOf(i)...)
		}
	}
	if len(links) != 1 || links[0].Status != 201 || links[0].Request == nil || links[0].Request.URL != srv.URL+"/customers" || links[0].Label != "link, {customer}" {
		t.Errorf("the link's attempts %+v, want POST /customers answered 201", links)
	}
	if r := runMain(t, nil, "check", filepath.Dir(saved[0])); r.code != ExitOK {
		t.Errorf("check %s: exit %d, want the audit met again\n%s%s", filepath.Dir(saved[0]), r.code, r.out, r.err)
	}
	if !strings.Contains(out, "createCustomerCharge (POST /customers/{customer}/charges): {customer} = cus_1, from createCustomer (POST /customers)'s answer (links chargeIt)") {
		t.Errorf("the chained value is not said:\n%s", out)
	}
	got := checkResults(opCard(t, a, "createCustomerCharge").Card)
	for _, id := range []string{"C01", "C03", "OA"} {
		if got[id].Result != checks.Pass {
			t.Errorf("%s %s: %s", id, got[id].Result, got[id].Summary)
		}
	}

	mu.Lock()
	failSource = true
	mu.Unlock()
	code, a, out = runAPIAudit(t, args...)
	if op := opCard(t, a, "createCustomerCharge"); code != ExitInconclusive || op.Card != nil || !strings.Contains(op.Error, "was answered 500, not 2xx") {
		t.Errorf("a failed source: exit %d, %+v\n%s", code, op, out)
	}
}
