package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJoin(t *testing.T) {
	tests := []struct {
		base, path string
		want       string // "" for an error
	}{
		{"http://h", "/charges", "http://h/charges"},
		{"http://h/", "/charges", "http://h/charges"},
		{"http://h/api", "/charges", "http://h/api/charges"},
		{"http://h/api/", "charges", "http://h/api/charges"},
		{"http://h/api", "/charges?idempotency_key=k1&x=2", "http://h/api/charges?idempotency_key=k1&x=2"},
		{"https://h:8443/v1", "/posts/post-1/like", "https://h:8443/v1/posts/post-1/like"},
		{"http://h", "/a%20b", "http://h/a%20b"},
		{"http://h", "http://other/charges", ""},
		{"http://h", "/%zz", ""},
	}
	for _, tt := range tests {
		base, _ := url.Parse(tt.base)
		got, err := Join(base, tt.path)
		if tt.want == "" {
			if err == nil {
				t.Errorf("Join(%s, %q) = %q, want an error", tt.base, tt.path, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Join(%s, %q) = %q, %v, want %q", tt.base, tt.path, got, err, tt.want)
		}
	}
	if _, err := Join(nil, "/x"); err == nil {
		t.Errorf("Join(nil, /x) = nil error, want one")
	}
}

var v4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewKey(t *testing.T) {
	a := rand.New(rand.NewPCG(42, 7))
	b := rand.New(rand.NewPCG(42, 7))
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		ka, kb := NewKey(a), NewKey(b)
		if ka != kb {
			t.Fatalf("NewKey with the same seed = %s and %s, want equal", ka, kb)
		}
		if !v4.MatchString(ka) {
			t.Fatalf("NewKey = %s, want a UUID v4", ka)
		}
		if seen[ka] {
			t.Fatalf("NewKey repeated %s", ka)
		}
		seen[ka] = true
	}
	if NewKey(rand.New(rand.NewPCG(1, 1))) == NewKey(rand.New(rand.NewPCG(2, 1))) {
		t.Errorf("NewKey with different seeds gave the same key")
	}
}

func TestTemplateBuild(t *testing.T) {
	env := func(name string) string { return map[string]string{"TOKEN": "s3cret"}[name] }
	r := Request{
		Path: "/accounts/{{.User}}/debit?seq={{.Seq}}",
		Headers: map[string]string{
			"Authorization": `Bearer {{env "TOKEN"}}`,
			"X-Attempt":     "{{.Attempt}}",
			"X-Static":      "yes",
		},
		Body: `{"amount":{{add .Seq 10}},"expected_version":{{.Vars.version}},"op_id":"{{.Key}}","shard":{{mod .Seq 3}}}`,
	}
	tm, err := NewTemplate("operation", r, "POST", env)
	if err != nil {
		t.Fatalf("NewTemplate = %v", err)
	}
	base, _ := url.Parse("http://127.0.0.1:9/api")
	v := Vars{Key: "k-1", Seq: 7, User: "alice", Attempt: 2, Vars: map[string]string{"version": "3"}}
	req, err := tm.Build(context.Background(), base, v)
	if err != nil {
		t.Fatalf("Build = %v", err)
	}
	body, _ := io.ReadAll(req.Body)
	got := map[string]string{
		"method": req.Method, "url": req.URL.String(), "body": string(body),
		"auth": req.Header.Get("Authorization"), "attempt": req.Header.Get("X-Attempt"),
		"static": req.Header.Get("X-Static"), "type": req.Header.Get("Content-Type"),
	}
	want := map[string]string{
		"method": "POST", "url": "http://127.0.0.1:9/api/accounts/alice/debit?seq=7",
		"body": `{"amount":17,"expected_version":3,"op_id":"k-1","shard":1}`,
		"auth": "Bearer s3cret", "attempt": "2", "static": "yes", "type": "application/json",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Build (-want +got):\n%s", diff)
	}
	if req.GetBody == nil {
		t.Errorf("Build: GetBody is nil, want a replayable body")
	}

	// A captured variable the op does not have is an error, not "<no value>".
	_, err = tm.Body(context.Background(), Vars{Key: "k", Vars: map[string]string{}})
	var te *TemplateError
	if !errors.As(err, &te) || te.Field != "operation.body" {
		t.Errorf("Body without the var = %v, want a TemplateError on operation.body", err)
	}
}

func TestTemplateRandDeterministic(t *testing.T) {
	tm, err := NewTemplate("operation", Request{Path: "/x", Body: `{"n":{{randInt . 1 100}},"id":"{{uuid .}}"}`}, "POST", nil)
	if err != nil {
		t.Fatalf("NewTemplate = %v", err)
	}
	render := func(seed uint64) string {
		b, err := tm.Body(context.Background(), Vars{Seq: 1, Rand: rand.New(rand.NewPCG(seed, 1))})
		if err != nil {
			t.Fatalf("Body = %v", err)
		}
		return string(b)
	}
	if a, b := render(5), render(5); a != b {
		t.Errorf("Body with the same seed = %s and %s, want equal", a, b)
	}
	if a, b := render(5), render(6); a == b {
		t.Errorf("Body with different seeds = %s twice, want different", a)
	}
	// Without a source, the op's sequence number seeds it.
	a, _ := tm.Body(context.Background(), Vars{Seq: 3})
	b, _ := tm.Body(context.Background(), Vars{Seq: 3})
	if string(a) != string(b) {
		t.Errorf("Body without Rand = %s and %s, want equal", a, b)
	}
	if _, err := NewTemplate("x", Request{Path: "/{{randInt . 5 1}}"}, "GET", nil); err != nil {
		t.Fatalf("NewTemplate = %v", err)
	}
	bad, _ := NewTemplate("x", Request{Path: "/{{randInt . 5 1}}"}, "GET", nil)
	if _, err := bad.Path(context.Background(), Vars{}); err == nil {
		t.Errorf("randInt with max < min = nil error, want one")
	}
}

func TestNewTemplateErrors(t *testing.T) {
	for _, r := range []Request{
		{Path: "/{{.Key"},
		{Path: "/", Headers: map[string]string{"X": "{{nope}}"}},
		{Path: "/", Body: "{{end}}"},
	} {
		_, err := NewTemplate("operation", r, "POST", nil)
		var te *TemplateError
		if !errors.As(err, &te) {
			t.Errorf("NewTemplate(%+v) = %v, want a TemplateError", r, err)
		}
	}
	tm, err := NewTemplate("setup[0]", Request{Method: "put", Path: "/a"}, "GET", nil)
	if err != nil || tm.Method() != "PUT" {
		t.Errorf("NewTemplate(put).Method() = %v, %v, want PUT", tm, err)
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		text string
		v    Vars
		want string
	}{
		{"fixed", Vars{Seq: 3}, "fixed"},
		{"shared-{{div .Seq 2}}", Vars{Seq: 5}, "shared-2"},
		{"{{.User}}-{{mod .Seq 3}}-{{add .Seq 1}}", Vars{Seq: 4, User: "bob"}, "bob-1-5"},
		{"{{div .Seq 0}}", Vars{Seq: 4}, "0"},
	}
	for _, tt := range tests {
		x, err := NewText("operation.key.value", tt.text, nil)
		if err != nil {
			t.Fatalf("NewText(%q) = %v", tt.text, err)
		}
		if got, err := x.Render(context.Background(), tt.v); got != tt.want || err != nil {
			t.Errorf("Render(%q, %+v) = %q, %v, want %q", tt.text, tt.v, got, err, tt.want)
		}
	}
	// The same seed draws the same key.
	a, _ := NewText("k", "{{uuid .}}", nil)
	k1, _ := a.Render(context.Background(), Vars{Rand: rand.New(rand.NewPCG(1, 2))})
	k2, _ := a.Render(context.Background(), Vars{Rand: rand.New(rand.NewPCG(1, 2))})
	if k1 != k2 || len(k1) != 36 {
		t.Errorf("uuid keys %q, %q, want one UUID twice", k1, k2)
	}
}

func TestTemplateErrorText(t *testing.T) {
	_, err := NewText("operation.key.value", "{{nope}}", nil)
	var te *TemplateError
	if !errors.As(err, &te) {
		t.Fatalf("NewText = %v, want a TemplateError", err)
	}
	if got := err.Error(); strings.Count(got, "template:") != 1 || !strings.Contains(got, "operation.key.value") {
		t.Errorf("Error() = %q, want one \"template:\" and the field", got)
	}
	x, _ := NewText("operation.key.value", "{{.Nope}}", nil)
	_, err = x.Render(context.Background(), Vars{})
	if err == nil || strings.Count(err.Error(), "template:") != 1 {
		t.Errorf("Render error = %v, want one \"template:\"", err)
	}
	if got := (&TemplateError{Field: "f", Err: errors.New("boom")}).Error(); got != "template: f: boom" {
		t.Errorf("Error() = %q, want template: f: boom", got)
	}
}

func TestEnv(t *testing.T) {
	env := func(name string) string { return map[string]string{"SET": "v", "EMPTY": ""}[name] }
	tests := []struct {
		text, want string
		missing    string // the variable an EnvError names; "" for none
	}{
		{`{{env "SET"}}`, "v", ""},
		{`{{env "SET" "d"}}`, "v", ""},
		{`{{env "UNSET" "d"}}`, "d", ""},
		{`{{env "UNSET" ""}}`, "", ""},
		{`{{env "EMPTY" "d"}}`, "d", ""},
		{`{{env "UNSET"}}`, "", "UNSET"},
		{`{{env "EMPTY"}}`, "", "EMPTY"},
	}
	for _, tt := range tests {
		x, err := NewText("oracles[0].effects.sql.url", tt.text, env)
		if err != nil {
			t.Fatalf("NewText(%q) = %v", tt.text, err)
		}
		got, err := x.Render(context.Background(), Vars{})
		if tt.missing == "" {
			if err != nil || got != tt.want {
				t.Errorf("Render(%q) = %q, %v, want %q", tt.text, got, err, tt.want)
			}
			continue
		}
		var ee *EnvError
		var te *TemplateError
		if !errors.As(err, &ee) || ee.Name != tt.missing || !errors.As(err, &te) || te.Field != "oracles[0].effects.sql.url" {
			t.Errorf("Render(%q) = %q, %v, want an EnvError on %s in oracles[0].effects.sql.url", tt.text, got, err, tt.missing)
		}
	}
	// A nil getenv has nothing set.
	x, _ := NewText("f", `{{env "X"}}`, nil)
	var ee *EnvError
	if _, err := x.Render(context.Background(), Vars{}); !errors.As(err, &ee) {
		t.Errorf("Render with nil getenv = %v, want an EnvError", err)
	}
	x, _ = NewText("f", `{{env "X" "a" "b"}}`, nil)
	if _, err := x.Render(context.Background(), Vars{}); err == nil {
		t.Errorf("Render(env with two defaults) = nil, want an error")
	}
}

func TestMissingEnv(t *testing.T) {
	src := `name: t
setup:
  - {path: '/reset?t={{env "SETUP_TOKEN" "none"}}'}
operation:
  path: /charges
  headers: {Authorization: 'Bearer {{env "API_TOKEN"}}'}
  body: '{"amount":1}'
  key: {header: Idempotency-Key}
load: {ops: 1, concurrency: 1}
oracles:
  - name: ledger
    effects:
      sql: {url: '{{if true}}{{env "LEDGER_URL"}}{{end}}', grouped: 'SELECT k, count(*) FROM p GROUP BY 1'}
invariants: [{check: exactly_once, oracle: ledger}]
`
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse = %v (an unset variable is not a load error before the environment is known)", err)
	}
	ds := s.MissingEnv(func(string) string { return "" })
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%d %s %s", d.Line, d.Field, d.Message))
	}
	want := []string{
		"6 operation.headers.Authorization environment variable API_TOKEN is not set",
		"13 oracles[0].effects.sql.url environment variable LEDGER_URL is not set",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MissingEnv (-want +got):\n%s", diff)
	}
	all := func(string) string { return "x" }
	if ds := s.MissingEnv(all); ds != nil {
		t.Errorf("MissingEnv(all set) = %v, want nil", ds)
	}
}
