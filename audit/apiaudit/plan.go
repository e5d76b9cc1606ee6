// Package apiaudit audits a whole API from its OpenAPI document: it plans
// the operations the document selects (openapi), audits each as one
// endpoint's audit would (audit), and gathers their scorecards into one
// (checks.APIScorecard). `idemcheck audit --openapi` and `idemcheck init
// --openapi` are its shell; it prints nothing itself.
package apiaudit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/internal/hint"
	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/openapi"
)

// SpecTimeout bounds reading an OpenAPI document and the documents its
// $refs name.
const SpecTimeout = 30 * time.Second

// PlanOptions are what a plan is made from: the document, the flags that
// shape it, and where its operations are sent.
type PlanOptions struct {
	// Spec is the document: a file or an http(s) URL.
	Spec string
	// Include and Exclude select operations by operationId, tag or
	// 'METHOD /path' glob.
	Include, Exclude []string
	// Fixtures is a YAML file of per-operation overrides ("" for none).
	Fixtures string
	// Auth are SCHEME=VALUE values for the document's security schemes.
	Auth []string
	// KeyHeader and KeyField name a key the document does not declare.
	KeyHeader, KeyField string
	// Targets are the API's base URLs (replicas of one API); none means
	// IDEMCHECK_TARGET, else the document's first server.
	Targets []string
	// Getenv reads the environment (IDEMCHECK_TARGET).
	Getenv func(string) string
	// Transport reads a document given by URL; nil means
	// http.DefaultTransport.
	Transport http.RoundTripper
}

// Plan is what an API audit covers: the planned operations, each as the
// audit of one request, those left out, and where they are sent.
type Plan struct {
	Spec *openapi.Spec
	*openapi.Plan
	// Base is the scheme, host (and user) every operation is sent to;
	// Prefix the target's path, put before every operation's.
	Base   *url.URL
	Prefix string
	// Targets are the base URLs of the API's replicas (scheme and host).
	Targets []*url.URL
	// Auth are the --auth values, masked in a dry run.
	Auth []string
}

// NewPlan reads the document and the fixtures, and plans with o. Its
// errors say what to write instead (a Hint method); when ctx ends first,
// the error wraps ctx's.
func NewPlan(ctx context.Context, o PlanOptions) (*Plan, error) {
	auth := map[string]string{}
	var authValues []string
	for _, a := range o.Auth {
		name, value, ok := strings.Cut(a, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, hint.New(`the name of a security scheme of the document: --auth 'bearerAuth={{env "API_TOKEN"}}'`,
				fmt.Errorf("--auth %q: want SCHEME=VALUE", redaction.Arg(strings.SplitN(a, "=", 2)[0])))
		}
		auth[strings.TrimSpace(name)] = value
		authValues = append(authValues, value)
	}
	var fx *openapi.Fixtures
	if o.Fixtures != "" {
		var err error
		if fx, err = openapi.ReadFixtures(o.Fixtures); err != nil {
			return nil, hint.New("docs/audit.md describes the fixtures file", err)
		}
	}
	transport := o.Transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	lctx, cancel := context.WithTimeout(ctx, SpecTimeout)
	defer cancel()
	spec, err := openapi.Load(lctx, o.Spec, &http.Client{Transport: transport})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		return nil, hint.New("--openapi takes an OpenAPI 3.x or Swagger 2.0 document, a file or an http(s) URL", err)
	}
	plan, err := spec.Plan(openapi.PlanOptions{Include: o.Include, Exclude: o.Exclude, KeyHeader: o.KeyHeader,
		KeyField: o.KeyField, Fixtures: fx, Auth: auth})
	if err != nil {
		return nil, err
	}
	if un := fx.Unused(plan); len(un) > 0 {
		return nil, hint.New("fixtures name operations by operationId, or as \"POST /path\" with the document's path", errors.New(strings.Join(un, "\n")))
	}
	for name := range auth {
		if spec.Doc.Components == nil || spec.Doc.Components.SecuritySchemes[name] == nil {
			return nil, hint.New("its schemes: "+strings.Join(schemeNames(spec), ", "),
				fmt.Errorf("--auth %s: the document has no security scheme %q", name, name))
		}
	}
	p := &Plan{Spec: spec, Plan: plan, Auth: authValues}
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if err := p.locate(o.Targets, getenv); err != nil {
		return nil, err
	}
	if len(plan.Ops) == 0 {
		var why []string
		for _, s := range plan.Skipped {
			why = append(why, s.Name()+": "+s.Reason)
		}
		return nil, hint.New("--include selects operations (operationId, tag, or 'POST /path*'); --key-header names a key the document does not declare",
			fmt.Errorf("%s: no operation to plan%s", redaction.Arg(o.Spec), bullet(why)))
	}
	return p, nil
}

func bullet(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "\n  " + strings.Join(lines, "\n  ")
}

func schemeNames(s *openapi.Spec) []string {
	var out []string
	if s.Doc.Components != nil {
		for n := range s.Doc.Components.SecuritySchemes {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// locate sets where the operations are sent: the targets (or
// IDEMCHECK_TARGET), else the document's first server.
func (p *Plan) locate(raw []string, getenv func(string) string) error {
	if len(raw) == 0 {
		if t := getenv("IDEMCHECK_TARGET"); t != "" {
			raw = []string{t}
		}
	}
	from := "--target"
	const base = "give the API's base URL: --target https://staging.example.com/v1"
	if len(raw) == 0 {
		if len(p.Spec.Doc.Servers) == 0 {
			return hint.New(base, errors.New("--openapi: no --target, and the document names no server"))
		}
		raw, from = []string{p.Spec.Doc.Servers[0].URL}, "the document's first server"
	}
	for i, t := range raw {
		u, err := url.Parse(strings.TrimRight(t, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return hint.New(base, fmt.Errorf("%s %q is not an http(s) URL", from, redaction.Arg(t)))
		}
		if i == 0 {
			p.Base = &url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User}
			p.Prefix = u.EscapedPath()
		} else if u.EscapedPath() != p.Prefix {
			return errors.New("every --target must have the same path: the replicas of one API")
		}
		p.Targets = append(p.Targets, &url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User})
	}
	return nil
}

// TargetName is where the API is, credentials masked.
func (p *Plan) TargetName() string {
	return redaction.Arg(p.Base.String() + p.Prefix)
}

// Lines say where an operation's key and body came from, and what the
// plan could not fill in.
func Lines(op openapi.Operation) []string {
	key := "key in header " + op.Key.Header
	if op.Key.BodyField != "" {
		key = "key in body field " + op.Key.BodyField
	}
	req := "optional"
	if op.KeyRequired {
		req = "required"
	}
	out := []string{fmt.Sprintf("%s (%s; from %s)", key, req, op.KeyFrom)}
	if op.BodyFrom != "" {
		out = append(out, "body from the "+op.BodyFrom)
	}
	if op.Effects != nil {
		out = append(out, fmt.Sprintf("effects: %s at %s (from %s)", op.Effects.Request, op.Effects.Value, op.Effects.From))
	} else {
		out = append(out, "effects: none known (judged from the answers; --fixtures can name a read-back)")
	}
	if !op.KeyRequired {
		out = append(out, "C01 not run: the spec makes the key optional")
	}
	if op.Anonymous {
		out = append(out, "C15 and C26 not run: the document declares the operation anonymous (security: []): no principals to tell apart")
	}
	return append(out, op.Notes...)
}

// Dir is the directory of operation i's history under an audit's output
// directory: "03-createCharge".
func Dir(i int, op openapi.Operation) string {
	name := op.ID
	if name == "" {
		name = op.Method + op.Path
	}
	name = strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, name)
	return fmt.Sprintf("%02d-%s", i+1, name)
}

// mask hides the --auth values in s.
func (p *Plan) mask(s string) string {
	for _, v := range p.Auth {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "***")
			s = strings.ReplaceAll(s, url.QueryEscape(v), "***")
		}
	}
	return s
}

// maskHeader hides a credential header's value, and --auth values.
func (p *Plan) maskHeader(name, v string) string {
	if redaction.SecretHeader(name) {
		return "***"
	}
	return p.mask(v)
}
