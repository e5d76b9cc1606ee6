package scenarios

import (
	"strings"
	"testing"
)

func TestLiteralSecrets(t *testing.T) {
	const base = `name: s
target: %TARGET%
operation:
  method: POST
  path: /charges
  headers:
    Authorization: %AUTH%
    X-Request-Source: idemcheck
  key: {header: Idempotency-Key}
load: {ops: 1, concurrency: 1}
oracles:
  - name: ledger
    effects:
      sql:
        url: %URL%
        per_key: SELECT count(*) FROM charges WHERE key = $1
invariants:
  - check: at_most_once
    oracle: ledger
`
	parse := func(target, auth, url string) *Scenario {
		t.Helper()
		y := strings.NewReplacer("%TARGET%", target, "%AUTH%", auth, "%URL%", url).Replace(base)
		sc, err := Parse("s.yaml", []byte(y))
		if err != nil {
			t.Fatalf("Parse: %v\n%s", err, y)
		}
		return sc
	}
	clean := parse("http://127.0.0.1:8080", `"Bearer {{env \"API_TOKEN\"}}"`, `'{{env "LEDGER_URL"}}'`)
	if ds := clean.LiteralSecrets(false); len(ds) != 0 {
		t.Errorf("secrets from the environment flagged: %v", ds)
	}
	dirty := parse("http://u:pw@127.0.0.1:8080", "Bearer sk_live_123", "postgres://app:hunter2@db:5432/pay")
	ds := dirty.LiteralSecrets(false)
	var fields []string
	for _, d := range ds {
		fields = append(fields, d.Field)
		if d.Line == 0 || d.Hint == "" {
			t.Errorf("diagnostic %+v: want a line and a hint", d)
		}
	}
	if got := strings.Join(fields, " "); !strings.Contains(got, "operation.headers.Authorization") ||
		!strings.Contains(got, "oracles[0].effects.sql.url") || !strings.Contains(got, "target") {
		t.Errorf("literal secrets found in %q, want the header, the oracle URL and the target", got)
	}
	if ds := dirty.LiteralSecrets(true); len(ds) != 2 {
		t.Errorf("with the targets given on the command line: %v, want the header and the URL only", ds)
	}
}
