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

// A literal secret in a request body (JSON or form), a path's query or a
// setup request is found at its field, named, never shown; the same
// fields read from the environment, or holding no credential, are not.
func TestLiteralSecretsBodiesAndQueries(t *testing.T) {
	const y = `name: s
target: http://127.0.0.1:8080
setup:
  - method: POST
    path: /login
    headers: {Content-Type: application/x-www-form-urlencoded}
    body: 'username=ops&password=hunter2'
operation:
  method: POST
  path: /charges?api_key=sk_live_path&limit=10
  body: '{"amount":100,"customer":"cus_{{.Seq}}","card":{"client_secret":"pi_secret_777"},"note":"password reset"}'
  key: {header: Idempotency-Key}
load: {ops: 1, concurrency: 1}
oracles:
  - name: ledger
    effects:
      bulk:
        path: '/charges/counts?token=tok_oracle&key=k_oracle'
        value: $.counts
invariants:
  - check: at_most_once
    oracle: ledger
`
	sc, err := Parse("s.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ds := sc.LiteralSecrets(true)
	got := map[string]bool{}
	for _, d := range ds {
		got[d.Field+" "+d.Message] = true
		for _, secret := range []string{"hunter2", "sk_live_path", "pi_secret_777", "tok_oracle", "k_oracle"} {
			if strings.Contains(d.String(), secret) {
				t.Errorf("diagnostic %q shows the secret %s", d, secret)
			}
		}
		if d.Line == 0 || !strings.Contains(d.Hint, "{{env") {
			t.Errorf("diagnostic %+v: want a line and a hint to read it from the environment", d)
		}
	}
	for _, want := range []string{
		`setup[0].body a credential written in the scenario (body field "password")`,
		`operation.path a credential written in the scenario (query parameter "api_key")`,
		`operation.body a credential written in the scenario (body field "client_secret")`,
		`oracles[0].effects.bulk.path a credential written in the scenario (query parameter "token")`,
		`oracles[0].effects.bulk.path a credential written in the scenario (query parameter "key")`,
	} {
		if !got[want] {
			t.Errorf("not found: %s\nfound: %v", want, ds)
		}
	}
	if len(ds) != 5 {
		t.Errorf("%d diagnostics, want 5 (not note, limit, username or amount): %v", len(ds), ds)
	}

	clean := strings.NewReplacer("password=hunter2", `password={{env "PW"}}`, "api_key=sk_live_path", `api_key={{env "API_KEY"}}`,
		`"pi_secret_777"`, `"{{env "CS"}}"`, "token=tok_oracle&key=k_oracle", `token={{env "T"}}&key={{.Key}}`).Replace(y)
	if sc, err = Parse("s.yaml", []byte(clean)); err != nil {
		t.Fatal(err)
	}
	if ds := sc.LiteralSecrets(true); len(ds) != 0 {
		t.Errorf("secrets read from the environment flagged: %v", ds)
	}
}

func TestReadsEnv(t *testing.T) {
	for text, want := range map[string]bool{
		"":                                   false,
		"k-{{.Seq}}":                         false,
		`{{env "K"}}-{{.Seq}}`:               true,
		`{{if .User}}{{env "K" "d"}}{{end}}`: true,
		`{{with .User}}{{. | printf "%s"}}{{end}}-{{uuid .}}`: false,
		`{{define "x"}}{{env "K"}}{{end}}{{template "x"}}`:    true,
		`env-{{.Seq}}`: false,
	} {
		if got := ReadsEnv(text); got != want {
			t.Errorf("ReadsEnv(%q) = %v, want %v", text, got, want)
		}
	}
}
