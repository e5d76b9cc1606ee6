package oracles

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/idemcheck/idemcheck/scenarios"
)

// FromScenarioTargets builds the oracles a scenario declares. Their HTTP
// requests are rendered from the scenario's templates and sent through
// rt (nil: http.DefaultTransport), each bounded by timeout (0: none but
// the caller's context); database URLs may read the environment through getenv
// ('{{env "LEDGER_URL"}}'). An HTTP effects oracle with across: sum reads
// every target and adds up the counts (a SumEffects); every other HTTP
// oracle reads the first target. SQL and Redis oracles read their own
// store, whatever the targets. An error is a configuration problem that
// names the field.
func FromScenarioTargets(sc *scenarios.Scenario, targets []*url.URL, rt http.RoundTripper, timeout time.Duration, getenv func(string) string) ([]Oracle, error) {
	client := &http.Client{Transport: rt, Timeout: timeout}
	if len(targets) == 0 {
		return nil, fmt.Errorf("oracles: no target URL")
	}
	var out []Oracle
	for i, o := range sc.Oracles {
		field := fmt.Sprintf("oracles[%d]", i)
		reqOn := func(target *url.URL, sub string, r scenarios.Request) (RequestFunc, error) {
			t, err := scenarios.NewTemplate(field+sub, r, http.MethodGet, getenv)
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context, key string) (*http.Request, error) {
				return t.Build(ctx, target, scenarios.Vars{Key: key})
			}, nil
		}
		reqFn := func(sub string, r scenarios.Request) (RequestFunc, error) { return reqOn(targets[0], sub, r) }
		switch {
		case o.Effects != nil && o.Effects.SQL != nil:
			u, err := renderURL(field+".effects.sql.url", o.Effects.SQL.URL, getenv)
			if err != nil {
				return nil, err
			}
			out = append(out, &SQLEffects{OracleName: o.Name, URL: u, PerKey: o.Effects.SQL.PerKey, Grouped: o.Effects.SQL.Grouped, Concurrency: o.Effects.Concurrency})
		case o.Effects != nil && o.Effects.Redis != nil:
			u, err := renderURL(field+".effects.redis.url", o.Effects.Redis.URL, getenv)
			if err != nil {
				return nil, err
			}
			out = append(out, &RedisEffects{OracleName: o.Name, URL: u, Pattern: o.Effects.Redis.Pattern, Mode: o.Effects.Redis.Mode, Concurrency: o.Effects.Concurrency})
		case o.Counter != nil && o.Counter.SQL != nil:
			u, err := renderURL(field+".counter.sql.url", o.Counter.SQL.URL, getenv)
			if err != nil {
				return nil, err
			}
			out = append(out, &SQLCounter{OracleName: o.Name, URL: u, Query: o.Counter.SQL.Query})
		case o.Counter != nil && o.Counter.Redis != nil:
			u, err := renderURL(field+".counter.redis.url", o.Counter.Redis.URL, getenv)
			if err != nil {
				return nil, err
			}
			out = append(out, &RedisCounter{OracleName: o.Name, URL: u, Key: o.Counter.Redis.Key})
		case o.Effects != nil:
			on := targets[:1]
			if o.Effects.Across == scenarios.AcrossSum {
				on = targets
			}
			parts := make([]Oracle, 0, len(on))
			for _, target := range on {
				e, err := httpEffects(o.Name, o.Effects, client, func(sub string, r scenarios.Request) (RequestFunc, error) { return reqOn(target, sub, r) })
				if err != nil {
					return nil, err
				}
				parts = append(parts, e)
			}
			if len(parts) == 1 {
				out = append(out, parts[0])
			} else {
				out = append(out, &SumEffects{OracleName: o.Name, Parts: parts})
			}
		case o.State != nil && o.State.PerObject != nil:
			t, err := scenarios.NewTemplate(field+".state.per_object", o.State.PerObject.Request, http.MethodGet, getenv)
			if err != nil {
				return nil, err
			}
			target := targets[0]
			out = append(out, &HTTPState{OracleName: o.Name, Client: client, Value: o.State.PerObject.Value, Concurrency: o.State.Concurrency,
				PerObject: func(ctx context.Context, obj string) (*http.Request, error) {
					return t.Build(ctx, target, scenarios.Vars{Object: obj})
				}})
		case o.Counter != nil:
			rf, err := reqFn(".counter", o.Counter.Request)
			if err != nil {
				return nil, err
			}
			out = append(out, &HTTPCounter{OracleName: o.Name, Client: client, Request: rf, Value: o.Counter.Value})
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
			out = append(out, &HTTPAccount{OracleName: o.Name, Client: client, Request: rf, Balance: a.Balance, Version: a.Version,
				Applied: af, List: a.Applied.List, Key: a.Applied.Key, Amount: a.Applied.Amount})
		default:
			return nil, fmt.Errorf("%s (%s): declares no oracle kind: set effects, counter, account or state", field, o.Name)
		}
	}
	return out, nil
}

// httpEffects builds an HTTP effects oracle whose requests reqFn makes.
func httpEffects(name string, eff *scenarios.EffectsOracle, client *http.Client, reqFn func(string, scenarios.Request) (RequestFunc, error)) (*HTTPEffects, error) {
	e := &HTTPEffects{OracleName: name, Client: client, Concurrency: eff.Concurrency}
	var err error
	if p := eff.PerKey; p != nil {
		e.Value = p.Value
		if e.PerKey, err = reqFn(".effects.per_key", p.Request); err != nil {
			return nil, err
		}
	}
	if b := eff.Bulk; b != nil {
		e.Value = b.Value
		e.Pages.MaxPages = b.MaxPages
		if b.Next != nil {
			e.Pages.Next = b.Next.Path
		}
		if b.Cursor != nil {
			e.Pages.Cursor, e.Pages.Param = b.Cursor.Path, b.Cursor.Param
		}
		if e.Bulk, err = reqFn(".effects.bulk", b.Request); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// renderURL renders a database URL, which may read a secret from the
// environment: '{{env "LEDGER_URL"}}'.
func renderURL(field, text string, getenv func(string) string) (string, error) {
	t, err := scenarios.NewText(field, text, getenv)
	if err != nil {
		return "", err
	}
	u, err := t.Render(context.Background(), scenarios.Vars{})
	if err != nil {
		return "", err
	}
	if u == "" {
		return "", fmt.Errorf("%s: renders empty: is the environment variable set?", field)
	}
	return u, nil
}
