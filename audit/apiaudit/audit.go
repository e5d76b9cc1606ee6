package apiaudit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/audit"
	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/termsafe"
	"github.com/idemcheck/idemcheck/openapi"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Audit is the audit of every operation of a plan.
type Audit struct {
	Plan *Plan
	// Config is every operation's audit's configuration but its scenario,
	// targets, error body, request cap and checks, which come from the
	// plan; its Checks select the checks (OA among them) for all.
	Config audit.Config
	// Headers are -H 'Name: value' headers, set over every operation's.
	Headers []string
	// Profile and Across are the audit's --profile and --across.
	Profile, Across string
	// MaxRequests caps the whole audit; 0 means audit.DefaultMaxRequests
	// per operation.
	MaxRequests int
	// Progress, when set, is told a line of progress at a time.
	Progress func(line string)
	// Audited, when set, is given each audited operation's result as it
	// ends (to write its history); its error ends the audit.
	Audited func(i int, op openapi.Operation, res *audit.Result) error
	// Spec names the document in the scorecard (credentials masked).
	Spec string
}

func (a *Audit) progress(format string, args ...any) {
	if a.Progress != nil {
		a.Progress(termsafe.Sprintf(format, args...))
	}
}

// Budget is the whole audit's cap on requests.
func (a *Audit) Budget() int {
	if a.MaxRequests > 0 {
		return a.MaxRequests
	}
	return audit.DefaultMaxRequests * len(a.Plan.Ops)
}

// Run audits every planned operation in turn, within the budget, and
// gathers their scorecards. An operation that cannot be audited is a
// card with its error. When ctx ends, the scorecard so far is returned,
// marked interrupted.
func (a *Audit) Run(ctx context.Context) (*checks.APIScorecard, error) {
	p := a.Plan
	budget := a.Budget()
	secrets := a.Config.Secrets
	api := &checks.APIScorecard{Spec: a.Spec, Target: p.TargetName(), FailOn: a.Config.FailOn}
	for _, sk := range p.Skipped {
		api.Skipped = append(api.Skipped, checks.SkippedOperation{Operation: sk.Name(), Pointer: sk.Pointer, Reason: sk.Reason})
	}
	for i, op := range p.Ops {
		oc := checks.OperationCard{Operation: op.Name(), Method: op.Method, Path: op.Path, Pointer: op.Pointer, Plan: Lines(op)}
		au, sc, err := a.auditor(op, budget)
		switch {
		case err != nil:
			oc.Error = err.Error()
		case budget <= audit.CalibrationRequests+len(op.Chains):
			oc.Error = fmt.Sprintf("--max-requests %d is spent", a.Budget())
		}
		if oc.Error != "" {
			oc.Error = secrets.Scrub(oc.Error)
			a.progress("audit: [%d/%d] %s: not audited: %s", i+1, len(p.Ops), op.Name(), oc.Error)
			api.Operations = append(api.Operations, oc)
			continue
		}
		api.Profile = sc.Profile().Name
		t0 := time.Now()
		res, err := au.Run(ctx)
		if res != nil && res.Scorecard != nil {
			oc.Card = res.Scorecard
			if len(a.Config.Checks) == 0 || slices.Contains(a.Config.Checks, openapi.ConformanceID) {
				oc.Card.Checks = append(oc.Card.Checks, p.Spec.Conformance(op, res.History))
				oc.Card.Decide()
			}
			budget -= oc.Card.Requests
			if a.Audited != nil {
				if err := a.Audited(i, op, res); err != nil {
					return nil, err
				}
			}
			a.progress("audit: [%d/%d] %s: %s in %v, %d requests", i+1, len(p.Ops), op.Name(), oc.Card.Result, time.Since(t0).Round(10*time.Millisecond), oc.Card.Requests)
		} else if err != nil {
			budget -= au.Sent() // its links', and its calibration's if it got that far
			oc.Error = err.Error()
			if errors.Is(err, audit.ErrTarget) {
				oc.Error = "its plain request must succeed (2xx) before it can be audited: " + err.Error()
			}
			oc.Error = secrets.Scrub(oc.Error)
			a.progress("audit: [%d/%d] %s: not audited: %s", i+1, len(p.Ops), op.Name(), oc.Error)
		}
		api.Operations = append(api.Operations, oc)
		if ctx.Err() != nil {
			api.Interrupted = true
			break
		}
	}
	api.Decide()
	return api, nil
}

// links are the requests sent first for op's path parameters that
// other operations' answers give (its chains): each source is sent once,
// with a fresh key where it declares one, and the value its link names
// goes into op's path.
func (a *Audit) links(op openapi.Operation) ([]audit.Link, error) {
	given, err := scenarios.ParseHeaders("-H", a.Headers)
	if err != nil {
		return nil, err
	}
	var out []audit.Link
	for _, ch := range op.Chains {
		req := ch.From.Request
		req.Path = a.Plan.Prefix + req.Path
		req.Headers = maps.Clone(ch.From.Request.Headers)
		if req.Headers == nil {
			req.Headers = map[string]string{}
		}
		maps.Copy(req.Headers, given)
		out = append(out, audit.Link{Param: ch.Param, KeyHeader: ch.From.Key.Header,
			What: fmt.Sprintf("{%s} comes from %s's answer (links %s)", ch.Param, ch.From.Name(), ch.Link),
			Build: func(ctx context.Context, getenv func(string) string) (*http.Request, string, []byte, error) {
				tmpl, err := scenarios.NewTemplate("the links of "+op.Name(), req, http.MethodPost, getenv)
				if err != nil {
					return nil, "", nil, err
				}
				vars := scenarios.Vars{Key: uuid.NewString()}
				body, err := tmpl.Body(ctx, vars)
				if err != nil {
					return nil, "", nil, err
				}
				if f := ch.From.Key.BodyField; f != "" {
					var m map[string]any
					if json.Unmarshal(body, &m) == nil {
						m[f] = vars.Key
						body, _ = json.Marshal(m)
					}
				}
				hr, err := tmpl.BuildWithBody(ctx, a.Plan.Base, vars, body)
				if err != nil {
					return nil, "", nil, err
				}
				key := ""
				if h := ch.From.Key.Header; h != "" {
					hr.Header.Set(h, vars.Key)
					key = vars.Key
				} else if ch.From.Key.BodyField != "" {
					key = vars.Key
				}
				return hr, key, body, nil
			},
			Value: func(status int, h http.Header, body []byte, whole bool) (string, error) {
				if !whole && !strings.HasPrefix(ch.Expr, "$response.header.") {
					return "", fmt.Errorf("%s's answer is longer than the %d bytes kept: no %s for {%s}", ch.From.Name(), len(body), ch.Expr, ch.Param)
				}
				v, err := ch.Value(status, h, body)
				if err == nil {
					a.progress("audit: %s: {%s} = %s, from %s's answer (links %s)", op.Name(), ch.Param, v, ch.From.Name(), ch.Link)
				}
				return v, err
			},
		})
	}
	return out, nil
}

// scenario is op as the scenario of an audit.
func (a *Audit) scenario(op openapi.Operation) (*scenarios.Scenario, error) {
	p := a.Plan
	headers := map[string]string{}
	for k, v := range op.Request.Headers {
		headers[k] = v
	}
	given, err := scenarios.ParseHeaders("-H", a.Headers)
	if err != nil {
		return nil, err
	}
	for k, v := range given {
		headers[k] = v
	}
	cop := &scenarios.CommandOp{Method: op.Method, Base: p.Base, Path: p.Prefix + op.Request.Path, Headers: headers, Body: op.Request.Body, Key: op.Key}
	for _, t := range p.Targets {
		cop.Targets = append(cop.Targets, t.String())
	}
	var effects, value string
	if op.Effects != nil {
		m, path := scenarios.SplitMethod(op.Effects.Request)
		if m == "" {
			m = http.MethodGet
		}
		effects, value = m+" "+p.Prefix+path, op.Effects.Value
	}
	spec, err := cop.AuditSpec(a.Profile, effects, value, a.Across)
	if err != nil {
		return nil, err
	}
	spec.Name = "audit " + op.Name()
	return scenarios.FromRequest(op.Name(), spec)
}

// auditor builds the audit of op, within budget requests.
func (a *Audit) auditor(op openapi.Operation, budget int) (*audit.Auditor, *scenarios.Scenario, error) {
	sc, err := a.scenario(op)
	if err != nil {
		return nil, nil, err
	}
	all := a.Config.Checks
	// OA judges the answers the contract's probes get: not a probe
	ids := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return id == openapi.ConformanceID })
	if len(all) > 0 && len(ids) == 0 {
		ids = []string{"C03"} // --checks OA alone: replays to judge
	}
	if op.Anonymous {
		// no principals to tell apart: the cross-user checks have nothing
		// to hold the operation to
		if len(ids) == 0 {
			ids = audit.IDs()
		}
		ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == "C15" || id == "C26" })
		if len(ids) == 0 {
			return nil, nil, errors.New("--checks selects only C15 and C26, which an operation the document declares anonymous (security: []) has no principals for")
		}
	}
	if !op.KeyRequired {
		// the spec makes the key optional: a keyless request may be
		// processed, so C01 has nothing to hold it to
		if len(ids) == 0 {
			ids = audit.IDs()
		}
		ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == "C01" })
		if len(ids) == 0 {
			return nil, nil, errors.New("--checks selects only C01, which the document's optional key leaves nothing to hold to")
		}
	}
	cfg := a.Config
	cfg.Scenario, cfg.Targets, cfg.ErrorBody = sc, a.Plan.Targets, op.ErrorBody
	if cfg.Links, err = a.links(op); err != nil {
		return nil, nil, err
	}
	cfg.MaxRequests, cfg.Checks = max(budget, 1), ids
	au, err := audit.New(cfg)
	return au, sc, err
}

// DryRun says what Run would send, and sends nothing: every operation,
// its first request with the --auth values and credential headers masked,
// and how many requests its checks send. The caller scrubs the secrets
// it registered.
func (a *Audit) DryRun() string {
	p := a.Plan
	var b strings.Builder
	total := 0
	crash := a.Config.Crash
	a.Config.Crash = nil
	defer func() { a.Config.Crash = crash }()
	for i, op := range p.Ops {
		termsafe.Fprintf(&b, "%d. %s\n", i+1, op.Name())
		au, _, err := a.auditor(op, audit.DefaultMaxRequests)
		if err != nil {
			termsafe.Fprintf(&b, "   not auditable: %v\n\n", err)
			continue
		}
		termsafe.Fprintf(&b, "   %s %s%s\n", op.Method, p.TargetName(), p.mask(op.Request.Path))
		for _, k := range sortedHeaderNames(op.Request.Headers, a.Headers) {
			termsafe.Fprintf(&b, "   %s: %s\n", k, p.maskHeader(k, headerValue(op.Request.Headers, a.Headers, k)))
		}
		if op.Request.Body != "" {
			termsafe.Fprintf(&b, "   %s\n", p.mask(op.Request.Body))
		}
		for _, ch := range op.Chains {
			termsafe.Fprintf(&b, "   {%s} from the answer of %s at %s (links %s), sent once first\n", ch.Param, ch.From.Name(), ch.Expr, ch.Link)
		}
		for _, l := range Lines(op) {
			termsafe.Fprintf(&b, "   %s\n", l)
		}
		n := au.MaxPlanned()
		total += n
		var run []string
		for _, c := range au.Plan() {
			if c.Skip == "" {
				run = append(run, c.ID)
			}
		}
		if len(a.Config.Checks) == 0 || slices.Contains(a.Config.Checks, openapi.ConformanceID) {
			run = append(run, openapi.ConformanceID)
		}
		termsafe.Fprintf(&b, "   up to %d requests: %s\n\n", n, strings.Join(run, " "))
	}
	if len(p.Skipped) > 0 {
		fmt.Fprintf(&b, "left out (%d):\n", len(p.Skipped))
		for _, s := range p.Skipped {
			ptr := ""
			if s.Pointer != "" {
				ptr = " [" + s.Pointer + "]"
			}
			termsafe.Fprintf(&b, "  %s: %s%s\n", s.Name(), s.Reason, ptr)
		}
		b.WriteString("\n")
	}
	termsafe.Fprintf(&b, "dry run: nothing sent. %d operations of %s on %s; up to %d requests in all.\n", len(p.Ops), a.Spec, p.TargetName(), total)
	return b.String()
}

func sortedHeaderNames(planned map[string]string, given []string) []string {
	var out []string
	for k := range planned {
		out = append(out, k)
	}
	for _, h := range given {
		if name, _, ok := strings.Cut(h, ":"); ok && !slices.Contains(out, strings.TrimSpace(name)) {
			out = append(out, strings.TrimSpace(name))
		}
	}
	slices.Sort(out)
	return out
}

func headerValue(planned map[string]string, given []string, name string) string {
	v := planned[name]
	for _, h := range given {
		if n, val, ok := strings.Cut(h, ":"); ok && strings.TrimSpace(n) == name {
			v = strings.TrimSpace(val)
		}
	}
	return v
}
