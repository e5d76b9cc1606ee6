package cmd

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/pflag"

	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/scenarios"
)

// requestFlags describe one operation on the command line, the same way
// in every command that takes one (audit, bench, init): the method and URL
// are arguments, the rest flags.
//
//	idemcheck audit POST https://api.example.com/v1/charges \
//	  -d '{"amount":100}' -H 'Authorization: Bearer {{env "API_TOKEN"}}' \
//	  --key-header Idempotency-Key
type requestFlags struct {
	Data      string   // -d: the body template
	Headers   []string // -H 'Name: value', repeatable; values are templates
	KeyHeader string   // the header that carries the key (default Idempotency-Key)
	KeyField  string   // or: the top-level JSON body field that carries it
	Targets   []string // --target: base URLs (replicas) the path is sent to instead of the URL's
}

// register adds the flags to fs.
func (r *requestFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&r.Data, "data", "d", "", `the request body, a JSON template: '{"amount":100,"customer":"cus_{{.Seq}}"}' (sets Content-Type: application/json)`)
	fs.StringArrayVarP(&r.Headers, "header", "H", nil, `a request header 'Name: value', repeatable; values are templates: 'Authorization: Bearer {{env "API_TOKEN"}}'`)
	fs.StringVar(&r.KeyHeader, "key-header", "", "the header that carries the idempotency key (default Idempotency-Key)")
	fs.StringVar(&r.KeyField, "key-field", "", "send the key as this top-level JSON body field instead of a header (e.g. op_id)")
	fs.StringArrayVar(&r.Targets, "target", nil, "send to this base URL instead of the URL's scheme, host and port; repeat it for replicas behind one balancer")
}

// operation is what requestFlags describe, resolved against the method and
// URL arguments.
type operation struct {
	Method string
	// Base is the scheme, host and port of the URL argument: the target.
	Base *url.URL
	// Path is the URL's path and query, sent to every target.
	Path    string
	Headers map[string]string
	Body    string
	Key     scenarios.KeyPlace
	Targets []string
}

// resolve checks the flags with the method and URL arguments and returns
// the operation, or a usage error that says what to fix.
func (r *requestFlags) resolve(method, rawURL string) (*operation, error) {
	m := strings.ToUpper(method)
	if !validMethod(m) {
		return nil, withHint(ExitUsage, fmt.Errorf("%q is not an HTTP method", method), "write the method first, then the URL: POST https://api.example.com/v1/charges")
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, withHint(ExitUsage, fmt.Errorf("%q is not an http(s) URL", redactArg(rawURL)), "e.g. https://staging.example.com/v1/charges")
	}
	if r.KeyHeader != "" && r.KeyField != "" {
		return nil, withHint(ExitUsage, fmt.Errorf("--key-header and --key-field both set"), "the key goes in a header or in a JSON body field, not both")
	}
	op := &operation{Method: m, Body: r.Data, Headers: map[string]string{}, Targets: r.Targets}
	op.Base = &url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User}
	op.Path = u.EscapedPath()
	if op.Path == "" {
		op.Path = "/"
	}
	if u.RawQuery != "" {
		op.Path += "?" + u.RawQuery
	}
	for _, h := range r.Headers {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, withHint(ExitUsage, fmt.Errorf("-H %q: want 'Name: value'", redactHeaderArg(h)), "e.g. -H 'Authorization: Bearer {{env \"API_TOKEN\"}}'")
		}
		op.Headers[name] = strings.TrimSpace(value)
	}
	switch {
	case r.KeyField != "":
		op.Key.BodyField = r.KeyField
	case r.KeyHeader != "":
		op.Key.Header = r.KeyHeader
	default:
		op.Key.Header = "Idempotency-Key"
	}
	return op, nil
}

// spec is the operation as a scenario's request; a command adds the
// sections it needs (load, invariants, oracles) and builds it with
// fromRequest.
func (op *operation) spec(name string) scenarios.RequestSpec {
	spec := scenarios.RequestSpec{Name: name, Request: scenarios.Request{Method: op.Method, Path: op.Path, Body: op.Body}, Key: op.Key, Targets: op.Targets}
	if len(op.Headers) > 0 {
		spec.Request.Headers = op.Headers
	}
	if len(spec.Targets) == 0 {
		spec.Targets = []string{op.Base.String()}
	}
	return spec
}

// fromRequest builds the scenario of spec, validated (templates, key
// placement, targets) exactly as a file would be; a problem names the flag
// that set its field.
func fromRequest(spec scenarios.RequestSpec) (*scenarios.Scenario, error) {
	sc, err := scenarios.FromRequest("command line", spec)
	var ds scenarios.Diagnostics
	if errors.As(err, &ds) {
		err = flagDiagnostics(ds)
	}
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	return sc, nil
}

// flagDiagnostics names, in each diagnostic, the flag that set its field
// rather than the field, and drops the repeats that makes (-H headers are
// sent by the --effects probe too).
func flagDiagnostics(ds scenarios.Diagnostics) scenarios.Diagnostics {
	var out scenarios.Diagnostics
	seen := map[string]bool{}
	for _, d := range ds {
		if flag := fieldFlag(d.Field); flag != "" {
			d.Source, d.Field = "", flag
		}
		if s := d.String(); !seen[s] {
			seen[s] = true
			out = append(out, d)
		}
	}
	return out
}

// fieldFlag is the flag that sets a field of a scenario built from the
// command line; "" when none does alone.
func fieldFlag(field string) string {
	const probe = "oracles[0].effects.per_key"
	switch {
	case field == "operation.body":
		return "-d"
	case strings.HasPrefix(field, "operation.headers."):
		return "-H " + strings.TrimPrefix(field, "operation.headers.")
	case strings.HasPrefix(field, probe+".headers."):
		return "-H " + strings.TrimPrefix(field, probe+".headers.")
	case field == "operation.key.header":
		return "--key-header"
	case field == "operation.key.body_field":
		return "--key-field"
	case field == "target" || strings.HasPrefix(field, "target["):
		return "--target"
	case field == "profile":
		return "--profile"
	case field == probe+".value":
		return "--effects-path"
	case strings.HasPrefix(field, probe):
		return "--effects"
	case field == "oracles[0].effects.across":
		return "--across"
	}
	return ""
}

func validMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}

// redactArg is a URL (or path) argument fit for an error message: its
// password and query values masked by the one redaction every output uses.
func redactArg(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return redaction.String(raw)
	}
	return redaction.URL(u)
}

// redactHeaderArg is a -H argument fit for an error message: its name only.
func redactHeaderArg(h string) string {
	name, _, _ := strings.Cut(h, ":")
	if f := strings.Fields(name); len(f) > 0 {
		name = f[0] // a missing colon: the rest may be the secret
	}
	if len(name) > 40 {
		name = name[:40] + "…"
	}
	return name + ": …"
}

// splitMethod splits a request written as 'GET /path' (--effects) into
// its method, upper-cased ("" when none comes first), and the rest.
func splitMethod(spec string) (method, rest string) {
	spec = strings.TrimSpace(spec)
	if m, r, ok := strings.Cut(spec, " "); ok && validMethod(strings.ToUpper(m)) {
		return strings.ToUpper(m), strings.TrimSpace(r)
	}
	return "", spec
}
