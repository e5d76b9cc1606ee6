package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"text/template"

	"gopkg.in/yaml.v3"

	"github.com/idemcheck/idemcheck/internal/hint"
	"github.com/idemcheck/idemcheck/internal/redact"
)

// Starter is a starting scenario for one operation of the user's API, as
// `idemcheck init` writes it: the request and its key, a load, retries,
// the classic faults and the invariants, each section with a comment that
// says what to change.
type Starter struct {
	Name string
	// Request is the operation: method, path, header templates, body
	// template.
	Request Request
	Key     KeyPlace
	Targets []string
	// Effects is the path of a request that answers one key's effect
	// count, a template using {{.Key}}; "" for none (the scenario then
	// checks same_response alone). EffectsMethod is its method, "" for
	// GET; EffectsValue the JSONPath to the count in its answer.
	Effects, EffectsMethod, EffectsValue string
	// Credentials are the headers the effects reads send too.
	Credentials map[string]string
}

// StarterYAML writes st as a scenario file, with comments. Every value is
// quoted as YAML needs it; the caller parses the file to check it.
func StarterYAML(st Starter) ([]byte, error) {
	var b bytes.Buffer
	if err := starterTemplate.Execute(&b, st); err != nil {
		return nil, fmt.Errorf("writing the scenario: %w", err)
	}
	return b.Bytes(), nil
}

// quote writes s as a YAML scalar.
func quote(s string) (string, error) {
	b, err := yaml.Marshal(s)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

var starterTemplate = template.Must(template.New("starter").Funcs(template.FuncMap{"q": quote}).Parse(`# A starting scenario for {{.Request.Method}} {{.Request.Path}}, written by 'idemcheck init'.
# Run it with
#   idemcheck run FILE
# Every field is described in docs/scenario.md.
name: {{q .Name}}
description: >-
  {{.Request.Method}} {{.Request.Path}} with its idempotency key while answers are lost,
  requests time out and are sent twice.{{if .Effects}} Every key must have
  exactly one effect, and every retry must get the first answer back.{{else}} Every retry must get the
  first answer back.{{end}}
expect: pass

# The base URL; --target and IDEMCHECK_TARGET override it.
target:{{range .Targets}}
  - {{q .}}{{end}}

operation:
  method: {{.Request.Method}}
  path: {{q .Request.Path}}
{{- if .Request.Headers}}
  headers:{{range $k, $v := .Request.Headers}}
    {{q $k}}: {{q $v}}{{end}}
{{- end}}
{{- if .Request.Body}}
  # Templates see {{"{{"}}.Seq{{"}}"}} (the op's number), {{"{{"}}.Key{{"}}"}}, {{"{{"}}.User{{"}}"}}; randInt draws from the
  # op's seeded source, so a retry sends the same body.
  body: {{q .Request.Body}}
{{- end}}
  key:
{{- if .Key.BodyField}}
    body_field: {{q .Key.BodyField}}
{{- else}}
    header: {{q .Key.Header}}
{{- end}}

# Closed model: 8 workers send 200 ops. For an open model, rate: 50/s and
# duration: 30s.
load:
  ops: 200
  concurrency: 8

retry:
  attempts: 5
  backoff: {initial: 50ms, max: 2s, multiplier: 2, jitter: 0.5}
  on: [fail, info, 409, 429, 5xx]

faults:
  - kind: drop_ack      # processed, but the answer is lost
    rate: 0.1
  - kind: timeout       # the client gives up while the server works
    rate: 0.05
    # half the operation's p50 latency, measured with a few plain requests
    # before the load, so it fires on a fast API as on a slow one; a
    # duration (after: 50ms) is used as it is
    after: 0.5x
  - kind: duplicate     # a double submit
    rate: 0.05
    copies: 2
  - kind: reset         # the connection fails before sending
    rate: 0.02

# Long enough for abandoned requests to finish before counting.
quiet: 2s
{{if .Effects}}
oracles:
  - name: effects
    effects:
      per_key:
{{- with .EffectsMethod}}
        method: {{q .}}
{{- end}}
        path: {{q .Effects}}
{{- with .Credentials}}
        headers:{{range $k, $v := .}}
          {{q $k}}: {{q $v}}{{end}}
{{- end}}
        value: {{q .EffectsValue}}

invariants:
  - check: exactly_once
    oracle: effects
  - check: same_response
{{else}}
# To count effects (charges, orders) per key, add an oracle (docs/scenario.md,
# "oracles") and the exactly_once invariant on it, or run
# 'idemcheck init' again with --effects PATH.
invariants:
  - check: same_response
{{end}}
thresholds:
  p99: 2s
`))

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// StarterName is a starting scenario's name from its operation's method
// and path: "post-v1-charges" for POST /v1/charges?x=1, "my-operation"
// when nothing is left.
func StarterName(method, path string) string {
	path, _, _ = strings.Cut(path, "?")
	n := strings.Trim(nonName.ReplaceAllString(strings.ToLower(method+"-"+path), "-"), "-")
	if n == "" {
		return "my-operation"
	}
	return n
}

// credentialHeader names headers that carry credentials.
var credentialHeader = regexp.MustCompile(`(?i)^(authorization|proxy-authorization|cookie|x-api-key|api-key|apikey|x-auth-token|.*token.*|.*secret.*|.*password.*)$`)

// Credentials are the credential headers of headers: a starter's effects
// reads carry them, nothing else.
func Credentials(headers map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range headers {
		if credentialHeader.MatchString(k) {
			out[k] = v
		}
	}
	return out
}

// LiteralCredentials refuses credential headers with literal values: a
// scenario file would keep the secret.
func LiteralCredentials(headers map[string]string) error {
	for name, value := range headers {
		if (credentialHeader.MatchString(name) || redact.SecretHeader(name)) && !strings.Contains(value, "{{") {
			return hint.New(fmt.Sprintf(`take it from the environment: -H '%s: Bearer {{env "API_TOKEN"}}' (with --openapi: --auth 'SCHEME={{env "API_TOKEN"}}')`, name),
				fmt.Errorf("-H %s holds a literal value: the scenario file would keep the secret", name))
		}
	}
	return nil
}

// StarterText writes st (StarterYAML) and parses it as run would; source
// names it in the errors.
func StarterText(source string, st Starter) ([]byte, error) {
	text, err := StarterYAML(st)
	if err != nil {
		return nil, err
	}
	if _, err := Parse(source, text); err != nil {
		return nil, err
	}
	return text, nil
}

// URLCredentials refuses a target URL that holds a user or a password:
// a scenario file written from it would keep them.
func URLCredentials(u *url.URL) error {
	if u == nil || u.User == nil {
		return nil
	}
	return hint.New(`take them from the environment in a header: -H 'Authorization: Basic {{env "API_BASIC"}}'`,
		errors.New("the target URL holds credentials: the scenario file would keep them"))
}

// LiteralAuth refuses --auth SCHEME=VALUE values not read from the
// environment: the scenario files would keep the secret.
func LiteralAuth(auth []string) error {
	for _, a := range auth {
		if name, v, _ := strings.Cut(a, "="); !strings.Contains(v, "{{") || !strings.Contains(v, "env") {
			return hint.New(fmt.Sprintf(`take it from the environment: --auth '%s={{env "API_TOKEN"}}'`, name),
				fmt.Errorf("--auth %s holds a literal value: the scenario files would keep the secret", name))
		}
	}
	return nil
}
