package cmd

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/scenarios"
)

// buildOracles turns the scenario's oracle declarations into checks oracles
// whose requests are rendered from the scenario's templates.
func buildOracles(sc *scenarios.Scenario, target *url.URL, client *http.Client, getenv func(string) string) ([]checks.Oracle, error) {
	var out []checks.Oracle
	for i, o := range sc.Oracles {
		field := fmt.Sprintf("oracles[%d]", i)
		reqFn := func(sub string, r scenarios.Request) (checks.RequestFunc, error) {
			t, err := scenarios.NewTemplate(field+sub, r, http.MethodGet, getenv)
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context, key string) (*http.Request, error) {
				return t.Build(ctx, target, scenarios.Vars{Key: key})
			}, nil
		}
		switch {
		case o.Effects != nil:
			e := &checks.HTTPEffects{OracleName: o.Name, Client: client, Concurrency: o.Effects.Concurrency}
			var err error
			if p := o.Effects.PerKey; p != nil {
				e.Value = p.Value
				if e.PerKey, err = reqFn(".effects.per_key", p.Request); err != nil {
					return nil, err
				}
			}
			if p := o.Effects.Bulk; p != nil {
				e.Value = p.Value
				if e.Bulk, err = reqFn(".effects.bulk", p.Request); err != nil {
					return nil, err
				}
			}
			out = append(out, e)
		case o.Counter != nil:
			rf, err := reqFn(".counter", o.Counter.Request)
			if err != nil {
				return nil, err
			}
			out = append(out, &checks.HTTPCounter{OracleName: o.Name, Client: client, Request: rf, Value: o.Counter.Value})
		case o.Account != nil:
			a := o.Account
			rf, err := reqFn(".account", a.Request)
			if err != nil {
				return nil, err
			}
			af, err := reqFn(".account.applied", a.Applied.Request)
			if err != nil {
				return nil, err
			}
			out = append(out, &checks.HTTPAccount{OracleName: o.Name, Client: client, Request: rf, Balance: a.Balance, Version: a.Version,
				Applied: af, List: a.Applied.List, Key: a.Applied.Key, Amount: a.Applied.Amount})
		default:
			return nil, fmt.Errorf("%s (%s): declares no oracle kind: set effects, counter or account", field, o.Name)
		}
	}
	return out, nil
}
