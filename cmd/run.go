package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/internal/termsafe"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/reports/live"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
)

// RunOptions are the inputs of `idemcheck run`.
type RunOptions struct {
	Streams Streams
	Getenv  func(string) string

	Scenarios []string // files or built-in names
	Target    string
	// Targets are every --target when more than one was given: replicas
	// behind one balancer, each attempt sent to one of them.
	Targets        []string
	Service        string // --service: the HTTP API behind a queue target, which its oracles read
	RequestTimeout time.Duration
	Seed           uint64
	SeedSet        bool
	KeyNonce       uint64
	NonceSet       bool
	AbortOnFail    bool
	Ops            int
	Duration       time.Duration
	Concurrency    int
	Rate           float64
	Out            string
	Format         string
	Progress       bool
	FailOn         string
	// RedactPath masks the targets' path segments in every output.
	RedactPath bool
	// HGRM is where each scenario's latency histograms go as .hgrm
	// files (--hgrm); "" for none.
	HGRM string
	// Quiet turns progress off on stderr.
	Quiet bool
	// Reports are the --report files.
	Reports reportFlags
	// Client is how requests connect: TLS, --http-debug.
	Client clientFlags
	// DryRun prints the plan and the first requests and sends nothing.
	DryRun bool
	// SpillAfter bounds the attempts kept in memory (runner.Options).
	SpillAfter int
	// TmpDir is where the run's temporary files go (the spill, the parts
	// a history is judged in, a judge's merge): --tmp-dir, else --out,
	// else $TMPDIR.
	TmpDir string
	// Metrics serve the run's Prometheus metrics (--metrics-addr) and
	// push them (--metrics-push).
	Metrics metricsFlags

	// Phases make one phase of a sharded run.
	Phases phaseFlags

	// Transport replaces the HTTP transport (tests).
	Transport http.RoundTripper
	// rerun is the command line that repeats the run of one scenario (a
	// file or built-in name); nil when not known (tests).
	rerun func(scenario string, seed, nonce uint64) string
	// closeIdle closes the idle connections of the transport the command
	// built, if it built one.
	closeIdle func()
}

// NewCmdRun builds `idemcheck run`. runF replaces the run logic in tests.
func NewCmdRun(f *Factory, runF func(context.Context, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{Streams: f.Streams, Getenv: f.Getenv}
	var targets []string
	c := &cobra.Command{
		Use:   "run FILE|NAME...",
		Short: "Run scenarios against an API and check its idempotency invariants",
		Long: `Run drives each scenario's operation with concurrent requests, injects its
faults, retries as its policy says (keeping the op's key), records every
attempt, reads the real state through its oracles after a quiet period, and
checks its invariants. A scenario is a YAML file or the name of a built-in
one ('idemcheck scenarios list'); its schema is in docs/scenario.md.

The target comes from --target, else IDEMCHECK_TARGET, else the file.
Secrets belong in the environment: templates read them with {{env "NAME"}}.

Exit codes: 0 every expectation met, 1 an invariant or threshold failed (or
an expected violation was not caught), 2 usage or config error,
3 inconclusive, 4 target unreachable or report not written, 130 interrupted
(the report of what ran is still written).`,
		Example: `  # a scenario of your own
  idemcheck run charges.yaml --target http://127.0.0.1:8080

  # built-in scenarios against the lab, with a fixed seed and saved evidence
  idemcheck run charges-lost-ack charges-lost-ack-naive --target http://127.0.0.1:8080 --seed 42 --out ./report

  # two replicas behind one balancer: attempts (and retries) spread over both
  idemcheck run charges.yaml --target http://10.0.0.1:8080 --target http://10.0.0.2:8080

  # more load, open model at 500 ops/s for 30s
  idemcheck run charges.yaml --rate 500 --duration 30s

  # latency histograms for the HdrHistogram plotter: ./latency/charges.op.hgrm, ...
  idemcheck run charges.yaml --hgrm ./latency

  # JSON for machines; in CI, one run and three reports
  idemcheck run charges.yaml --format json > report.json
  idemcheck run scenarios/*.yaml --target "$STAGING" --report junit=junit.xml \
    --report markdown="$GITHUB_STEP_SUMMARY" --report html=report.html

  # one run shared by four load processes, one directory (docs/distributed.md)
  idemcheck run charges.yaml --phase prepare --shards 4 --out /runs/r1
  idemcheck run --phase load --shard 0/4 --out /runs/r1    # and 1/4, 2/4, 3/4, at once
  idemcheck run --phase judge --out /runs/r1 --report junit=junit.xml`,
		Args: func(c *cobra.Command, args []string) error {
			if opts.Phases.Phase != "" {
				return nil // checked with the phase's flags
			}
			if len(args) == 0 {
				return withHint(ExitUsage, errors.New("run needs at least one scenario file or built-in name"),
					"list the built-ins with 'idemcheck scenarios list'")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.Scenarios = args
			opts.rerun = func(scenario string, seed, nonce uint64) string {
				return rerunLine(c, []string{scenario}, seed, nonce)
			}
			if len(targets) > 0 {
				opts.Target = targets[0]
			}
			if len(targets) > 1 {
				opts.Targets = targets
			}
			if opts.RequestTimeout < 0 {
				return usageError("--request-timeout must not be negative, got %s", opts.RequestTimeout)
			}
			if opts.SpillAfter < 0 || opts.SpillAfter > runner.MaxSpillAfter {
				return usageError("--spill-after %d: want 1 to %d attempts, or 0 to keep every attempt in memory", opts.SpillAfter, runner.MaxSpillAfter)
			}
			for name, zero := range map[string]bool{"ops": opts.Ops == 0, "duration": opts.Duration == 0,
				"concurrency": opts.Concurrency == 0, "rate": opts.Rate == 0} {
				if zero && c.Flags().Changed(name) {
					return withHint(ExitUsage, fmt.Errorf("--%s 0: a run needs more than none", name), fmt.Sprintf("leave --%s out to keep the scenario's own", name))
				}
			}
			opts.SeedSet = c.Flags().Changed("seed")
			opts.NonceSet = c.Flags().Changed("key-nonce")
			if opts.Target == "" {
				opts.Target = opts.Getenv("IDEMCHECK_TARGET")
				if env := opts.Target; env != "" {
					// the rerun line names it: elsewhere the variable may differ
					target := redaction.Options{Path: opts.RedactPath}.String(env)
					opts.rerun = func(scenario string, seed, nonce uint64) string {
						return rerunLine(c, []string{scenario}, seed, nonce, "--target", shellArg(target))
					}
				}
			}
			if _, err := opts.Reports.writer(opts.Format); err != nil {
				return withCode(ExitUsage, err)
			}
			opts.Reports.noFS = validating(c.Context())
			if err := opts.Reports.resolve(); err != nil {
				return err
			}
			if err := opts.Reports.refuseRunFiles(opts.Out); err != nil {
				return err
			}
			if opts.TmpDir != "" && !validating(c.Context()) {
				if err := trial.CheckWritable(opts.TmpDir); err != nil {
					return withHint(ExitRuntime, fmt.Errorf("--tmp-dir %w", err), "choose a directory you can write to; nothing was sent")
				}
			}
			if err := failOnFlag(opts.FailOn); err != nil {
				return err
			}
			if err := opts.Phases.check(c, args, opts.Out); err != nil {
				return err
			}
			if opts.Phases.Phase != "" && (opts.DryRun || opts.Metrics.given()) {
				return usageError("--dry-run, --metrics-addr and --metrics-push do not apply to --phase %s", opts.Phases.Phase)
			}
			if err := opts.Metrics.check(c.Flags().Changed); err != nil {
				return err
			}
			opts.Progress = opts.Streams.ErrTerminal
			if validating(c.Context()) {
				return nil
			}
			if err := opts.checkHGRM(); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			var err error
			if opts.Phases.Phase != "" {
				err = runPhase(c.Context(), opts)
			} else {
				err = runRun(c.Context(), opts)
			}
			// Every failure that wrote no report file writes one that
			// says why, so that CI finds a file to show.
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return errors.Join(err, opts.Reports.writeNotRun(name, opts.Target, err))
		},
	}
	fl := c.Flags()
	fl.StringArrayVarP(&targets, "target", "t", nil, "base URL of the API under test (default: $IDEMCHECK_TARGET, else the scenario's target); repeat it for replicas behind one balancer: each attempt goes to one of them, a retry may land on another")
	fl.StringVar(&opts.Service, "service", "", "for a scenario that publishes to a queue (--target is its broker): the HTTP API behind its consumer, which the oracles read (default: the scenario's service)")
	fl.DurationVar(&opts.RequestTimeout, "request-timeout", 0, "bound every request of the run: load, setup and oracle reads (default: the scenario's load.request_timeout, 30s); an attempt over it is indeterminate and the run goes on")
	fl.Uint64Var(&opts.Seed, "seed", 0, "seed for keys, fault placement and jitter (default: random, printed in the report)")
	fl.Uint64Var(&opts.KeyNonce, "key-nonce", 0, "mixed into the keys so a re-run with the same seed sends new ones (default: random, printed in the report; give the report's to resend its exact keys, 0 for keys from the seed alone)")
	fl.BoolVar(&opts.AbortOnFail, "abort-on-fail", false, "stop the load once a failure is proven while it runs (a duplicate effect or a differing answer on ops that ended, a threshold that can no longer hold): load.abort_on_fail for every scenario; the report says when and why")
	fl.IntVar(&opts.Ops, "ops", 0, "send this many ops, in place of the scenario's ops and duration (with --duration too: whichever comes first)")
	fl.DurationVar(&opts.Duration, "duration", 0, "send load this long, in place of the scenario's ops and duration (with --ops too: whichever comes first)")
	fl.IntVar(&opts.Concurrency, "concurrency", 0, "override: closed model with this many workers (a flat load in place of load.stages)")
	fl.Var((*rateValue)(&opts.Rate), "rate", "override: open model at this rate, ops per second (200) or with a unit (200/s, 12000/m, 5/h); a flat load in place of load.stages")
	fl.BoolVarP(&opts.Quiet, "quiet", "q", false, "no progress on stderr (by default: bars on a terminal, a line every 10 s otherwise)")
	fl.StringVar(&opts.HGRM, "hgrm", "", "write each scenario's latency histograms to this directory as HdrHistogram percentile files, NAME.attempt.hgrm (clean attempts) and NAME.op.hgrm (ops, retries included), values in ms for the standard plotter; a run in one process or --phase judge")
	opts.Reports.register(fl)
	opts.Client.register(fl)
	opts.Metrics.register(fl)
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print each scenario's plan and its first requests, rendered (secrets masked), and send nothing")
	fl.StringVarP(&opts.Out, "out", "o", "", "directory to write report.json and history.jsonl to (one subdirectory per scenario when several)")
	fl.StringVarP(&opts.Format, "format", "f", "text", "report format on stdout: text, json, markdown, junit or html")
	fl.IntVar(&opts.SpillAfter, "spill-after", defaultSpillAfter, "keep at most this many attempts in memory (about 160 bytes each); past them a run writes its history to a file in --tmp-dir as it goes and is judged from it in parts, so its memory stays bounded (0: keep everything in memory)")
	fl.StringVar(&opts.TmpDir, "tmp-dir", "", "directory for the run's temporary files: its history past --spill-after, the parts it is judged in, a judge's merge (default: --out, else $TMPDIR); nothing is written there below --spill-after")
	fl.BoolVar(&opts.RedactPath, "redact-path", false, "mask the target URL's path segments in every output too (for a token in the path); passwords and query values are always masked")
	opts.Phases.register(c)
	fl.StringVar(&opts.FailOn, "fail-on", "", "also fail on deviations from the scenario's profile: medium (default: only duplicate effects, leaks, stuck keys and wrong replays fail)")
	return c
}

func runRun(ctx context.Context, opts *RunOptions) error {
	var list []*scenarios.Scenario
	for _, arg := range opts.Scenarios {
		sc, err := scenarios.ResolveContext(ctx, arg)
		if ctx.Err() != nil {
			return withCode(ExitInterrupted, fmt.Errorf("reading %s: %w", arg, ctx.Err()))
		}
		if err != nil {
			err = withCode(ExitUsage, err)
			return errors.Join(err, opts.Reports.writeNotRun(arg, opts.Target, err))
		}
		if err := applyOverrides(sc, opts.Ops, opts.Duration, opts.Concurrency, opts.Rate, opts.AbortOnFail); err != nil {
			return err
		}
		list = append(list, sc)
	}
	for _, sc := range list {
		if opts.Target != "" && len(sc.Target) > 0 && sc.Target[0] != opts.Target {
			termsafe.Fprintf(opts.Streams.Err, "%s: target %s from --target, replacing the file's %s\n", sc.Name,
				redaction.Options{Path: opts.RedactPath}.String(opts.Target), redaction.Options{Path: opts.RedactPath}.String(sc.Target[0]))
		}
	}
	if opts.DryRun {
		for _, sc := range list {
			targets, err := sc.TargetURLs(runTargets(opts))
			if err != nil {
				return withCode(ExitUsage, err)
			}
			if err := runner.DryRun(ctx, opts.Streams.Out, sc, targets, opts.Getenv, 3, opts.Streams.Secrets); err != nil {
				return withCode(ExitUsage, err)
			}
		}
		return nil
	}
	closeMetrics, err := opts.Metrics.start(opts.Streams.Err, redaction.Options{Path: opts.RedactPath})
	if err != nil {
		return err
	}
	defer closeMetrics()
	if err := opts.useTransport(list...); err != nil {
		return err
	}
	defer opts.closeTransport()
	seed, nonce := opts.seedAndNonce()
	// Each scenario's files go to a directory of its own when there are
	// several; every directory is checked before any request is sent.
	outs := make([]string, len(list))
	if opts.Out != "" {
		outs = trial.RunDirs(opts.Out, list)
		for _, out := range outs {
			if err := trial.NoSymlinkBelow(opts.Out, out); err != nil {
				return withHint(ExitUsage, err, "remove the link, or give the run an --out of its own; nothing was sent")
			}
			if err := checkOut(out); err != nil {
				return err
			}
		}
	}
	write, _ := opts.Reports.writer(opts.Format)
	var sums []*reports.Summary
	code := ExitOK
	var errs []error
	written := 0
	for i, sc := range list {
		prog := live.New(opts.Streams.Err, live.ModeOf(opts.Streams.ErrTerminal, opts.Quiet), sc.Name)
		obs := opts.Metrics.begin(ctx, sc.Name, prog)
		var rerun string
		if opts.rerun != nil {
			rerun = opts.rerun(strings.TrimPrefix(sc.Source, "builtin:"), seed, nonce)
		}
		ex, err := execute(ctx, sc, execOptions{Out: outs[i], Base: opts.Out, Rerun: rerun, Errs: opts.Streams.Err, Options: trial.Options{Target: opts.Target, Targets: opts.Targets, Service: opts.Service, RequestTimeout: opts.RequestTimeout,
			Seed: seed, KeyNonce: nonce, Transport: opts.Transport, Getenv: opts.Getenv, Secrets: opts.Streams.Secrets, Observer: obs, FailOn: opts.FailOn, RedactPath: opts.RedactPath, SpillAfter: opts.SpillAfter,
			SpillDir: opts.tmpDir(outs[i])}})
		prog.Close()
		if err != nil && len(list) == 1 {
			notRun := reports.NotRun("idemcheck "+Version, sc.Name, redactArg(opts.Target), time.Now(), err)
			return errors.Join(err, opts.Reports.writeNotRun(sc.Name, opts.Target, err), opts.Metrics.end(ctx, opts.Streams.Err, notRun, nil))
		}
		if err != nil {
			// One of several scenarios could not start: the others'
			// reports (and any violation they caught) still go out, with
			// this one as not run, and the rest still run unless
			// interrupted.
			code, errs = worst(code, exitCodeOf(err)), append(errs, err)
			sums = append(sums, reports.NotRun("idemcheck "+Version, sc.Name, redactArg(opts.Target), time.Now(), err))
			if err := opts.Metrics.end(ctx, opts.Streams.Err, sums[len(sums)-1], nil); err != nil {
				code, errs = worst(code, ExitRuntime), append(errs, err)
			}
			if ctx.Err() != nil {
				break
			}
			continue
		}
		sums = append(sums, ex.Summary)
		targets, _ := sc.TargetURLs(runTargets(opts))
		if err := opts.Metrics.end(ctx, opts.Streams.Err, ex.Summary, targets); err != nil {
			code, errs = worst(code, ExitRuntime), append(errs, err)
		}
		code = worst(code, ex.Code)
		if ex.Err != nil {
			errs = append(errs, ex.Err)
		}
		if ex.Written {
			written++
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err := write(opts.Streams.Out, sums); err != nil {
		return withCode(ExitRuntime, fmt.Errorf("writing report: %w", err))
	}
	if err := opts.Reports.write(sums); err != nil {
		code, errs = worst(code, ExitRuntime), append(errs, err)
	}
	if err := opts.writeHGRM(sums); err != nil {
		code, errs = worst(code, ExitRuntime), append(errs, err)
	}
	switch {
	case opts.Out == "":
	case written == len(sums):
		fmt.Fprintf(opts.Streams.Err, "report written to %s\n", opts.Out)
	case written > 0:
		fmt.Fprintf(opts.Streams.Err, "report partly written to %s: %d of %d runs\n", opts.Out, written, len(sums))
	}
	return finish(code, errs)
}

// tmpDir is where a run saving to out writes its temporary files:
// --tmp-dir, else out, else "" ($TMPDIR).
func (opts *RunOptions) tmpDir(out string) string {
	if opts.TmpDir != "" {
		return opts.TmpDir
	}
	return out
}

// useTransport builds the transport of a run of list, unless one was
// given (tests): enough connections for the busiest scenario.
func (opts *RunOptions) useTransport(list ...*scenarios.Scenario) error {
	if opts.Transport != nil {
		return nil
	}
	conns := 64
	for _, sc := range list {
		conns = max(conns, sc.Load.MaxConcurrency(), sc.Load.MaxInFlight)
	}
	tr, rt, err := opts.Client.transport(opts.Streams.Err, conns)
	if err != nil {
		return err
	}
	opts.closeIdle = tr.CloseIdleConnections
	opts.Transport = rt
	return nil
}

// closeTransport closes the idle connections of the transport
// useTransport built.
func (opts *RunOptions) closeTransport() {
	if opts.closeIdle != nil {
		opts.closeIdle()
	}
}

// seedAndNonce are the run's seed and key nonce: the flags', else random.
func (opts *RunOptions) seedAndNonce() (seed, nonce uint64) {
	seed = opts.Seed
	if !opts.SeedSet {
		seed = trial.RandomSeed()
	}
	nonce = opts.KeyNonce
	if !opts.NonceSet {
		// A target keeps its keys: the same seed again must not send the
		// last run's keys, which a correct API would rightly replay.
		nonce = trial.RandomSeed()
	}
	return seed, nonce
}

// finish ends a command that already printed its report: with the runtime
// errors beside the verdicts, else silently with the verdicts' code.
func finish(code ExitCode, errs []error) error {
	if len(errs) > 0 {
		return withCode(code, errors.Join(errs...))
	}
	if code != ExitOK {
		return silentExit{code}
	}
	return nil
}

// applyOverrides applies the load flags to a loaded scenario
// (trial.Overrides), refusing values out of range.
func applyOverrides(sc *scenarios.Scenario, ops int, d time.Duration, conc int, rate float64, abort bool) error {
	o := trial.Overrides{Ops: ops, Duration: d, Concurrency: conc, Rate: rate, AbortOnFail: abort}
	if err := o.Check(); err != nil {
		return withHint(ExitUsage, fmt.Errorf("--ops, --duration, --concurrency, --rate: %w", err),
			"the closed model (--concurrency) or the open model (--rate), and no negative value")
	}
	o.Apply(sc)
	return nil
}

// rateValue is --rate: ops per second, or with a unit as in a scenario
// (200/s, 12000/m, 5/h).
type rateValue float64

func (r *rateValue) String() string {
	if *r == 0 {
		return ""
	}
	return strconv.FormatFloat(float64(*r), 'g', -1, 64)
}

func (r *rateValue) Set(s string) error {
	v, err := scenarios.ParseRate(s)
	if err != nil {
		return err
	}
	*r = rateValue(v)
	return nil
}

func (r *rateValue) Type() string { return "rate" }

// runTargets are the --target values (or IDEMCHECK_TARGET), first first.
func runTargets(opts *RunOptions) []string {
	if len(opts.Targets) > 0 {
		return opts.Targets
	}
	if opts.Target != "" {
		return []string{opts.Target}
	}
	return nil
}

// exitCodeOf is the code err exits with (see report).
func exitCodeOf(err error) ExitCode {
	if err == nil {
		return ExitOK
	}
	var s silentExit
	if errors.As(err, &s) {
		return s.code
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	if errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	return ExitRuntime
}
