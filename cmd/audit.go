package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/audit"
	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/termsafe"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
)

// AuditOptions are the inputs of `idemcheck audit`.
type AuditOptions struct {
	Streams Streams
	Getenv  func(string) string

	// Args are METHOD URL, or one scenario FILE (or built-in name).
	Args []string
	Req  requestFlags

	Effects     string // --effects 'GET /path?key={{.Key}}'
	EffectsPath string // --effects-path '$.charges'
	Across      string // --across first|sum
	As          []string
	Profile     string
	Format      string
	MaxRequests int
	DryRun      bool
	Volatile    []string
	Errors      string
	ErrorData   string
	Retention   time.Duration
	// RetentionKeys is --retention-keys: the fresh keys C24 sends before
	// retrying a key.
	RetentionKeys int
	// KeyFromAnswer is --key-from-answer: where the API returns the key
	// it mints.
	KeyFromAnswer string
	Lease         time.Duration
	Quiet         time.Duration
	FailOn        string
	Checks        []string
	// Reports are --report FORMAT=PATH files (text, json, markdown,
	// junit, html) and --junit-inconclusive.
	Reports reportFlags
	// Out is a directory for the audit's history (history.jsonl, which
	// 'idemcheck check' judges again) and its scorecard (scorecard.json,
	// report.html).
	Out string
	// Service is --service: the HTTP API behind a queue scenario's
	// consumer, which its oracles read.
	Service string
	// Client is how the audit connects: TLS trust, client certificates,
	// --http-debug.
	Client clientFlags
	// KillCmd, StartCmd, Ready and ReadyTimeout are C28's crash
	// (trial.Crash).
	KillCmd, StartCmd, Ready string
	ReadyTimeout             time.Duration

	// Webhook is --webhook PROFILE: the request is a webhook delivery,
	// signed with --webhook-secret as the provider signs one, and the
	// audit runs the webhook battery.
	Webhook, WebhookSecret, WebhookEvent string

	// API is --openapi and the flags that shape its plan: a document
	// whose operations are audited, each as METHOD URL would be.
	API openAPIFlags
	// MaxRequestsSet is true when --max-requests was given: with
	// --openapi it then caps the whole audit.
	MaxRequestsSet bool

	// Transport replaces the HTTP transport (tests).
	Transport http.RoundTripper
	// changed reports whether a flag was given.
	changed func(name string) bool
}

// NewCmdAudit builds `idemcheck audit`. runF replaces the run logic in
// tests.
func NewCmdAudit(f *Factory, runF func(context.Context, *AuditOptions) error) *cobra.Command {
	opts := &AuditOptions{Streams: f.Streams, Getenv: f.Getenv}
	c := &cobra.Command{
		Use:   "audit METHOD URL | audit FILE | audit --openapi SPEC",
		Short: "Audit one endpoint, webhook receiver or queue consumer against the idempotency contract (C01–C28, W01, Q01–Q04) and print a scorecard",
		Long: `Audit sends a battery of probes to one endpoint and scores it against the
idempotency contract (docs/audit.md): a missing key, malformed keys, replays,
another payload under a used key, the same JSON reordered, concurrent copies
released together, a 409 retried, a dropped answer, a request abandoned
mid-flight, a reset, an error retried, key expiry, another user's key,
another endpoint, replay fidelity, a GET with a key, two keys with one
body, a key retried after many others, different keys at once, keyless
requests from two customers, keys equal on a long prefix, and (with
--kill-cmd) the API's process killed while a request is in flight. Every
probe key is a fresh UUID v4 (C02 and C27 send other shapes on purpose).

--kill-cmd runs a shell command that kills the API (kill -9, docker kill,
kubectl delete pod) while a request is in flight, --start-cmd one that
starts it again (leave it out when the platform restarts it), and the
audit waits until --ready (METHOD /path) answers 2xx before it retries:
C28 then requires the retry processed once, never 409 past --lease (an
in-progress record that outlived the crash), never executed twice.

With --webhook PROFILE, the endpoint is a webhook receiver: each request
is a delivery signed as the provider signs one (standard, stripe, github,
shopify) with --webhook-secret, read from the environment; its key is the
event id, where the profile carries it. The battery is what a provider
does: redeliver an event after its answer (C03), after a lost answer (C09),
a timeout (C10) or a reset (C11), each redelivery signed anew; deliver one
event twice at once (C06); other events at once (C25) or with the same
data (DK); and forged deliveries (W01: signed with another key, stamped an
hour ago, and a genuine delivery after a forged one with its id). Checks a
provider never provokes are skipped.

The request is METHOD URL with -d, -H and --key-header/--key-field, or a
scenario FILE (its operation, key placement, volatile fields, profile and
first effects oracle). With --effects, checks count the effects of each key
(its path resolves against the audited URL's scheme, host and port);
without it they judge from the answers alone and say so, and where the
answers cannot tell, the result is unknown.

With --openapi, the audit covers a whole API: every POST, PUT, PATCH and
DELETE operation of an OpenAPI 3.x or Swagger 2.0 document (--include and
--exclude select by operationId, tag or 'METHOD /path' glob) is audited as
METHOD URL would be. Its key is the header parameter the document declares
(Idempotency-Key, X-Idempotency-Key, PayPal-Request-Id, or one marked
x-idempotency-key), its body the document's example or one generated from
its schema, its credentials the --auth value of each security scheme, and
its effects are counted where a link of its answer names a read-back.
--fixtures overrides any of these per operation. An operation that cannot
be planned (no key, a $ref that does not resolve, a body that cannot be
generated) is left out with the reason and its JSON pointer; the scorecard
is a matrix of operations and checks, the worst operation first, and
--max-requests, when given, caps the whole audit.

A scenario that publishes to a queue (operation.publish: --target is its
broker, --service the API behind its consumer) gets the consumer battery:
each check is a short run of the scenario, judged by its invariants. Q01
publishes every message twice at once, Q02 runs its consumer_cut (the
consumer's connection cut before its ack: the broker redelivers), Q03
publishes the messages again with the same ids after --retention (the
consumer's dedup window), Q04 a poison message, then valid ones.

An audit sends real requests that change state: it prints how many it may
send before it starts, --max-requests caps them, --dry-run only prints the
plan.

Exit codes: 0 no critical or high check failed, 1 a critical or high check
failed (or a medium one with --fail-on medium), 2 usage or config error,
3 nothing could be judged, 4 the audited request itself fails, 130
interrupted.`,
		Example: `  # the built-in lab, started in another terminal: idemcheck lab --listen 127.0.0.1:8080
  idemcheck audit POST http://127.0.0.1:8080/charges \
    -d '{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}' \
    -H 'Authorization: Bearer alice' --as 'Authorization: Bearer bob' \
    --effects 'GET /charges?idempotency_key={{.Key}}' --effects-path '$.count'

  # your API: secrets from the environment, the key in a body field, CI output
  idemcheck audit POST https://staging.example.com/v1/orders \
    -d '{"sku":"A1","qty":1}' --key-field op_id \
    -H 'Authorization: Bearer {{env "API_TOKEN"}}' \
    --profile stripe --volatile '$.created,$.request_id' --format junit > audit.xml

  # what would be sent, without sending it
  idemcheck audit POST https://staging.example.com/v1/charges -d '{"amount":100}' --dry-run

  # crash the API mid-request (C28): kill it, start it again, wait for /healthz
  idemcheck audit POST http://127.0.0.1:8080/charges -d '{"amount":100,"currency":"usd"}' \
    -H 'Authorization: Bearer alice' --effects 'GET /charges?idempotency_key={{.Key}}' --effects-path '$.count' \
    --kill-cmd 'kill -9 "$(cat api.pid)"' --start-cmd './start-api.sh' --ready 'GET /healthz' --checks C28

  # a webhook receiver: signed deliveries, redeliveries and forgeries
  # (the lab's secret is a published fixture: docs/audit.md)
  export WEBHOOK_SECRET=whsec_aWRlbWNoZWNrLWxhYi13ZWJob29rLXNpZ25pbmc=
  idemcheck audit --webhook standard POST http://127.0.0.1:8080/webhooks \
    -d '{"type":"payment.succeeded","data":{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}}' \
    --effects 'GET /charges?idempotency_key={{.Key}}' --effects-path '$.count'

  # a whole API from its OpenAPI document: the lab describes itself
  idemcheck audit --openapi http://127.0.0.1:8080/openapi.json --target http://127.0.0.1:8080 \
    --auth bearerAuth=alice --as 'Authorization: Bearer bob'

  # your API's spec: a token from the environment, two tags left out, what would be sent
  idemcheck audit --openapi api.yaml --target https://staging.example.com/v1 \
    --auth 'bearerAuth={{env "API_TOKEN"}}' --exclude admin,webhooks --fixtures audit-fixtures.yaml --dry-run

  # a queue consumer: the lab's, on Redis (idemcheck lab --consumer redis://127.0.0.1:6379/0)
  idemcheck audit stream-charges --target redis://127.0.0.1:6379/0 --service http://127.0.0.1:8080

  # the request, key and oracle of a scenario file; two replicas
  idemcheck audit charges.yaml --target http://10.0.0.1:8080 --target http://10.0.0.2:8080 --across sum`,
		Args: func(c *cobra.Command, args []string) error {
			if opts.API.Spec != "" {
				if len(args) > 0 {
					return withHint(ExitUsage, errors.New("--openapi takes no METHOD URL or FILE: the operations come from the document"),
						"idemcheck audit --openapi spec.yaml --target https://staging.example.com")
				}
				return nil
			}
			if len(args) != 1 && len(args) != 2 {
				return withHint(ExitUsage, fmt.Errorf("audit takes METHOD URL or one scenario FILE, got %d arguments", len(args)),
					"e.g. idemcheck audit POST http://127.0.0.1:8080/charges -d '{\"amount\":100,\"currency\":\"usd\"}'")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.Args = args
			if !slices.Contains(reports.ScorecardFormats(), opts.Format) {
				return withHint(ExitUsage, fmt.Errorf("--format %q: unknown format", opts.Format), "use "+strings.Join(reports.ScorecardFormats(), ", "))
			}
			if err := failOnFlag(opts.FailOn); err != nil {
				return err
			}
			switch opts.Errors {
			case "", audit.ErrorsCached, audit.ErrorsReExecuted:
			default:
				return withHint(ExitUsage, fmt.Errorf("--errors %q: unknown policy", opts.Errors), "--errors cached (an error is replayed) or --errors re-executed (an error releases the key)")
			}
			switch opts.Across {
			case "", scenarios.AcrossFirst, scenarios.AcrossSum:
			default:
				return withHint(ExitUsage, fmt.Errorf("--across %q", opts.Across), "--across first (read effects on the first target) or --across sum (add up every target's)")
			}
			if opts.MaxRequests <= 0 {
				return withHint(ExitUsage, fmt.Errorf("--max-requests %d: want at least 1", opts.MaxRequests), fmt.Sprintf("the most requests the audit may send; the default is %d", audit.DefaultMaxRequests))
			}
			if opts.Retention < 0 || opts.Lease < 0 || opts.Quiet < 0 || opts.RetentionKeys < 0 {
				return usageError("--retention, --retention-keys, --lease and --quiet-period must not be negative")
			}
			if err := opts.Reports.resolve(); err != nil {
				return err
			}
			for _, f := range opts.Reports.files {
				if !slices.Contains(reports.ScorecardFormats(), f.Format) {
					return withHint(ExitUsage, fmt.Errorf("--report %s=%s: audit writes no %s", f.Format, f.Path, f.Format), "audit writes "+strings.Join(reports.ScorecardFormats(), ", "))
				}
			}
			if opts.Profile != "" {
				if _, ok := scenarios.LookupProfile(opts.Profile); !ok {
					return withHint(ExitUsage, fmt.Errorf("--profile %q: unknown profile", opts.Profile), "use one of "+strings.Join(scenarios.ProfileNames(), ", "))
				}
			}
			opts.MaxRequestsSet, opts.changed = c.Flags().Changed("max-requests"), c.Flags().Changed
			switch {
			case opts.Webhook == "" && (opts.WebhookEvent != "" || c.Flags().Changed("webhook-secret")):
				return usageError("--webhook-secret and --webhook-event go with --webhook PROFILE")
			case opts.Webhook != "" && opts.API.Spec != "":
				return withHint(ExitUsage, errors.New("--webhook audits one receiver, --openapi an API's operations: not both"),
					"idemcheck audit --webhook standard POST https://staging.example.com/webhooks")
			}
			if err := opts.API.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			if opts.API.Spec != "" {
				return auditAPIRun(c.Context(), opts)
			}
			return auditRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	opts.Req.register(fl)
	opts.Reports.register(fl)
	opts.Client.register(fl)
	fl.StringVarP(&opts.Out, "out", "o", "", "write the audit's history (history.jsonl: 'idemcheck check DIR' judges it again) and its scorecard (scorecard.json, report.html) into this directory; a consumer battery writes each check's run there, as 'run --out' does")
	fl.StringVar(&opts.Service, "service", "", "for a scenario that publishes to a queue (--target is its broker): the HTTP API behind its consumer, which the oracles read; the consumer battery runs (Q01–Q04)")
	fl.StringVar(&opts.Effects, "effects", "", `how to count a key's effects: 'GET /path?key={{.Key}}' (a path: it resolves against the audited URL's scheme, host and port)`)
	fl.StringVar(&opts.EffectsPath, "effects-path", "", `JSONPath in the --effects answer to a count or an array of effects (default: the whole answer): '$.charges'`)
	fl.StringVar(&opts.Across, "across", "", "with several --target: read effects on the first target (first, the default) or add up every target's (sum)")
	fl.StringArrayVar(&opts.As, "as", nil, `a header of a second principal, 'Name: value' (repeatable), set over -H for the cross-user check C15: 'Authorization: Bearer {{env "OTHER_TOKEN"}}'`)
	fl.StringVar(&opts.Profile, "profile", "", "the codes the API is expected to answer: "+strings.Join(scenarios.ProfileNames(), ", ")+" (default: the file's, else draft)")
	fl.StringVarP(&opts.Format, "format", "f", "text", "scorecard format on stdout: "+strings.Join(reports.ScorecardFormats(), ", "))
	fl.IntVar(&opts.MaxRequests, "max-requests", audit.DefaultMaxRequests, "the most requests the audit sends (oracle reads aside); a check that no longer fits is skipped")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print the checks, their probes and request counts, and send nothing")
	fl.StringSliceVar(&opts.Volatile, "volatile", nil, "JSONPaths of answer fields that may differ between a first answer and its replay: '$.created,$.request_id'")
	fl.StringVar(&opts.Errors, "errors", "", "the API's declared error policy, judged by C12: cached (an error is replayed) or re-executed (an error releases the key)")
	fl.StringVar(&opts.ErrorData, "error-data", "", `a body the API fails on (a declined card), for C12: '{"amount":100,"currency":"usd","customer":"cus_fail"}'`)
	fl.DurationVar(&opts.Retention, "retention", 0, "how long the API keeps keys; C14 waits it out when it is at most 10s")
	fl.IntVar(&opts.RetentionKeys, "retention-keys", 0, "C24: send this many fresh keys after a key, then retry it (a store that keeps keys by count forgets it); counts against --max-requests")
	fl.StringVar(&opts.KeyFromAnswer, "key-from-answer", "", "the API mints the keys: the header of its answer that returns one (Idempotency-Key), or a JSONPath into the answer ($.idempotency_key); each op's first request carries no key, the later ones carry the minted one")
	fl.DurationVar(&opts.Lease, "lease", audit.DefaultLease, "how long a key may answer 409 after its request ended or its client went away (C08, C13)")
	fl.DurationVar(&opts.Quiet, "quiet-period", 0, "wait before each effects reading, so effects can land (default: the file's quiet, 200ms)")
	fl.StringVar(&opts.FailOn, "fail-on", "", "also exit 1 on medium findings (deviations from the profile): medium")
	fl.StringSliceVar(&opts.Checks, "checks", nil, "run only these checks: C06,C09,DK")
	fl.StringVar(&opts.Webhook, "webhook", "", "audit a webhook receiver: each request is a delivery signed as this provider signs one (standard, stripe, github, shopify), its key the event id; the webhook battery runs (redeliveries, concurrent deliveries, forged and stale deliveries: W01)")
	fl.StringVar(&opts.WebhookSecret, "webhook-secret", `{{env "WEBHOOK_SECRET"}}`, "with --webhook: the signing secret, read from the environment (a literal is refused)")
	fl.StringVar(&opts.WebhookEvent, "webhook-event", "", "with --webhook github or shopify: the event type sent in X-GitHub-Event or X-Shopify-Topic (default ping, orders/create)")
	opts.API.register(fl, "audit")
	fl.StringVar(&opts.KillCmd, "kill-cmd", "", `C28: a shell command that kills the API's process while a request is in flight: 'kill -9 "$(cat api.pid)"'`)
	fl.StringVar(&opts.StartCmd, "start-cmd", "", "C28: a shell command that starts the API again after --kill-cmd (none: the platform restarts it)")
	fl.StringVar(&opts.Ready, "ready", "", "C28: the request that answers 2xx once the API is back, METHOD /path: 'GET /healthz'")
	fl.DurationVar(&opts.ReadyTimeout, "ready-timeout", faults.DefaultReadyTimeout, "C28: how long each command, and the wait for --ready, may take")
	return c
}

// auditRun builds the auditor, prints the plan, runs it and writes the
// scorecard.
func auditRun(ctx context.Context, opts *AuditOptions) error {
	card, err := auditRunOnce(ctx, opts)
	if err != nil && card == nil {
		// The audit could not start: the report files say why.
		name := "audit"
		switch len(opts.Args) {
		case 1:
			name += " " + opts.Args[0]
		case 2:
			name += " " + opts.Args[0] + " " + redactArg(opts.Args[1])
		}
		if werr := opts.Reports.writeNotRun(name, "", err); werr != nil {
			return errors.Join(err, werr)
		}
	}
	return err
}

// auditRunOnce runs the audit; the scorecard it returns (nil when the
// audit could not start) was written.
func auditRunOnce(ctx context.Context, opts *AuditOptions) (*checks.Scorecard, error) {
	sc, targets, err := auditScenario(opts)
	if err != nil {
		return nil, err
	}
	as, err := scenarios.ParseHeaders("--as", opts.As)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	if opts.Transport == nil && !opts.DryRun {
		idle, rt, err := opts.Client.transport(opts.Streams.Err, 64)
		if err != nil {
			return nil, err
		}
		defer idle.CloseIdleConnections()
		opts.Transport = rt
	}
	switch {
	case sc.IsQueue():
		return auditQueue(ctx, opts, sc, targets[0])
	case opts.Service != "":
		return nil, withHint(ExitUsage, errors.New("--service names the API behind a queue scenario's consumer"), "an HTTP endpoint is audited at its URL: drop --service")
	}
	if opts.Out != "" && !opts.DryRun {
		if err := checkOut(opts.Out); err != nil {
			return nil, err
		}
	}
	crash, err := trial.Crash{Kill: opts.KillCmd, Start: opts.StartCmd, Ready: opts.Ready, ReadyTimeout: opts.ReadyTimeout}.Strikes(targets, opts.Transport, opts.Streams.Secrets)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	a, err := audit.New(audit.Config{
		Scenario: sc, Targets: targets, Getenv: opts.Getenv, Secrets: opts.Streams.Secrets, As: as, Volatile: opts.Volatile,
		Errors: opts.Errors, ErrorBody: opts.ErrorData, Retention: opts.Retention, RetentionKeys: opts.RetentionKeys, KeyFromAnswer: opts.KeyFromAnswer, Lease: opts.Lease,
		MaxRequests: opts.MaxRequests, Checks: opts.Checks, FailOn: opts.FailOn, Quiet: opts.Quiet,
		Transport: opts.Transport, Crash: crash,
	})
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	if opts.DryRun {
		return nil, writePlan(opts, a)
	}
	planned := a.MaxPlanned()
	termsafe.Fprintf(opts.Streams.Err, "audit: up to %d requests to %s %s (--max-requests %d)\n", planned, a.Method(), a.Target(), a.MaxRequests())
	if planned > a.MaxRequests() {
		fmt.Fprintf(opts.Streams.Err, "audit: the checks that no longer fit under --max-requests %d are skipped\n", a.MaxRequests())
	}
	start := time.Now()
	res, err := a.Run(ctx)
	switch {
	case errors.Is(err, audit.ErrTarget):
		return nil, withHint(ExitRuntime, err, "the plain request must succeed (2xx) before anything can be audited: check the URL, -d and -H")
	case errors.Is(err, audit.ErrConfig):
		return nil, withCode(ExitUsage, err)
	case res == nil && err != nil:
		return nil, withCode(ExitInterrupted, err)
	}
	return res.Scorecard, writeScorecards(opts, res.Scorecard, res.History, start, err)
}

// writeScorecards writes an audit's scorecard (stdout, --report files,
// --out with its history h) and gives its exit; err is an interruption.
func writeScorecards(opts *AuditOptions, card *checks.Scorecard, h *history.History, start time.Time, err error) error {
	if werr := opts.Reports.writeScorecard(opts.Streams.Out, opts.Format, card, h); werr != nil {
		return werr
	}
	fmt.Fprintf(opts.Streams.Err, "audit: %s in %v, %d requests\n", card.Result, time.Since(start).Round(10*time.Millisecond), card.Requests)
	if opts.Out != "" && h != nil {
		if werr := reports.SaveAudit(opts.Out, h, card); werr != nil {
			return withCode(ExitRuntime, werr)
		}
		fmt.Fprintf(opts.Streams.Err, "audit written to %s (idemcheck check %s judges it again)\n", opts.Out, opts.Out)
	}
	if err != nil {
		return withCode(ExitInterrupted, err)
	}
	return scorecardExit(card)
}

// auditQueue runs the consumer battery (trial.Battery) on a queue
// scenario, its broker at broker.
func auditQueue(ctx context.Context, opts *AuditOptions, sc *scenarios.Scenario, broker *url.URL) (*checks.Scorecard, error) {
	for _, name := range []string{"as", "profile", "errors", "error-data", "volatile", "lease", "key-from-answer", "retention-keys", "kill-cmd", "start-cmd", "ready", "across"} {
		if opts.changed != nil && opts.changed(name) {
			return nil, withHint(ExitUsage, fmt.Errorf("--%s does not apply to a queue scenario's consumer battery", name),
				"the battery publishes the scenario's messages and reads its oracles (docs/audit.md, \"A queue consumer\")")
		}
	}
	if opts.Quiet > 0 {
		sc.Quiet = scenarios.Duration(opts.Quiet) // how long each run waits for the consumer to drain
	}
	bo := trial.BatteryOptions{Options: trial.Options{Target: broker.String(), Service: opts.Service, Getenv: opts.Getenv, Secrets: opts.Streams.Secrets,
		Transport: opts.Transport}, Late: opts.Retention, Checks: opts.Checks, MaxMessages: opts.MaxRequests, FailOn: opts.FailOn,
		Progress: func(id, name string) { fmt.Fprintf(opts.Streams.Err, "audit: %s %s\n", id, name) }}
	plan, err := trial.BatteryPlan(sc, bo)
	switch {
	case err != nil:
		return nil, withCode(ExitUsage, err)
	case opts.DryRun:
		return nil, writeQueuePlan(opts, plan)
	}
	var saveErrs []error
	saved := 0
	if opts.Out != "" {
		if err := checkOut(opts.Out); err != nil {
			return nil, err
		}
		if dirs, err := trial.SavedDirs(opts.Out); err == nil { // check would judge them beside this audit's
			return nil, withHint(ExitUsage, fmt.Errorf("--out %s already holds saved runs (%s)", opts.Out, dirs[0]), "give the battery an empty directory")
		}
		bo.Save = func(run string, j *trial.Judged) { // each check's run, as 'run --out' saves one
			err := saveRun(opts.Out, filepath.Join(opts.Out, run), summarize(j), j.History)
			if err == nil {
				saved++
			}
			saveErrs = append(saveErrs, err)
		}
	}
	termsafe.Fprintf(opts.Streams.Err, "audit: up to %d messages to %s, retries aside (--max-requests %d)\n", trial.Planned(plan), redactArg(broker.String()), opts.MaxRequests)
	start := time.Now()
	card, err := trial.Battery(ctx, sc, bo)
	if card == nil {
		return nil, prepareError(err)
	}
	code := writeScorecards(opts, card, nil, start, err)
	if opts.Out != "" {
		saveErrs = append(saveErrs, writeFile(filepath.Join(opts.Out, "scorecard.json"), func(f *os.File) error {
			return reports.WriteScorecard(f, "json", card, nil, reports.Options{})
		}))
		if err := errors.Join(saveErrs...); err != nil {
			return card, withCode(worst(ExitRuntime, exitCodeOf(code)), err)
		}
		if saved > 0 {
			fmt.Fprintf(opts.Streams.Err, "audit written to %s: %d runs of its checks, and scorecard.json (idemcheck check %s judges the runs again)\n", opts.Out, saved, opts.Out)
		} else {
			fmt.Fprintf(opts.Streams.Err, "scorecard written to %s/scorecard.json (no check ran, so no run was saved)\n", opts.Out)
		}
	}
	return card, code
}

// writeQueuePlan prints what the consumer battery would publish.
func writeQueuePlan(opts *AuditOptions, plan []trial.PlannedCheck) error {
	p := reports.AuditPlan{MaxRequests: opts.MaxRequests, Oracle: true, MaxPlanned: trial.Planned(plan)}
	for _, c := range plan {
		p.Checks = append(p.Checks, reports.AuditPlanCheck{ID: c.ID, Name: c.Name, Severity: string(c.Severity), Requests: c.Messages, Probes: c.Probe, Skip: c.Skip})
	}
	return withCode(ExitRuntime, reports.WriteAuditPlan(opts.Streams.Out, p))
}

// scorecardExit is the exit of a judged audit: 1 when a check failed at
// the failing severity, 3 when nothing could be judged.
func scorecardExit(card *checks.Scorecard) error {
	switch card.Result {
	case checks.NotMet:
		return silentExit{ExitFailed}
	case checks.Inconclusive:
		return silentExit{ExitInconclusive}
	}
	return nil
}

// auditScenario is the scenario the audit's request comes from: built from
// METHOD URL and the request flags, or read from a file; and the targets.
func auditScenario(opts *AuditOptions) (*scenarios.Scenario, []*url.URL, error) {
	if len(opts.Args) == 1 {
		r := opts.Req
		if r.Data != "" || len(r.Headers) > 0 || r.KeyHeader != "" || r.KeyField != "" || opts.Effects != "" || opts.EffectsPath != "" {
			return nil, nil, withHint(ExitUsage, errors.New("-d, -H, --key-header, --key-field and --effects go with METHOD URL"),
				"with a scenario file, the request, its key and its oracle come from the file")
		}
		if opts.Webhook != "" {
			return nil, nil, withHint(ExitUsage, errors.New("--webhook goes with METHOD URL"),
				"with a scenario file, its operation.webhook says how deliveries are signed (docs/scenario.md)")
		}
		sc, err := scenarios.Resolve(opts.Args[0])
		if err != nil {
			return nil, nil, withCode(ExitUsage, err)
		}
		if opts.Profile != "" {
			sc.ProfileName = opts.Profile
		}
		overrides := r.Targets
		if len(overrides) == 0 {
			overrides = []string{opts.Getenv("IDEMCHECK_TARGET")}
		}
		targets, err := sc.TargetURLs(overrides)
		if err != nil {
			return nil, nil, withCode(ExitUsage, err)
		}
		sc.SetAcross(opts.Across)
		return sc, targets, nil
	}
	op, err := opts.Req.resolve(opts.Args[0], opts.Args[1])
	if err != nil {
		return nil, nil, err
	}
	// A scenario asks for a load and an invariant; the audit uses neither.
	spec, err := op.AuditSpec(opts.Profile, opts.Effects, opts.EffectsPath, opts.Across)
	if err != nil {
		return nil, nil, withCode(ExitUsage, err)
	}
	if opts.Webhook != "" {
		if spec.Webhook, err = scenarios.WebhookFlag(opts.Webhook, opts.WebhookSecret, opts.WebhookEvent); err != nil {
			return nil, nil, withCode(ExitUsage, err)
		}
		if opts.Req.KeyHeader == "" && opts.Req.KeyField == "" {
			spec.Key = scenarios.KeyPlace{} // the event id goes where the profile carries it
		}
	}
	sc, err := fromRequest(spec)
	if err != nil {
		return nil, nil, err
	}
	targets, err := sc.TargetURLs(nil)
	if err != nil {
		return nil, nil, withCode(ExitUsage, err)
	}
	return sc, targets, nil
}

// writePlan prints what the audit would send (--dry-run).
func writePlan(opts *AuditOptions, a *audit.Auditor) error {
	if err := reports.WriteAuditPlan(opts.Streams.Out, a.PlanReport()); err != nil {
		return withCode(ExitRuntime, err)
	}
	return nil
}
