package apiaudit

import (
	"fmt"
	"net/http"
	"regexp"

	"github.com/idemcheck/idemcheck/openapi"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Starter is the starting scenario of one planned operation, as `init
// --openapi` writes it.
type Starter struct {
	Op openapi.Operation
	scenarios.Starter
}

// camelWords splits an operationId's words: createCharge, create-charge.
var camelWords = regexp.MustCompile(`([a-z0-9])([A-Z])`)

// Starters are a starting scenario for every planned operation, named from
// its operationId (or method and path) and unique, with the given headers
// set over the operation's. An operation whose path takes a parameter from
// another's answer (links) is left out, a line saying why: a scenario
// cannot send its source first. A credential header with a literal value
// is refused.
func (p *Plan) Starters(given map[string]string) (sts []Starter, left []string, err error) {
	names := map[string]bool{}
	for _, op := range p.Ops {
		if len(op.Chains) > 0 {
			ch := op.Chains[0]
			left = append(left, fmt.Sprintf("left out %s: its path parameter {%s} comes from the answer of %s (links %s), which a scenario cannot send first; give it in --fixtures (path: {%s: VALUE})",
				op.Name(), ch.Param, ch.From.Name(), ch.Link, ch.Param))
			continue
		}
		headers := map[string]string{}
		for k, v := range op.Request.Headers {
			headers[k] = v
		}
		for k, v := range given {
			headers[k] = v
		}
		if err := scenarios.LiteralCredentials(headers); err != nil {
			return nil, nil, err
		}
		name := scenarios.StarterName(op.Method, p.Prefix+op.Path)
		if op.ID != "" {
			name = scenarios.StarterName("", camelWords.ReplaceAllString(op.ID, "$1-$2"))
		}
		for base, i := name, 2; names[name]; i++ {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		names[name] = true
		st := scenarios.Starter{Name: name, Request: scenarios.Request{Method: op.Method, Path: p.Prefix + op.Request.Path, Headers: headers, Body: op.Request.Body},
			Key: op.Key, Targets: []string{p.Targets[0].String()}, Credentials: scenarios.Credentials(headers)}
		if len(headers) == 0 {
			st.Request.Headers = nil
		}
		if op.Effects != nil {
			m, path := scenarios.SplitMethod(op.Effects.Request)
			if m == http.MethodGet {
				m = ""
			}
			st.Effects, st.EffectsMethod, st.EffectsValue = p.Prefix+path, m, op.Effects.Value
		}
		sts = append(sts, Starter{Op: op, Starter: st})
	}
	return sts, left, nil
}
