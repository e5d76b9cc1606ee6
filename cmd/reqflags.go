package cmd

import (
	"errors"
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
type operation = scenarios.CommandOp

// resolve checks the flags with the method and URL arguments and returns
// the operation, or a usage error that says what to fix.
func (r *requestFlags) resolve(method, rawURL string) (*operation, error) {
	op, err := scenarios.ParseOperation(scenarios.OperationArgs{Method: method, URL: rawURL, Data: r.Data, Headers: r.Headers,
		KeyHeader: r.KeyHeader, KeyField: r.KeyField, Targets: r.Targets})
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	return op, nil
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
	case field == "operation.webhook.profile":
		return "--webhook"
	case field == "operation.webhook.secret":
		return "--webhook-secret"
	case field == probe+".value":
		return "--effects-path"
	case strings.HasPrefix(field, probe):
		return "--effects"
	case field == "oracles[0].effects.across":
		return "--across"
	}
	return ""
}

// redactArg is a URL (or path) argument fit for an error message.
func redactArg(raw string) string { return redaction.Arg(raw) }
