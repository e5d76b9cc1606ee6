package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/idemcheck/idemcheck/audit"
	"github.com/idemcheck/idemcheck/audit/apiaudit"
	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/termsafe"
	"github.com/idemcheck/idemcheck/openapi"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
)

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
	for _, v := range p.Auth {
		if !strings.Contains(v, "{{") {
			opts.Streams.Secrets.Add(v) // a literal credential: masked in every byte written
		}
	}
	as, err := scenarios.ParseHeaders("--as", opts.As)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	api := &apiaudit.Audit{Plan: p, Headers: opts.Req.Headers, Profile: opts.Profile, Across: opts.Across, Spec: redactArg(opts.API.Spec),
		Config: audit.Config{Getenv: opts.Getenv, Secrets: opts.Streams.Secrets, As: as, Volatile: opts.Volatile,
			Errors: opts.Errors, Retention: opts.Retention, RetentionKeys: opts.RetentionKeys, KeyFromAnswer: opts.KeyFromAnswer, Lease: opts.Lease,
			Checks: opts.Checks, FailOn: opts.FailOn, Quiet: opts.Quiet, Transport: opts.Transport},
		Progress: func(line string) { fmt.Fprintln(opts.Streams.Err, line) }}
	if opts.MaxRequestsSet {
		api.MaxRequests = opts.MaxRequests
	}
	if opts.DryRun {
		if _, err := io.WriteString(opts.Streams.Out, opts.Streams.Secrets.Scrub(api.DryRun())); err != nil {
			return nil, withCode(ExitRuntime, err)
		}
		return nil, nil
	}
	if opts.Out != "" {
		if err := checkOut(opts.Out); err != nil {
			return nil, err
		}
		api.Audited = func(i int, op openapi.Operation, res *audit.Result) error {
			return withCode(ExitRuntime, reports.SaveAudit(filepath.Join(opts.Out, apiaudit.Dir(i, op)), res.History, res.Scorecard))
		}
	}
	if api.Config.Crash, err = (trial.Crash{Kill: opts.KillCmd, Start: opts.StartCmd, Ready: opts.Ready, ReadyTimeout: opts.ReadyTimeout}).Strikes(p.Targets, opts.Transport, opts.Streams.Secrets); err != nil {
		return nil, withCode(ExitUsage, err)
	}
	termsafe.Fprintf(opts.Streams.Err, "audit: %d operations of %s on %s, up to %d requests in all (--max-requests)\n",
		len(p.Ops), api.Spec, p.TargetName(), api.Budget())
	start := time.Now()
	card, err := api.Run(ctx)
	if err != nil {
		return nil, err
	}
	ropts := reports.Options{JUnitInconclusive: opts.Reports.Inconclusive}
	if werr := reports.WriteAPIScorecard(opts.Streams.Out, opts.Format, card, ropts); werr != nil {
		return card, withCode(ExitRuntime, fmt.Errorf("writing the scorecard: %w", werr))
	}
	for _, f := range opts.Reports.files {
		if werr := writeFile(f.Path, func(out *os.File) error { return reports.WriteAPIScorecard(out, f.Format, card, ropts) }); werr != nil {
			return card, withCode(ExitRuntime, werr)
		}
	}
	if opts.Out != "" {
		for _, f := range []string{"json", "html"} {
			name := map[string]string{"json": "scorecard.json", "html": "report.html"}[f]
			if werr := writeFile(filepath.Join(opts.Out, name), func(out *os.File) error { return reports.WriteAPIScorecard(out, f, card, ropts) }); werr != nil {
				return card, withCode(ExitRuntime, werr)
			}
		}
		fmt.Fprintf(opts.Streams.Err, "audit written to %s (each operation's history in its own directory: idemcheck check DIR/NN-name judges it again)\n", opts.Out)
	}
	fmt.Fprintf(opts.Streams.Err, "audit: %s in %v, %d requests\n", card.Result, time.Since(start).Round(10*time.Millisecond), card.Requests)
	if card.Interrupted {
		return card, withCode(ExitInterrupted, context.Cause(ctx))
	}
	switch card.Result {
	case checks.NotMet:
		return card, silentExit{ExitFailed}
	case checks.Inconclusive:
		return card, silentExit{ExitInconclusive}
	}
	return card, nil
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
func planAPI(ctx context.Context, f openAPIFlags, req requestFlags, getenv func(string) string, transport http.RoundTripper) (*apiaudit.Plan, error) {
	p, err := apiaudit.NewPlan(ctx, apiaudit.PlanOptions{Spec: f.Spec, Include: f.Include, Exclude: f.Exclude, Fixtures: f.Fixtures, Auth: f.Auth,
		KeyHeader: req.KeyHeader, KeyField: req.KeyField, Targets: req.Targets, Getenv: getenv, Transport: transport})
	switch {
	case err == nil:
		return p, nil
	case ctx.Err() != nil:
		return nil, withCode(ExitInterrupted, err)
	}
	return nil, withCode(ExitUsage, err)
}
