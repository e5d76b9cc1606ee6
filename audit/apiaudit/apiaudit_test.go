package apiaudit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/audit"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

const chainSpec = `openapi: 3.0.3
info: {title: customers, version: "1"}
components:
  securitySchemes:
    bearerAuth: {type: http, scheme: bearer}
security: [{bearerAuth: []}]
paths:
  /customers:
    post:
      operationId: createCustomer
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
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
        "201": {description: charged}
`

func writeSpec(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(path, []byte(chainSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPlanErrorsTeach: every refusal of a plan says what to write instead.
func TestPlanErrorsTeach(t *testing.T) {
	spec := writeSpec(t)
	for _, tc := range []struct {
		name string
		o    PlanOptions
		says string
	}{
		{"auth without =", PlanOptions{Spec: spec, Auth: []string{"bearerAuth"}, Targets: []string{"http://127.0.0.1:1"}}, "security scheme"},
		{"auth of no scheme", PlanOptions{Spec: spec, Auth: []string{"oauth=x"}, Targets: []string{"http://127.0.0.1:1"}}, "bearerAuth"},
		{"no target, no server", PlanOptions{Spec: spec}, "--target"},
		{"target not http", PlanOptions{Spec: spec, Targets: []string{"ftp://x"}}, "--target"},
		{"nothing selected", PlanOptions{Spec: spec, Include: []string{"nothing"}, Targets: []string{"http://127.0.0.1:1"}}, "--include"},
		{"no such file", PlanOptions{Spec: spec + ".missing", Targets: []string{"http://127.0.0.1:1"}}, "OpenAPI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPlan(context.Background(), tc.o)
			var h interface{ Hint() string }
			if err == nil || !errors.As(err, &h) || !strings.Contains(h.Hint(), tc.says) {
				t.Fatalf("NewPlan() error = %v, want one whose hint names %q", err, tc.says)
			}
		})
	}
	p, err := NewPlan(context.Background(), PlanOptions{Spec: spec, Getenv: func(k string) string {
		return map[string]string{"IDEMCHECK_TARGET": "http://127.0.0.1:1/v1/"}[k]
	}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Prefix != "/v1" || p.TargetName() != "http://127.0.0.1:1/v1" {
		t.Errorf("IDEMCHECK_TARGET planned as prefix %q on %s, want /v1 on http://127.0.0.1:1/v1", p.Prefix, p.TargetName())
	}
}

// TestDryRunMasks: the dry run names every operation and its first
// request, and never an --auth value.
func TestDryRunMasks(t *testing.T) {
	const token = "Bearer sk_live_dry_run_secret"
	p, err := NewPlan(context.Background(), PlanOptions{Spec: writeSpec(t), Auth: []string{"bearerAuth=" + token}, Targets: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	out := (&Audit{Plan: p, Spec: "spec.yaml"}).DryRun()
	for _, want := range []string{"1. createCustomer", "2. createCustomerCharge", "POST http://127.0.0.1:1/customers", "{customer} from the answer of createCustomer", "dry run: nothing sent. 2 operations"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk_live") {
		t.Errorf("dry run shows the --auth value:\n%s", out)
	}
}

// closer answers its first POST /customers, then reads the next on the
// same kept-alive connection and closes it without answering; it counts
// the keys it sees.
type closer struct {
	ln   net.Listener
	mu   sync.Mutex
	keys map[string]int
	n    int
}

func newCloser(t *testing.T) *closer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &closer{ln: ln, keys: map[string]int{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go c.serve(conn)
		}
	}()
	return c
}

func (c *closer) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = req.Body.Read(make([]byte, 4096))
		c.mu.Lock()
		c.keys[req.Header.Get("Idempotency-Key")]++
		c.n++
		n := c.n
		c.mu.Unlock()
		if n > 1 {
			return // read, then closed without an answer
		}
		body := `{"id":"cus_1"}`
		fmt.Fprintf(conn, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
}

// TestChainSendsOnce: a link's source is sent through the runner's
// client: when its kept-alive connection breaks after the request was
// read, the link fails and the server saw its key once. net/http resends
// a POST with an Idempotency-Key on a reused connection that broke, a
// second create no one would see.
func TestChainSendsOnce(t *testing.T) {
	srv := newCloser(t)
	base := "http://" + srv.ln.Addr().String()
	p, err := NewPlan(context.Background(), PlanOptions{Spec: writeSpec(t), Include: []string{"createCustomerCharge"}, Targets: []string{base}})
	if err != nil {
		t.Fatal(err)
	}
	tr := runner.NewTransport(2)
	// the first request, answered, leaves its connection kept alive for
	// the link's
	resp, err := (&http.Client{Transport: tr}).Post(base+"/warm", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	a := &Audit{Plan: p, Config: audit.Config{Transport: tr}}
	au, _, err := a.auditor(p.Ops[0], 100)
	if err != nil {
		t.Fatal(err)
	}
	_, err = au.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "{customer} comes from createCustomer") || !strings.Contains(err.Error(), "which failed") {
		t.Fatalf("the link: error %v, want its failure", err)
	}
	if au.Sent() != 1 {
		t.Errorf("%d sent, want the link alone", au.Sent())
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.n != 2 {
		t.Errorf("the server read %d requests, want 2: the link was sent again behind the audit's back (keys %v)", srv.n, srv.keys)
	}
}

// TestStarters: an operation whose path comes from a link is left out,
// saying why; the rest get a scenario named from their operationId that
// parses; a literal credential is refused.
func TestStarters(t *testing.T) {
	p, err := NewPlan(context.Background(), PlanOptions{Spec: writeSpec(t), Targets: []string{"http://127.0.0.1:1/v1"}})
	if err != nil {
		t.Fatal(err)
	}
	sts, left, err := p.Starters(map[string]string{"Authorization": `Bearer {{env "TOKEN"}}`})
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 1 || sts[0].Name != "create-customer" || sts[0].Request.Path != "/v1/customers" || sts[0].Credentials["Authorization"] == "" {
		t.Fatalf("starters = %+v, want create-customer on /v1/customers with its credential", sts)
	}
	if len(left) != 1 || !strings.Contains(left[0], "createCustomerCharge") || !strings.Contains(left[0], "{customer}") {
		t.Errorf("left out = %q, want createCustomerCharge and its {customer}", left)
	}
	if _, err := scenarios.StarterText("create-customer.yaml", sts[0].Starter); err != nil {
		t.Errorf("the starter does not parse: %v", err)
	}
	if _, _, err := p.Starters(map[string]string{"Authorization": "Bearer sk_live_1"}); err == nil || !strings.Contains(err.Error(), "literal") {
		t.Errorf("a literal credential: error %v, want a refusal", err)
	}
}
