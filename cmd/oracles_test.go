package cmd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// chargesSQL charges through the lab and counts the charges with SQL on the
// lab's own Postgres ledger; the protected variant also reads the lab's
// Redis response cache.
const chargesSQL = `name: charges-sql
users: [alice]
operation:
  method: POST
  path: {{PATH}}
  headers: {Authorization: "Bearer {{.User}}"}
  key: {header: Idempotency-Key}
  body: '{"amount": 100, "currency": "usd", "customer": "cus_{{.Seq}}"}'
load: {ops: 40, concurrency: 4}
retry: {attempts: 5, backoff: {initial: 2ms, max: 20ms}}
faults:
  - {kind: drop_ack, rate: 0.3}
oracles:
  - name: ledger_sql
    effects:
      sql:
        url: '{{env "LEDGER_URL"}}'
        grouped: SELECT idempotency_key, count(*) FROM {{NS}}.payments GROUP BY 1
  - name: ledger_sql_per_key
    effects:
      sql:
        url: '{{env "LEDGER_URL"}}'
        per_key: SELECT count(*) FROM {{NS}}.payments WHERE idempotency_key = $1
  - name: store
    effects:
      redis:
        url: '{{env "STORE_URL"}}'
        pattern: 'idemcheck:lab:{{NS}}:resp:alice|%s'
        mode: exists
invariants:
  - {check: exactly_once, oracle: ledger_sql}
  - {check: at_most_once, oracle: ledger_sql_per_key}
`

const likesSQL = `name: likes-sql
operation:
  method: POST
  path: {{PATH}}
  key: {body_field: op_id}
  body: '{}'
load: {ops: 40, concurrency: 4}
faults:
  - {kind: duplicate, rate: 0.3, copies: 2}
oracles:
  - name: likes
    counter:
      sql:
        url: '{{env "LEDGER_URL"}}'
        query: SELECT coalesce((SELECT likes FROM {{NS}}.posts WHERE id = 'p-sql'), 0)
invariants:
  - {check: exact_counter, oracle: likes}
`

func fill(tmpl, path, ns string, extra string) string {
	s := strings.ReplaceAll(strings.ReplaceAll(tmpl, "{{PATH}}", path), "{{NS}}", ns)
	return s + extra
}

func TestSQLAndRedisOraclesOnTheLab(t *testing.T) {
	testenv.SkipUnlessLong(t)
	be := realBackend(t)
	url := startTestLab(t, be)
	ns := fmt.Sprintf("t%d", labNS.Load()) // the namespace startTestLab gave this lab
	env := map[string]string{"LEDGER_URL": be.ledger, "STORE_URL": be.store}

	cases := []struct {
		name, scenario string
		want           ExitCode
		report         string
	}{
		{"protected charges hold", fill(chargesSQL, "/charges", ns, "  - {check: exactly_once, oracle: store}\n"), ExitOK, "PASS    exactly_once on store"},
		{"naive charges caught", fill(chargesSQL, "/naive/charges", ns, ""), ExitFailed, "FAIL    exactly_once on ledger_sql"},
		{"protected likes hold", fill(likesSQL, "/posts/p-sql/like", ns, ""), ExitOK, "PASS    exact_counter on likes"},
		{"naive likes caught", fill(likesSQL, "/naive/posts/p-sql/like", ns, ""), ExitFailed, "FAIL    exact_counter on likes"},
	}
	for i, c := range cases {
		r := runMain(t, env, "run", writeScenario(t, c.scenario), "--target", url, "--seed", fmt.Sprint(10+i))
		if r.code != c.want || !strings.Contains(r.out, c.report) {
			t.Errorf("%s: exit %d, want %d with %q\n%s%s", c.name, r.code, c.want, c.report, r.out, r.err)
		}
	}
	// A secret-bearing URL from the environment never shows in the report.
	r := runMain(t, map[string]string{"LEDGER_URL": "postgres://app:hunter2@127.0.0.1:1/x", "STORE_URL": be.store}, "run",
		writeScenario(t, fill(chargesSQL, "/charges", ns, "")), "--target", url, "--seed", "3")
	// Its reading before the load fails, so nothing is sent: a runtime
	// error (4), not an inconclusive run (3, only for a load that happened).
	if r.code != ExitRuntime || strings.Contains(r.out+r.err, "hunter2") {
		t.Errorf("unreachable SQL oracle: exit %d, want %d, and no password in output\n%s%s", r.code, ExitRuntime, r.out, r.err)
	}
}
