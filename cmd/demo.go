package cmd

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/abtest"
	"github.com/idemcheck/idemcheck/lab"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/reports/live"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
)

// DemoOptions are the inputs of `idemcheck demo`.
type DemoOptions struct {
	Lab      LabOptions
	Getenv   func(string) string
	Ops      int
	Seed     uint64
	KeyNonce uint64
	NonceSet bool
	Out      string
	// Only limits the demo to these scenario pairs (tests).
	Only []string
	// rerun is the command line that repeats the demo; nil when not known.
	rerun func(seed, nonce uint64) string
	// Quiet turns progress off on stderr.
	Quiet bool
	// Reports are the --report files.
	Reports reportFlags
}

// NewCmdDemo builds `idemcheck demo`.
func NewCmdDemo(f *Factory, runF func(context.Context, *DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{Lab: LabOptions{Streams: f.Streams}, Getenv: f.Getenv}
	c := &cobra.Command{
		Use:   "demo",
		Short: "Start the lab in-process and show every classic failure caught and every fix holding",
		Long: `Demo starts the lab (the built-in payment service) on a free loopback port and
runs every built-in scenario against it: for each classic situation (a lost
acknowledgement, a client timeout while the card processor still works,
duplicate concurrent sends, a compare-and-set debit, a late replay, a key
shared by two users, one payload under many keys, another payload under one
key) a naive endpoint that must be caught, where there is one, and a
protected one that must hold. It prints what was
injected, each verdict with its evidence, and what the protection costs in
latency, and writes report.json and history.jsonl per scenario under --out.

Exit 0 when every expectation was met: every naive endpoint caught, every
protected one held. With --bug the protected endpoints carry a classic
mistake, and the demo shows idemcheck catching it (exit 1). With --bug
in-process-lock it starts two instances of the lab that share the store,
the ledger and the card processor, as two replicas of one service would.
With --consumer BROKER the lab's queue consumers read that broker, and the
built-ins that publish to it run too.`,
		Example: `  idemcheck demo
  idemcheck demo --ops 1000 --seed 7 --processor-latency 50ms
  idemcheck demo --bug check-then-act
  idemcheck demo --consumer redis://127.0.0.1:6379/0
  idemcheck demo --store redis://127.0.0.1:6379/0 --ledger postgres://postgres@127.0.0.1:5432/postgres`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Ops < 0 {
				return usageError("--ops must not be negative")
			}
			if err := opts.Lab.check(); err != nil {
				return err
			}
			opts.NonceSet = c.Flags().Changed("key-nonce")
			opts.rerun = func(seed, nonce uint64) string { return rerunLine(c, nil, seed, nonce) }
			if err := opts.Reports.resolve(); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return demoRun(c.Context(), opts)
		},
	}
	addLabFlags(c, &opts.Lab)
	c.Flags().IntVar(&opts.Ops, "ops", 0, "ops per scenario (default: each scenario's own, a few hundred)")
	c.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "no progress on stderr")
	opts.Reports.register(c.Flags())
	c.Flags().Uint64Var(&opts.Seed, "seed", 1, "seed for keys, fault placement and jitter")
	c.Flags().Uint64Var(&opts.KeyNonce, "key-nonce", 0, "mixed into the keys, so a demo on Redis/Postgres that kept an earlier demo's data sends new keys (default: random)")
	c.Flags().StringVarP(&opts.Out, "out", "o", "idemcheck-report", "directory for the reports, one subdirectory per scenario")
	return c
}

func demoRun(ctx context.Context, opts *DemoOptions) error {
	streams := opts.Lab.Streams
	if opts.Lab.Instances == 0 {
		opts.Lab.Instances = lab.InstancesFor(opts.Lab.Bugs)
	}
	rl, err := startLab(ctx, &opts.Lab, "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer rl.Stop()
	fmt.Fprintf(streams.Err, "lab started at %s (store %s, ledger %s, processor latency %v", strings.Join(rl.URLs, " and "), redact(opts.Lab.Store), redact(opts.Lab.Ledger), opts.Lab.ProcessorLatency)
	if len(rl.URLs) > 1 {
		fmt.Fprintf(streams.Err, ", %d instances sharing the store, the ledger and the processor", len(rl.URLs))
	}
	if len(opts.Lab.Bugs) > 0 {
		fmt.Fprintf(streams.Err, ", bugs %s", strings.Join(opts.Lab.Bugs, ", "))
	}
	fmt.Fprintln(streams.Err, ")")

	if !opts.NonceSet {
		// Redis and Postgres keep what an earlier demo wrote: the same seed
		// must not send its keys again.
		opts.KeyNonce = trial.RandomSeed()
	}
	pairs := scenarios.Showcase()
	if len(opts.Only) > 0 {
		pairs = opts.Only
	}
	queues := scenarios.QueuePairs(opts.Lab.Consumer) // published to the broker, read on the lab
	// With several instances (in-process-lock) a run spreads its attempts
	// over all of them, as a balancer would.
	var targets []string
	if len(rl.URLs) > 1 {
		targets = rl.URLs
	}
	var rows []reports.DemoRow
	code := ExitOK
	var errs []error
	for _, run := range scenarios.ShowcaseRuns(slices.Concat(pairs, queues)) {
		sc, err := scenarios.Builtin(run.Name)
		if err != nil {
			return withCode(ExitRuntime, err)
		}
		if err := applyOverrides(sc, opts.Ops, 0, 0, 0, false); err != nil {
			return err
		}
		prog := live.New(streams.Err, live.ModeOf(streams.ErrTerminal, opts.Quiet), run.Name)
		var rerun string
		if opts.rerun != nil {
			rerun = opts.rerun(opts.Seed, opts.KeyNonce)
		}
		o := trial.Options{Target: rl.URL, Targets: targets, Seed: opts.Seed, KeyNonce: opts.KeyNonce, Getenv: opts.Getenv, Secrets: opts.Lab.Streams.Secrets, Observer: prog}
		if sc.IsQueue() {
			o.Target, o.Targets, o.Service = opts.Lab.Consumer, nil, rl.URL
		}
		ex, err := execute(ctx, sc, execOptions{Out: filepath.Join(opts.Out, run.Name), Base: opts.Out, Rerun: rerun, Options: o})
		prog.Close()
		if err != nil {
			return err
		}
		rows = append(rows, reports.DemoRow{Pair: run.Pair, Variant: run.Variant, Summary: ex.Summary,
			Met: ex.Code == ExitOK, Inconclusive: ex.Code == ExitInconclusive, ChargeCents: sc.ChargeCents()})
		code = worst(code, ex.Code)
		if ex.Err != nil {
			errs = append(errs, ex.Err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	var costs []reports.DemoCost
	if ctx.Err() == nil {
		fmt.Fprintln(streams.Err, "measuring what the protection costs (A/B, protected against naive, no faults)")
		costs = abtest.CostsOn(ctx, pairs, demoAB, rl.URL, targets, opts.Getenv, opts.Seed)
	}
	demo := reports.Demo{Rows: rows, Costs: costs, Rate: demoAB.Rate, Seed: opts.Seed, KeyNonce: opts.KeyNonce, Out: opts.Out}
	if err := demo.WriteText(streams.Out); err != nil {
		code, errs = worst(code, ExitRuntime), append(errs, err)
	}
	fmt.Fprintf(streams.Err, "reports written under %s\n", opts.Out)
	sums := make([]*reports.Summary, len(rows))
	for i, r := range rows {
		sums[i] = r.Summary
	}
	if err := opts.Reports.write(sums); err != nil {
		code, errs = worst(code, ExitRuntime), append(errs, err)
	}
	return finish(code, errs)
}

// demoAB is the demo's A/B: short, so its intervals are wide, and it says
// so ("within noise") rather than print noise as a cost.
var demoAB = abtest.Options{Rate: 100, Duration: time.Second, Warmup: 200 * time.Millisecond, Block: 100 * time.Millisecond}
