package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/pflag"

	"github.com/idemcheck/idemcheck/audit"
	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/internal/termsafe"
	"github.com/idemcheck/idemcheck/openapi"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
)

// specTimeout bounds reading an OpenAPI document and the documents its
// $refs name.
const specTimeout = 30 * time.Second

// apiPlan is what audit --openapi will audit: the planned operations,
// each as the audit of one request, and those left out.
type apiPlan struct {
	spec    *openapi.Spec
	plan    *openapi.Plan
	base    *url.URL // scheme and host
	prefix  string   // the target's path, put before every operation's
	targets []*url.URL
	auth    []string // the --auth values, masked in the dry run
}

// auditAPIRun audits every operation the --openapi document selects.
func auditAPIRun(ctx context.Context, opts *AuditOptions) error {
	card, err := auditAPIOnce(ctx, opts)
	if err != nil && card == nil {
		if werr := opts.Reports.writeNotRun("audit --openapi "+redactArg(opts.API.Spec), "", err); werr != nil {
			return errors.Join(err, werr)
		}
	}
	return err
}

func auditAPIOnce(ctx context.Context, opts *AuditOptions) (*checks.APIScorecard, error) {
	r := opts.Req
	switch {
	case len(opts.Args) > 0:
		return nil, withHint(ExitUsage, errors.New("--openapi takes no METHOD URL or FILE"), "the operations come from the document: idemcheck audit --openapi spec.yaml --target https://staging.example.com")
	case r.Data != "" || opts.Effects != "" || opts.EffectsPath != "" || opts.ErrorData != "":
		return nil, withHint(ExitUsage, errors.New("-d, --effects, --effects-path and --error-data are per operation"),
			"give them per operation in --fixtures: operations: {createCharge: {body: '{...}', effects: {request: 'GET /charges?key={{.Key}}', value: '$.count'}}}")
	case r.KeyHeader != "" && r.KeyField != "":
		return nil, usageError("--key-header and --key-field both set: the key goes in a header or in a JSON body field")
	}
	if opts.Transport == nil {
		idle, rt, err := opts.Client.transport(opts.Streams.Err, 64)
		if err != nil {
			return nil, err
		}
		defer idle.CloseIdleConnections()
		opts.Transport = rt
	}
	p, err := planAPI(ctx, opts.API, opts.Req, opts.Getenv, opts.Transport)
	if err != nil {
		return nil, err
	}
	for _, v := range p.auth {
		if !strings.Contains(v, "{{") {
			opts.Streams.Secrets.Add(v) // a literal credential: masked in every byte written
		}
	}
	as, err := scenarios.ParseHeaders("--as", opts.As)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	if opts.DryRun {
		return nil, writeAPIPlan(opts, p, as)
	}
	if opts.Out != "" {
		if err := checkOut(opts.Out); err != nil {
			return nil, err
		}
	}
	crash, err := trial.Crash{Kill: opts.KillCmd, Start: opts.StartCmd, Ready: opts.Ready, ReadyTimeout: opts.ReadyTimeout}.Strikes(p.targets, opts.Transport, opts.Streams.Secrets)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	budget := opts.MaxRequests
	if !opts.MaxRequestsSet {
		budget = audit.DefaultMaxRequests * len(p.plan.Ops)
	}
	termsafe.Fprintf(opts.Streams.Err, "audit: %d operations of %s on %s, up to %d requests in all (--max-requests)\n",
		len(p.plan.Ops), redactArg(opts.API.Spec), p.targetName(), budget)
	api := &checks.APIScorecard{Spec: redactArg(opts.API.Spec), Target: p.targetName(), FailOn: opts.FailOn}
	for _, sk := range p.plan.Skipped {
		api.Skipped = append(api.Skipped, checks.SkippedOperation{Operation: sk.Name(), Pointer: sk.Pointer, Reason: sk.Reason})
	}
	start := time.Now()
	for i, op := range p.plan.Ops {
		oc := checks.OperationCard{Operation: op.Name(), Method: op.Method, Path: op.Path, Pointer: op.Pointer, Plan: planLines(op)}
		var a *audit.Auditor
		var sc *scenarios.Scenario
		sent, err := p.chain(ctx, opts, &op)
		budget -= sent
		if err == nil {
			a, sc, err = p.auditor(opts, op, as, budget, crash)
		}
		switch {
		case err != nil:
			oc.Error = err.Error()
		case budget <= audit.CalibrationRequests:
			oc.Error = fmt.Sprintf("--max-requests %d is spent", opts.MaxRequests)
		}
		if oc.Error != "" {
			oc.Error = opts.Streams.Secrets.Scrub(oc.Error)
			termsafe.Fprintf(opts.Streams.Err, "audit: [%d/%d] %s: not audited: %s\n", i+1, len(p.plan.Ops), op.Name(), oc.Error)
			api.Operations = append(api.Operations, oc)
			continue
		}
		api.Profile = sc.Profile().Name
		t0 := time.Now()
		res, err := a.Run(ctx)
		if res != nil && res.Scorecard != nil {
			oc.Card = res.Scorecard
			if len(opts.Checks) == 0 || slices.Contains(opts.Checks, openapi.ConformanceID) {
				oc.Card.Checks = append(oc.Card.Checks, p.spec.Conformance(op, res.History))
				oc.Card.Decide()
			}
			budget -= oc.Card.Requests
			if opts.Out != "" {
				dir := filepath.Join(opts.Out, opDir(i, op))
				if werr := os.MkdirAll(dir, 0o755); werr != nil {
					return nil, withCode(ExitRuntime, werr)
				}
				if werr := writeAudit(dir, res.History, oc.Card); werr != nil {
					return nil, withCode(ExitRuntime, werr)
				}
			}
			termsafe.Fprintf(opts.Streams.Err, "audit: [%d/%d] %s: %s in %v, %d requests\n", i+1, len(p.plan.Ops), op.Name(), oc.Card.Result, time.Since(t0).Round(10*time.Millisecond), oc.Card.Requests)
		} else if err != nil {
			oc.Error = err.Error()
			if errors.Is(err, audit.ErrTarget) {
				oc.Error = "its plain request must succeed (2xx) before it can be audited: " + err.Error()
			}
			oc.Error = opts.Streams.Secrets.Scrub(oc.Error)
			termsafe.Fprintf(opts.Streams.Err, "audit: [%d/%d] %s: not audited: %s\n", i+1, len(p.plan.Ops), op.Name(), oc.Error)
		}
		api.Operations = append(api.Operations, oc)
		if ctx.Err() != nil {
			api.Interrupted = true
			break
		}
	}
	api.Decide()
	ropts := reports.Options{JUnitInconclusive: opts.Reports.Inconclusive}
	if werr := reports.WriteAPIScorecard(opts.Streams.Out, opts.Format, api, ropts); werr != nil {
		return api, withCode(ExitRuntime, fmt.Errorf("writing the scorecard: %w", werr))
	}
	for _, f := range opts.Reports.files {
		if werr := writeFile(f.Path, func(out *os.File) error { return reports.WriteAPIScorecard(out, f.Format, api, ropts) }); werr != nil {
			return api, withCode(ExitRuntime, werr)
		}
	}
	if opts.Out != "" {
		for _, f := range []string{"json", "html"} {
			name := map[string]string{"json": "scorecard.json", "html": "report.html"}[f]
			if werr := writeFile(filepath.Join(opts.Out, name), func(out *os.File) error { return reports.WriteAPIScorecard(out, f, api, ropts) }); werr != nil {
				return api, withCode(ExitRuntime, werr)
			}
		}
		fmt.Fprintf(opts.Streams.Err, "audit written to %s (each operation's history in its own directory: idemcheck check DIR/NN-name judges it again)\n", opts.Out)
	}
	fmt.Fprintf(opts.Streams.Err, "audit: %s in %v, %d requests\n", api.Result, time.Since(start).Round(10*time.Millisecond), api.Requests)
	if api.Interrupted {
		return api, withCode(ExitInterrupted, context.Cause(ctx))
	}
	switch api.Result {
	case checks.NotMet:
		return api, silentExit{ExitFailed}
	case checks.Inconclusive:
		return api, silentExit{ExitInconclusive}
	}
	return api, nil
}

// chain fills in op's path parameters that other operations' answers give
// (links): each source is sent once, with a fresh key where it declares
// one, and the value its link names is put into op's path.
// It returns how many requests it sent.
func (p *apiPlan) chain(ctx context.Context, opts *AuditOptions, op *openapi.Operation) (sent int, err error) {
	if len(op.Chains) == 0 {
		return 0, nil
	}
	client := &http.Client{Transport: opts.Transport, Timeout: audit.DefaultRequestTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	values := map[string]string{}
	for _, ch := range op.Chains {
		given, err := scenarios.ParseHeaders("-H", opts.Req.Headers)
		if err != nil {
			return sent, err
		}
		req := ch.From.Request
		req.Path = p.prefix + req.Path
		req.Headers = map[string]string{}
		for k, v := range ch.From.Request.Headers {
			req.Headers[k] = v
		}
		for k, v := range given {
			req.Headers[k] = v
		}
		tmpl, err := scenarios.NewTemplate("the links of "+op.Name(), req, http.MethodPost, opts.Getenv)
		if err != nil {
			return sent, err
		}
		vars := scenarios.Vars{Key: uuid.NewString()}
		body, err := tmpl.Body(ctx, vars)
		if err != nil {
			return sent, err
		}
		if f := ch.From.Key.BodyField; f != "" {
			var m map[string]any
			if json.Unmarshal(body, &m) == nil {
				m[f] = vars.Key
				body, _ = json.Marshal(m)
			}
		}
		hr, err := tmpl.BuildWithBody(ctx, p.base, vars, body)
		if err != nil {
			return sent, err
		}
		if h := ch.From.Key.Header; h != "" {
			hr.Header.Set(h, vars.Key)
		}
		resp, err := client.Do(hr)
		sent++
		if err != nil {
			return sent, fmt.Errorf("{%s} comes from %s's answer (links %s), which failed: %w", ch.Param, ch.From.Name(), ch.Link, err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return sent, fmt.Errorf("{%s} comes from %s's answer (links %s), which failed: %w", ch.Param, ch.From.Name(), ch.Link, err)
		}
		v, err := ch.Value(resp.StatusCode, resp.Header, b)
		if err != nil {
			return sent, fmt.Errorf("{%s} comes from the answer its link %s names: %w", ch.Param, ch.Link, err)
		}
		values[ch.Param] = v
		termsafe.Fprintf(opts.Streams.Err, "audit: %s: {%s} = %s, from %s's answer (links %s)\n", op.Name(), ch.Param, v, ch.From.Name(), ch.Link)
	}
	op.Fill(values)
	return sent, nil
}

// opDir is the directory of operation i's history under --out.
func opDir(i int, op openapi.Operation) string {
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

// openAPIFlags are --openapi and the flags that shape its plan, the same
// in audit and init.
type openAPIFlags struct {
	Spec             string
	Include, Exclude []string
	Fixtures         string
	Auth             []string
}

// register adds the flags; verb is the command ("audit", "init").
func (f *openAPIFlags) register(fl *pflag.FlagSet, verb string) {
	what := map[string]string{"audit": "audit every mutating operation", "init": "write a scenario for every mutating operation"}[verb]
	fl.StringVar(&f.Spec, "openapi", "", what+" of this OpenAPI 3.x or Swagger 2.0 document (a file or an http(s) URL), sent to --target (default: its first server)")
	fl.StringSliceVar(&f.Include, "include", nil, "with --openapi: only these operations, by operationId, tag or 'METHOD /path' glob (any method then): createCharge,payments,'POST /v1/*'")
	fl.StringSliceVar(&f.Exclude, "exclude", nil, "with --openapi: leave out these operations (operationId, tag or 'METHOD /path' glob)")
	fl.StringVar(&f.Fixtures, "fixtures", "", "with --openapi: a YAML file of per-operation bodies, headers, path parameters, key placement and effects read-backs (docs/audit.md)")
	fl.StringArrayVar(&f.Auth, "auth", nil, `with --openapi: a value for a security scheme of the document, SCHEME=VALUE (repeatable): 'bearerAuth={{env "API_TOKEN"}}'`)
}

// check refuses the plan's flags without --openapi.
func (f *openAPIFlags) check() error {
	if f.Spec == "" && (len(f.Include) > 0 || len(f.Exclude) > 0 || f.Fixtures != "" || len(f.Auth) > 0) {
		return usageError("--include, --exclude, --fixtures and --auth go with --openapi")
	}
	return nil
}

// planAPI reads the document and the fixtures, and plans with the flags;
// req gives -H, --key-header, --key-field and --target.
func planAPI(ctx context.Context, f openAPIFlags, req requestFlags, getenv func(string) string, transport http.RoundTripper) (*apiPlan, error) {
	auth := map[string]string{}
	var authValues []string
	for _, a := range f.Auth {
		name, value, ok := strings.Cut(a, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, withHint(ExitUsage, fmt.Errorf("--auth %q: want SCHEME=VALUE", redactArg(strings.SplitN(a, "=", 2)[0])),
				`the name of a security scheme of the document: --auth 'bearerAuth={{env "API_TOKEN"}}'`)
		}
		auth[strings.TrimSpace(name)] = value
		authValues = append(authValues, value)
	}
	var fx *openapi.Fixtures
	if f.Fixtures != "" {
		var err error
		if fx, err = openapi.ReadFixtures(f.Fixtures); err != nil {
			return nil, withHint(ExitUsage, err, "docs/audit.md describes the fixtures file")
		}
	}
	lctx, cancel := context.WithTimeout(ctx, specTimeout)
	defer cancel()
	spec, err := openapi.Load(lctx, f.Spec, &http.Client{Transport: transport})
	if err != nil {
		if ctx.Err() != nil {
			return nil, withCode(ExitInterrupted, err)
		}
		return nil, withHint(ExitUsage, err, "--openapi takes an OpenAPI 3.x or Swagger 2.0 document, a file or an http(s) URL")
	}
	plan, err := spec.Plan(openapi.PlanOptions{Include: f.Include, Exclude: f.Exclude, KeyHeader: req.KeyHeader,
		KeyField: req.KeyField, Fixtures: fx, Auth: auth})
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	if un := fx.Unused(plan); len(un) > 0 {
		return nil, withHint(ExitUsage, errors.New(strings.Join(un, "\n")), "fixtures name operations by operationId, or as \"POST /path\" with the document's path")
	}
	for name := range auth {
		if spec.Doc.Components == nil || spec.Doc.Components.SecuritySchemes[name] == nil {
			return nil, withHint(ExitUsage, fmt.Errorf("--auth %s: the document has no security scheme %q", name, name),
				"its schemes: "+strings.Join(schemeNames(spec), ", "))
		}
	}
	p := &apiPlan{spec: spec, plan: plan, auth: authValues}
	if err := p.locate(req.Targets, getenv, spec); err != nil {
		return nil, err
	}
	if len(plan.Ops) == 0 {
		var why []string
		for _, s := range plan.Skipped {
			why = append(why, s.Name()+": "+s.Reason)
		}
		return nil, withHint(ExitUsage, fmt.Errorf("%s: no operation to plan%s", redactArg(f.Spec), bullet(why)),
			"--include selects operations (operationId, tag, or 'POST /path*'); --key-header names a key the document does not declare")
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

// locate sets where the operations are sent: --target (or
// IDEMCHECK_TARGET), else the document's first server.
func (p *apiPlan) locate(raw []string, getenv func(string) string, spec *openapi.Spec) error {
	if len(raw) == 0 {
		if t := getenv("IDEMCHECK_TARGET"); t != "" {
			raw = []string{t}
		}
	}
	from := "--target"
	if len(raw) == 0 {
		if len(spec.Doc.Servers) == 0 {
			return withHint(ExitUsage, errors.New("--openapi: no --target, and the document names no server"), "give the API's base URL: --target https://staging.example.com/v1")
		}
		raw, from = []string{spec.Doc.Servers[0].URL}, "the document's first server"
	}
	for i, t := range raw {
		u, err := url.Parse(strings.TrimRight(t, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return withHint(ExitUsage, fmt.Errorf("%s %q is not an http(s) URL", from, redactArg(t)), "give the API's base URL: --target https://staging.example.com/v1")
		}
		if i == 0 {
			p.base = &url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User}
			p.prefix = u.EscapedPath()
		} else if u.EscapedPath() != p.prefix {
			return usageError("every --target must have the same path: the replicas of one API")
		}
		p.targets = append(p.targets, &url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User})
	}
	return nil
}

func (p *apiPlan) targetName() string {
	return redactArg(p.base.String() + p.prefix)
}

// spec is op as the scenario of an audit.
func (p *apiPlan) scenario(opts *AuditOptions, op openapi.Operation) (*scenarios.Scenario, error) {
	headers := map[string]string{}
	for k, v := range op.Request.Headers {
		headers[k] = v
	}
	given, err := scenarios.ParseHeaders("-H", opts.Req.Headers)
	if err != nil {
		return nil, err
	}
	for k, v := range given {
		headers[k] = v
	}
	cop := &scenarios.CommandOp{Method: op.Method, Base: p.base, Path: p.prefix + op.Request.Path, Headers: headers, Body: op.Request.Body, Key: op.Key}
	for _, t := range p.targets {
		cop.Targets = append(cop.Targets, t.String())
	}
	var effects, value string
	if op.Effects != nil {
		m, path := scenarios.SplitMethod(op.Effects.Request)
		if m == "" {
			m = http.MethodGet
		}
		effects, value = m+" "+p.prefix+path, op.Effects.Value
	}
	spec, err := cop.AuditSpec(opts.Profile, effects, value, opts.Across)
	if err != nil {
		return nil, err
	}
	spec.Name = "audit " + op.Name()
	return scenarios.FromRequest(op.Name(), spec)
}

// auditor builds the audit of op, within budget requests.
func (p *apiPlan) auditor(opts *AuditOptions, op openapi.Operation, as map[string]string, budget int, crash func(context.Context, int, time.Time) history.NemesisWindow) (*audit.Auditor, *scenarios.Scenario, error) {
	sc, err := p.scenario(opts, op)
	if err != nil {
		return nil, nil, err
	}
	// OA judges the answers the contract's probes get: not a probe
	ids := slices.DeleteFunc(slices.Clone(opts.Checks), func(id string) bool { return id == openapi.ConformanceID })
	if len(opts.Checks) > 0 && len(ids) == 0 {
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
	a, err := audit.New(audit.Config{
		Scenario: sc, Targets: p.targets, Getenv: opts.Getenv, Secrets: opts.Streams.Secrets, As: as, Volatile: opts.Volatile,
		Errors: opts.Errors, ErrorBody: op.ErrorBody, Retention: opts.Retention, RetentionKeys: opts.RetentionKeys, KeyFromAnswer: opts.KeyFromAnswer, Lease: opts.Lease,
		MaxRequests: max(budget, 1), Checks: ids, FailOn: opts.FailOn, Quiet: opts.Quiet,
		Transport: opts.Transport, Crash: crash,
	})
	return a, sc, err
}

// planLines say where an operation's key and body came from, and what
// the plan could not fill in.
func planLines(op openapi.Operation) []string {
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

// writeAPIPlan prints what audit --openapi would send (--dry-run):
// every operation, its first request with secrets masked, and how many
// requests its checks send.
func writeAPIPlan(opts *AuditOptions, p *apiPlan, as map[string]string) error {
	var b strings.Builder
	total := 0
	for i, op := range p.plan.Ops {
		termsafe.Fprintf(&b, "%d. %s\n", i+1, op.Name())
		a, _, err := p.auditor(opts, op, as, audit.DefaultMaxRequests, nil)
		if err != nil {
			termsafe.Fprintf(&b, "   not auditable: %v\n\n", err)
			continue
		}
		termsafe.Fprintf(&b, "   %s %s%s\n", op.Method, p.targetName(), p.mask(op.Request.Path))
		for _, k := range sortedHeaderNames(op.Request.Headers, opts.Req.Headers) {
			termsafe.Fprintf(&b, "   %s: %s\n", k, p.maskHeader(k, headerValue(op.Request.Headers, opts.Req.Headers, k)))
		}
		if op.Request.Body != "" {
			termsafe.Fprintf(&b, "   %s\n", p.mask(op.Request.Body))
		}
		for _, ch := range op.Chains {
			termsafe.Fprintf(&b, "   {%s} from the answer of %s at %s (links %s), sent once first\n", ch.Param, ch.From.Name(), ch.Expr, ch.Link)
		}
		for _, l := range planLines(op) {
			termsafe.Fprintf(&b, "   %s\n", l)
		}
		n := a.MaxPlanned()
		total += n
		var run []string
		for _, c := range a.Plan() {
			if c.Skip == "" {
				run = append(run, c.ID)
			}
		}
		if len(opts.Checks) == 0 || slices.Contains(opts.Checks, openapi.ConformanceID) {
			run = append(run, openapi.ConformanceID)
		}
		termsafe.Fprintf(&b, "   up to %d requests: %s\n\n", n, strings.Join(run, " "))
	}
	if len(p.plan.Skipped) > 0 {
		fmt.Fprintf(&b, "left out (%d):\n", len(p.plan.Skipped))
		for _, s := range p.plan.Skipped {
			ptr := ""
			if s.Pointer != "" {
				ptr = " [" + s.Pointer + "]"
			}
			termsafe.Fprintf(&b, "  %s: %s%s\n", s.Name(), s.Reason, ptr)
		}
		b.WriteString("\n")
	}
	termsafe.Fprintf(&b, "dry run: nothing sent. %d operations of %s on %s; up to %d requests in all.\n", len(p.plan.Ops), redactArg(opts.API.Spec), p.targetName(), total)
	_, err := io.WriteString(opts.Streams.Out, opts.Streams.Secrets.Scrub(b.String()))
	if err != nil {
		return withCode(ExitRuntime, err)
	}
	return nil
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

// mask hides the --auth values in s.
func (p *apiPlan) mask(s string) string {
	for _, v := range p.auth {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "***")
			s = strings.ReplaceAll(s, url.QueryEscape(v), "***")
		}
	}
	return s
}

// maskHeader hides a credential header's value, and --auth values.
func (p *apiPlan) maskHeader(name, v string) string {
	if redaction.SecretHeader(name) {
		return "***"
	}
	return p.mask(v)
}
