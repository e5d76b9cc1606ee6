package openapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/scenarios"
)

func load(t *testing.T, name string) *Spec {
	t.Helper()
	s, err := Load(context.Background(), filepath.Join("testdata", name), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func plan(t *testing.T, s *Spec, o PlanOptions) (map[string]Operation, map[string]Skipped) {
	t.Helper()
	p, err := s.Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]Operation{}
	for _, op := range p.Ops {
		ops[op.ID] = op
	}
	skipped := map[string]Skipped{}
	for _, sk := range p.Skipped {
		skipped[sk.OperationID] = sk
	}
	return ops, skipped
}

func body(t *testing.T, op Operation) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(op.Request.Body), &m); err != nil {
		t.Fatalf("%s: body %q: %v", op.Name(), op.Request.Body, err)
	}
	return m
}

func TestPlan30(t *testing.T) {
	s := load(t, "v30.yaml")
	if s.Version != "3.0.3" || len(s.Broken) != 0 {
		t.Fatalf("version %q, broken %v", s.Version, s.Broken)
	}
	ops, skipped := plan(t, s, PlanOptions{Auth: map[string]string{"bearerAuth": `{{env "TOKEN"}}`}})
	if _, ok := ops["listCharges"]; ok {
		t.Error("a GET is planned without --include")
	}

	c := ops["createCharge"]
	if c.Key.Header != "Idempotency-Key" || !c.KeyRequired {
		t.Errorf("createCharge key %+v required %v, want the required Idempotency-Key header", c.Key, c.KeyRequired)
	}
	if c.BodyFrom != "schema" || c.Request.Path != "/charges" || c.Request.Headers["Content-Type"] != "application/json" {
		t.Errorf("createCharge: from %q, %+v", c.BodyFrom, c.Request)
	}
	b := body(t, c)
	want := map[string]any{"amount": 50.0, "currency": "usd", "customer": "x{{.Seq}}", "receipt_email": "user{{.Seq}}@example.com", "created_at": "2026-01-01T00:00:00Z"}
	for k, v := range want {
		if b[k] != v {
			t.Errorf("createCharge body %s = %v, want %v", k, b[k], v)
		}
	}
	if _, ok := b["id"]; ok {
		t.Error("a readOnly property is sent")
	}
	if _, ok := b["note"]; ok {
		t.Error("an optional property is sent where others are required")
	}
	if c.Request.Headers["Authorization"] != `Bearer {{env "TOKEN"}}` {
		t.Errorf("createCharge Authorization %q", c.Request.Headers["Authorization"])
	}
	if c.Effects == nil || c.Effects.Request != "GET /charges?idempotency_key={{.Key}}" || c.Effects.Value != "$.count" || c.Effects.From != "links readBack" {
		t.Errorf("createCharge effects %+v, want the read-back its link names", c.Effects)
	}

	r := ops["createRefund"]
	if r.BodyFrom != "example" || r.Request.Body != `{"charge":"ch_1","reason":"duplicate"}` || r.KeyRequired {
		t.Errorf("createRefund: %q from %q, key required %v", r.Request.Body, r.BodyFrom, r.KeyRequired)
	}
	if r.Effects != nil {
		t.Errorf("createRefund effects %+v, want none", r.Effects)
	}

	d := ops["debitAccount"]
	if d.Key.BodyField != "op_id" || !d.KeyRequired || d.KeyFrom != KeyExtension || d.Request.Path != "/accounts/acct_1/debit" {
		t.Errorf("debitAccount: key %+v (%s), path %q", d.Key, d.KeyFrom, d.Request.Path)
	}
	if db := body(t, d); db["amount"] != 1.0 || db["op_id"] != nil {
		t.Errorf("debitAccount body %v: amount 1 (above 0, a multiple of 0.5), and no op_id: the audit sets the key's field", db)
	}
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "apiKey") {
		t.Errorf("debitAccount notes %q: want the apiKey scheme without --auth noted", d.Notes)
	}
	if _, ok := d.Request.Headers["Authorization"]; ok {
		t.Error("the document's bearer is sent where the operation asks for an apiKey")
	}

	l := ops["like"]
	if l.Key.Header != "X-Like-Key" || l.Request.Body != "post=x{{.Seq}}" || l.Request.Headers["Content-Type"] != "application/x-www-form-urlencoded" {
		t.Errorf("like: key %+v, body %q, headers %v", l.Key, l.Request.Body, l.Request.Headers)
	}

	for id, part := range map[string]string{
		"legacyCharge": "deprecated",
		"naiveCharge":  "declares no idempotency key",
		"upload":       "application/octet-stream only",
	} {
		if sk, ok := skipped[id]; !ok || !strings.Contains(sk.Reason, part) {
			t.Errorf("%s: skipped %+v, want a reason with %q", id, sk, part)
		}
	}
	if skipped["legacyCharge"].Pointer != "#/paths/~1legacy~1charges/post/deprecated" {
		t.Errorf("legacyCharge pointer %q", skipped["legacyCharge"].Pointer)
	}
}

func TestPlanSelection(t *testing.T) {
	s := load(t, "v30.yaml")
	cases := []struct {
		name             string
		o                PlanOptions
		planned, skipped []string
	}{
		{"tag", PlanOptions{Include: []string{"charges"}}, []string{"createCharge"}, nil},
		{"glob", PlanOptions{Include: []string{"POST /accounts/*"}}, []string{"debitAccount"}, nil},
		{"any method", PlanOptions{Include: []string{"* /charges"}, KeyHeader: "Idempotency-Key"}, []string{"createCharge", "listCharges"}, nil},
		{"deprecated by id", PlanOptions{Include: []string{"legacyCharge"}}, []string{"legacyCharge"}, nil},
		{"exclude", PlanOptions{Exclude: []string{"refunds", "like"}}, []string{"createCharge", "debitAccount"}, []string{"createRefund", "like"}},
		{"key header for the rest", PlanOptions{KeyHeader: "Idempotency-Key"}, []string{"naiveCharge"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ops, skipped := plan(t, s, c.o)
			for _, id := range c.planned {
				if _, ok := ops[id]; !ok {
					t.Errorf("%s not planned (skipped: %+v)", id, skipped[id])
				}
			}
			for _, id := range c.skipped {
				if sk, ok := skipped[id]; !ok || !strings.Contains(sk.Reason, "--exclude") {
					t.Errorf("%s: %+v, want skipped by --exclude", id, sk)
				}
			}
			if c.name == "tag" || c.name == "glob" {
				if len(ops) != 1 {
					t.Errorf("planned %d operations, want 1", len(ops))
				}
			}
		})
	}
	if nc := func() Operation {
		ops, _ := plan(t, s, PlanOptions{KeyHeader: "Idempotency-Key"})
		return ops["naiveCharge"]
	}(); nc.KeyRequired || !strings.Contains(nc.KeyFrom, "--key-header") {
		t.Errorf("naiveCharge: required %v, from %q", nc.KeyRequired, nc.KeyFrom)
	}
}

func TestPlan31CrossFileAndBroken(t *testing.T) {
	s := load(t, "v31.json")
	broken := map[string]Skipped{}
	for _, b := range s.Broken {
		broken[b.OperationID] = b
	}
	for id, want := range map[string]struct{ ptr, part string }{
		"shipOrder": {"#/paths/~1orders~1{id}~1ship/post/requestBody/content/application~1json/schema/$ref", "does not resolve"},
		"addItem":   {"#/paths/~1orders~1{id}~1items/post/requestBody/content/application~1json/schema/$ref", `nothing at "#/components/schemas/Missing" in the document`},
		"remote":    {"#/paths/~1remote/post/requestBody/content/application~1json/schema/$ref", "off this document's host"},
	} {
		b, ok := broken[id]
		if !ok || b.Pointer != want.ptr || !strings.Contains(b.Reason, want.part) {
			t.Errorf("%s: %+v, want pointer %s and %q", id, b, want.ptr, want.part)
		}
	}
	ops, skipped := plan(t, s, PlanOptions{})
	o, ok := ops["createOrder"]
	if !ok {
		t.Fatalf("createOrder not planned: %+v", skipped["createOrder"])
	}
	b := body(t, o)
	if b["customer"] != "cus_7" || b["kind"] != "retail" {
		t.Errorf("createOrder body %v: want the examples and const of the other file's schemas", b)
	}
	if c, _ := b["contact"].(map[string]any); c["email"] != "user{{.Seq}}@example.com" {
		t.Errorf("contact %v: want oneOf's first branch", b["contact"])
	}
	lines, _ := b["lines"].([]any)
	if len(lines) != 2 {
		t.Fatalf("lines %v: want minItems 2", b["lines"])
	}
	if l := lines[0].(map[string]any); l["qty"] != 3.0 || l["sku"] != "x{{.Seq}}" {
		t.Errorf("line %v: want the default qty and a sku within maxLength", l)
	}
	if c := ops["cancelOrder"]; c.Request.Path != "/orders/ord_42/cancel" || c.Request.Body != "" {
		t.Errorf("cancelOrder: %+v", c.Request)
	}
	sk, ok := skipped["addNote"]
	if !ok || sk.Pointer != "#/paths/~1orders~1{id}~1notes/post/requestBody/content/application~1json/schema/properties/code" || !strings.Contains(sk.Reason, "pattern") {
		t.Errorf("addNote: %+v, want skipped at its code's pattern", sk)
	}
	for _, id := range []string{"shipOrder", "addItem", "remote"} {
		if _, ok := skipped[id]; !ok {
			t.Errorf("%s: a broken operation is not among the skipped", id)
		}
	}
}

func TestPlan20(t *testing.T) {
	s := load(t, "v20.yaml")
	if s.Version != "2.0" {
		t.Fatalf("version %q", s.Version)
	}
	if len(s.Doc.Servers) == 0 || s.Doc.Servers[0].URL != "https://api.example.com/v2" {
		t.Errorf("servers %v: want host and basePath as the server", s.Doc.Servers)
	}
	ops, skipped := plan(t, s, PlanOptions{})
	p, ok := ops["createPayment"]
	if !ok {
		t.Fatalf("createPayment not planned: %+v", skipped)
	}
	if p.Key.Header != "Idempotency-Key" || !p.KeyRequired || p.Request.Body != `{"amount":1,"payee":"x{{.Seq}}"}` {
		t.Errorf("createPayment: key %+v, body %q", p.Key, p.Request.Body)
	}
	if v := ops["voidPayment"]; v.Method != "DELETE" || !strings.HasPrefix(v.Request.Path, "/payments/") {
		t.Errorf("voidPayment: %s %s", v.Method, v.Request.Path)
	}
}

func TestFixtures(t *testing.T) {
	fx, err := ParseFixtures("fx.yaml", []byte(`operations:
  createCharge:
    body: '{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}'
    headers: {X-Tenant: t1}
    effects: {request: 'GET /internal/charges/{{.Key}}', value: '$.n'}
    error_body: '{"amount":1,"currency":"usd","customer":"cus_fail"}'
  "POST /accounts/{account}/debit":
    path: {account: acct_9}
  createRefund:
    skip: refunds need a charge
  createChrage:
    body: '{}'
`))
	if err != nil {
		t.Fatal(err)
	}
	s := load(t, "v30.yaml")
	p, err := s.Plan(PlanOptions{Fixtures: fx})
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]Operation{}
	for _, o := range p.Ops {
		ops[o.ID] = o
	}
	c := ops["createCharge"]
	if c.BodyFrom != "fixtures" || !strings.Contains(c.Request.Body, "cus_{{.Seq}}") || c.Request.Headers["X-Tenant"] != "t1" {
		t.Errorf("createCharge: %+v", c)
	}
	if c.ErrorBody != `{"amount":1,"currency":"usd","customer":"cus_fail"}` {
		t.Errorf("createCharge error body %q", c.ErrorBody)
	}
	if c.Effects == nil || c.Effects.From != "fixtures" || c.Effects.Value != "$.n" {
		t.Errorf("createCharge effects %+v", c.Effects)
	}
	if d := ops["debitAccount"]; d.Request.Path != "/accounts/acct_9/debit" {
		t.Errorf("debitAccount path %q", d.Request.Path)
	}
	if _, ok := ops["createRefund"]; ok {
		t.Error("a skipped fixture is planned")
	}
	un := fx.Unused(p)
	if len(un) != 1 || !strings.Contains(un[0], "fx.yaml:11: operations.createChrage: no such operation") {
		t.Errorf("unused %q", un)
	}

	_, err = ParseFixtures("bad.yaml", []byte("operations:\n  x:\n    bodyy: '{}'\n    key: {header: A, field: b}\n"))
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:3") || !strings.Contains(err.Error(), "bad.yaml:4: operations.x.key: header and field both set") {
		t.Errorf("bad fixtures: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, c := range map[string]struct{ text, part string }{
		"notyaml.yaml":  {"a: [", "not JSON or YAML"},
		"nothing.yaml":  {"title: x\n", `no "openapi" or "swagger"`},
		"v4.yaml":       {"openapi: 4.0.0\n", "want 3.0, 3.1 or 3.2"},
		"swagger1.yaml": {"swagger: '1.2'\n", "want 2.0"},
	} {
		_, err := Load(context.Background(), write(name, c.text), nil)
		if err == nil || !strings.Contains(err.Error(), c.part) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want %q and the file named", name, err, c.part)
		}
	}
	if _, err := Load(context.Background(), filepath.Join(dir, "absent.yaml"), nil); err == nil {
		t.Error("an absent file loads")
	}
}

// A path item kept in another file that is not there leaves that path out,
// named with its pointer; the document's other operations are planned.
func TestLoadBrokenPathItem(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "spec.yaml")
	spec := `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /gone:
    $ref: missing.yaml#/paths/~1gone
  /a:
    post:
      operationId: a
      parameters: [{name: Idempotency-Key, in: header, schema: {type: string}}]
      requestBody: {content: {application/json: {schema: {type: object, properties: {n: {type: integer}}}}}}
      responses: {"200": {description: ok}}
`
	if err := os.WriteFile(p, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(context.Background(), p, nil)
	if err != nil {
		t.Fatalf("a broken path item refuses the document: %v", err)
	}
	if len(s.Broken) != 1 || s.Broken[0].Path != "/gone" || s.Broken[0].Pointer != "#/paths/~1gone/$ref" || !strings.Contains(s.Broken[0].Reason, "missing.yaml") {
		t.Errorf("broken = %+v, want /gone at #/paths/~1gone/$ref naming missing.yaml", s.Broken)
	}
	if ops, _ := plan(t, s, PlanOptions{}); ops["a"].Path != "/a" {
		t.Errorf("operation a not planned beside the broken path")
	}
}

func TestLoadURL(t *testing.T) {
	files := map[string]string{
		"/spec.json": `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/a":{"post":{"operationId":"a",
			"parameters":[{"name":"Idempotency-Key","in":"header","schema":{"type":"string"}}],
			"requestBody":{"content":{"application/json":{"schema":{"$ref":"/schemas.json#/A"}}}},"responses":{"200":{"description":"ok"}}}}}}`,
		"/schemas.json": `{"A":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f, ok := files[r.URL.Path]; ok {
			w.Write([]byte(f))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	s, err := Load(context.Background(), srv.URL+"/spec.json", srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	ops, skipped := plan(t, s, PlanOptions{})
	if ops["a"].Request.Body != `{"n":1}` {
		t.Errorf("a: %+v (skipped %+v)", ops["a"], skipped)
	}
	if _, err := Load(context.Background(), srv.URL+"/absent.json", srv.Client()); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("absent URL: %v", err)
	}
}

// A Swagger 2.0 body without consumes (anywhere) is a body of any type:
// planned as JSON from its schema.
func TestPlanSwaggerWithoutConsumes(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "v2.yaml")
	spec := `swagger: "2.0"
info: {title: t, version: "1"}
paths:
  /orders:
    post:
      operationId: createOrder
      parameters:
        - {name: Idempotency-Key, in: header, type: string, required: true}
        - {name: body, in: body, required: true, schema: {type: object, required: [sku, due], properties: {sku: {type: string, example: A1}, due: {type: string, format: date, example: 2024-01-31}}}}
      responses: {"201": {description: created}}
`
	if err := os.WriteFile(p, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	ops, skipped := plan(t, s, PlanOptions{})
	o, ok := ops["createOrder"]
	if !ok {
		t.Fatalf("createOrder not planned: %+v", skipped["createOrder"])
	}
	if b := body(t, o); b["sku"] != "A1" || b["due"] != "2024-01-31" || o.Request.Headers["Content-Type"] != "application/json" {
		t.Errorf("createOrder body %v, headers %v: want JSON from the schema, the YAML date as written", b, o.Request.Headers)
	}
}

// Links that name their operation by operationRef (a pointer into the
// document) chain and read back as those that name an operationId do.
func TestPlanOperationRef(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "v30.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(raw), "readBack:\n              operationId: listCharges", "readBack:\n              operationRef: '#/paths/~1charges/get'", 1)
	text = strings.Replace(text, "chargeIt:\n              operationId: createCustomerCharge", "chargeIt:\n              operationRef: 'v30.yaml#/paths/~1customers~1{customer}~1charges/post'", 1)
	if text == string(raw) || strings.Count(text, "operationRef") != 2 {
		t.Fatal("the test's spec edits did not apply")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "v30.yaml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "shared"), os.DirFS(filepath.Join("testdata", "shared"))); err != nil {
		t.Fatal(err)
	}
	s, err := Load(context.Background(), filepath.Join(dir, "v30.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ops, skipped := plan(t, s, PlanOptions{})
	if c := ops["createCharge"]; c.Effects == nil || c.Effects.Request != "GET /charges?idempotency_key={{.Key}}" {
		t.Errorf("createCharge effects %+v, want the read-back its operationRef names", c.Effects)
	}
	c, ok := ops["createCustomerCharge"]
	if !ok || len(c.Chains) != 1 || c.Chains[0].From.ID != "createCustomer" {
		t.Errorf("createCustomerCharge: %+v (skipped %+v), want chained from createCustomer by operationRef", c.Chains, skipped["createCustomerCharge"])
	}
}

// A path parameter with no example is taken from the answer of the
// operation whose link names it: create a customer, then charge it.
func TestPlanChain(t *testing.T) {
	s := load(t, "v30.yaml")
	ops, skipped := plan(t, s, PlanOptions{})
	c, ok := ops["createCustomerCharge"]
	if !ok {
		t.Fatalf("createCustomerCharge not planned: %+v", skipped["createCustomerCharge"])
	}
	if c.Request.Path != "/customers/{customer}/charges" || len(c.Chains) != 1 {
		t.Fatalf("path %q, chains %+v", c.Request.Path, c.Chains)
	}
	ch := c.Chains[0]
	if ch.Param != "customer" || ch.From.ID != "createCustomer" || ch.Expr != "$response.body#/id" || ch.Link != "chargeIt" ||
		ch.From.Request.Body != `{"email":"user{{.Seq}}@example.com"}` || ch.From.Key != (scenarios.KeyPlace{}) {
		t.Errorf("chain %+v", ch)
	}
	if _, ok := skipped["createCustomer"]; !ok {
		t.Error("the keyless source is audited")
	}
	v, err := ch.Value(201, nil, []byte(`{"id":"cus 9"}`))
	if err != nil || v != "cus 9" {
		t.Fatalf("value %q, %v", v, err)
	}
	for _, bad := range []struct {
		status int
		body   string
		says   string
	}{{500, `{}`, "was answered 500"}, {201, `[1]`, "nothing at"}, {201, `<p>`, "not JSON"}, {201, `{"id":{"a":1}}`, "an object"}} {
		if _, err := ch.Value(bad.status, nil, []byte(bad.body)); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%d %s: %v, want %q", bad.status, bad.body, err, bad.says)
		}
	}
}
