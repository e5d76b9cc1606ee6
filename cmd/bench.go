package cmd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/abtest"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/storebench"
	"github.com/idemcheck/idemcheck/trial"
)

// NewCmdBench builds `idemcheck bench` and its subcommands.
func NewCmdBench(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure what idempotency costs: the layer's latency overhead (A/B) and the dedup store itself",
		Long: `Bench measures the cost of idempotency.

  overhead  the same operation with and without its idempotency layer, A/B
            on any API, with a confidence interval per percentile
  store     the dedup store's own primitives (Redis, Postgres), bytes per
            record, and the capacity a retention window needs`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error { return c.Help() },
	}
	c.AddCommand(NewCmdBenchOverhead(f, nil), NewCmdBenchStore(f, nil))
	return c
}

// BenchOverheadOptions are the inputs of `idemcheck bench overhead`.
type BenchOverheadOptions struct {
	Streams Streams
	Getenv  func(string) string

	Method, URL string
	Request     requestFlags
	// Settings are the baseline, the rate and times, the budget, the
	// format and the caps, checked by abtest.
	abtest.Settings
	Out    string
	DryRun bool
	Seed   uint64
	// Client is how it connects: TLS trust, client certificates, a trace.
	Client clientFlags

	// Transport sends the requests; nil means one built from Client
	// (tests swap it).
	Transport http.RoundTripper
}

// NewCmdBenchOverhead builds `idemcheck bench overhead`.
func NewCmdBenchOverhead(f *Factory, runF func(context.Context, *BenchOverheadOptions) error) *cobra.Command {
	opts := &BenchOverheadOptions{Streams: f.Streams, Getenv: f.Getenv}
	c := &cobra.Command{
		Use:   "overhead METHOD URL",
		Short: "A/B the latency of an operation with and without its idempotency layer",
		Long: `Overhead measures what an API's idempotency layer costs, as a paired A/B of
the same operation. Arm A is the request as given (a fresh UUID v4 key per op
in the Idempotency-Key header, or --key-header/--key-field). Arm B is the
baseline: --baseline-path PATH (an endpoint that bypasses the layer) or
--baseline-no-key (the same request without the key).

Both arms run in the open model at the same --rate (ops per second, below
saturation), latency measured from each op's intended start, in short
blocks interleaved A B B A so that drift hits both arms alike. A warm-up is
discarded; --duration is each arm's measured time. Per arm: p50, p90, p99,
p99.9 and throughput, and an HdrHistogram percentile file (a.hgrm, b.hgrm in
--out) for the standard plotter. The difference A − B per percentile comes
with a 95% confidence interval from a bootstrap over blocks.

--rate auto first finds the highest rate each arm sustains (short probes,
doubling, then bisecting) and benches at half of the lower one.

--max-overhead p50=30%,p99=5ms is the budget: exit 1 when a limit is
exceeded with 95% confidence, 3 when an interval straddles its limit (run
longer) or an arm could not hold the rate (the reason is printed), 0 within
budget or with no budget. Before sending, it states how many requests it will
send; --max-requests refuses a run that would send more, and --dry-run stops
there.`,
		Example: `  # the lab's protected charge against its naive endpoint, at 200 ops/s
  idemcheck bench overhead POST http://127.0.0.1:8080/charges \
      -d '{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}' \
      -H 'Authorization: Bearer alice' --baseline-path /naive/charges --rate 200

  # your API, the same request without its key, with a budget
  idemcheck bench overhead POST https://staging.example.com/v1/orders \
      -d '{"sku":"A1"}' -H 'Authorization: Bearer {{env "API_TOKEN"}}' \
      --baseline-no-key --rate auto --max-overhead p50=30%,p99=5ms --format json`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Method, opts.URL = args[0], args[1]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return benchOverheadRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	opts.Request.register(fl)
	opts.Client.register(fl)
	fl.StringVar(&opts.BaselinePath, "baseline-path", "", "arm B: the same request to this path, an endpoint without the idempotency layer")
	fl.BoolVar(&opts.BaselineNoKey, "baseline-no-key", false, "arm B: the same request without its key")
	fl.StringVar(&opts.Rate, "rate", "100", "ops per second per arm, below saturation, or auto (half the highest rate both arms sustain)")
	fl.DurationVar(&opts.Duration, "duration", 10*time.Second, "measured time per arm, warm-up left out")
	fl.DurationVar(&opts.Warmup, "warmup", 2*time.Second, "time per arm sent first and discarded")
	fl.DurationVar(&opts.Block, "block", abtest.DefaultBlock, "length of one arm's block; arms alternate A B B A by block")
	fl.IntVar(&opts.MaxInFlight, "max-in-flight", abtest.DefaultMaxInFlight, "most ops in flight per arm")
	fl.DurationVar(&opts.Timeout, "request-timeout", 10*time.Second, "bound on each request")
	fl.StringVar(&opts.MaxOverhead, "max-overhead", "", "the budget, per percentile in % of B or as a duration: p50=30%,p99=5ms")
	fl.StringVar(&opts.Format, "format", "text", "output: text, json or markdown")
	fl.StringVarP(&opts.Out, "out", "o", "", "write the arms' latency histograms as .hgrm files (a.hgrm, b.hgrm) into this directory (default: none written)")
	fl.IntVar(&opts.MaxRequests, "max-requests", abtest.DefaultMaxRequests, "refuse to run when it would send more requests than this")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "state what would be sent, send nothing")
	fl.Uint64Var(&opts.Seed, "seed", 1, "seed for the bootstrap (keys are new on every run)")
	fl.IntVar(&opts.Resamples, "resamples", abtest.DefaultResamples, "bootstrap resamples for the confidence intervals")
	return c
}

// benchArms builds arm A (the operation) and arm B (its baseline).
func benchArms(opts *BenchOverheadOptions) (a, b *scenarios.Scenario, err error) {
	op, err := opts.Request.resolve(opts.Method, opts.URL)
	if err != nil {
		return nil, nil, err
	}
	as, bs := abtest.ArmSpecs(op.Spec(""), opts.BaselinePath, opts.BaselineNoKey)
	if a, err = fromRequest(as); err != nil {
		return nil, nil, err
	}
	if b, err = fromRequest(bs); err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

func benchOverheadRun(ctx context.Context, opts *BenchOverheadOptions) error {
	streams := opts.Streams
	if err := opts.CheckBaseline(); err != nil {
		return withCode(ExitUsage, err)
	}
	a, b, err := benchArms(opts)
	if err != nil {
		return err
	}
	budget, rate, auto, err := opts.Parse()
	if err != nil {
		return withCode(ExitUsage, err)
	}
	targets, err := a.TargetURLs(nil)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	tr := opts.Transport
	if tr == nil {
		idle, rt, err := opts.Client.transport(streams.Err, opts.MaxInFlight)
		if err != nil {
			return err
		}
		defer idle.CloseIdleConnections()
		tr = rt
	}
	ab := abtest.Options{
		Rate: rate, Duration: opts.Duration, Warmup: opts.Warmup, Block: opts.Block, MaxInFlight: opts.MaxInFlight,
		// Keys are new on every run, whatever the seed: a stateful API
		// would rightly replay the keys of an earlier run.
		Rand: rand.New(rand.NewPCG(trial.RandomSeed(), trial.RandomSeed())),
	}
	ro := abtest.RateOptions{MaxInFlight: opts.MaxInFlight, Rand: rand.New(rand.NewPCG(trial.RandomSeed(), trial.RandomSeed()))}

	// What it will send, before sending it.
	plan := abtest.NewPreview(a, b, opts.BaselineNoKey, targets[0], ab, ro, auto)
	fmt.Fprintln(streams.Err, plan.Line)
	if err := plan.Within(opts.MaxRequests); err != nil {
		return withCode(ExitUsage, err)
	}
	if opts.DryRun {
		fmt.Fprintln(streams.Err, "dry run: nothing sent")
		return nil
	}
	if opts.Out != "" {
		// Checked before any request: the bench's requests are real
		// (charges), and an --out found unwritable after them wastes them.
		if err := checkOut(opts.Out); err != nil {
			return err
		}
	}

	rOpts := runner.Options{Targets: targets, Transport: tr, Env: opts.Getenv, Secrets: opts.Streams.Secrets, RequestTimeout: opts.Timeout, Seed: opts.Seed}
	ab.Runner, ro.Runner = rOpts, rOpts
	var maxA, maxB float64
	if auto {
		ro.OnProbe = func(r float64, held bool) {
			fmt.Fprintf(streams.Err, "  probe %.0f ops/s: %s\n", r, map[bool]string{true: "held", false: "not held"}[held])
		}
		maxA, maxB, ab.Rate, err = abtest.FindRates(ctx, a, b, ro, func(arm string) {
			fmt.Fprintf(streams.Err, "finding the highest rate arm %s sustains\n", arm)
		})
		if err != nil {
			return benchErr(ctx, err)
		}
		fmt.Fprintln(streams.Err, abtest.RatesFound(maxA, maxB, ab.Rate))
		if ab.Rate < 1 {
			return withCode(ExitInconclusive, errors.New("an arm sustains less than 2 ops/s: nothing to bench at"))
		}
	}
	res, err := abtest.Run(ctx, a, b, ab)
	if err != nil {
		return benchErr(ctx, err)
	}
	sum := abtest.Report(plan.What, res, abtest.Compare(res, opts.Resamples, rand.New(rand.NewPCG(opts.Seed, 0xb007))), budget)
	sum.MaxA, sum.MaxB = maxA, maxB
	// The summary first: files that fail to write must not hide it.
	if err := sum.Write(streams.Out, opts.Format); err != nil {
		return withCode(ExitRuntime, err)
	}
	if opts.Out != "" {
		if err := res.WriteHGRMFiles(opts.Out); err != nil {
			return withCode(ExitRuntime, err)
		}
		fmt.Fprintf(streams.Err, "percentile files: %s, %s\n", filepath.Join(opts.Out, "a.hgrm"), filepath.Join(opts.Out, "b.hgrm"))
	}
	switch abtest.Verdict(sum.Verdict) {
	case abtest.Exceeded:
		return silentExit{ExitFailed}
	case abtest.Unclear:
		if sum.Reason != "" {
			fmt.Fprintf(streams.Err, "inconclusive: %s\n", sum.Reason)
		}
		return silentExit{ExitInconclusive}
	}
	return nil
}

// benchErr maps a run's error to its exit code.
func benchErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return withCode(ExitInterrupted, err)
	}
	if errors.Is(err, runner.ErrTarget) {
		return withHint(ExitRuntime, err, "is the API up at that URL?")
	}
	return withCode(ExitRuntime, err)
}

// BenchStoreOptions are the inputs of `idemcheck bench store`.
type BenchStoreOptions struct {
	Streams Streams
	storebench.Settings
}

// NewCmdBenchStore builds `idemcheck bench store`.
func NewCmdBenchStore(f *Factory, runF func(context.Context, *BenchStoreOptions) error) *cobra.Command {
	opts := &BenchStoreOptions{Streams: f.Streams}
	c := &cobra.Command{
		Use:   "store",
		Short: "Measure the dedup store itself: each primitive's latency and throughput, bytes per record, capacity",
		Long: `Store measures an idempotency store without an API in front of it.

Redis (--redis): SET NX PX (the in-flight lock), HGETALL of a stored
response (the replay read), lock_or_cached (the lab's script: the cached
response or the lock, in one roundtrip), MULTI/EXEC (store the response) and
complete (the lab's script: store the response and release the lock).
Postgres (--postgres): INSERT … ON CONFLICT DO NOTHING RETURNING (take a
key) and the key + ledger transaction. Each runs for --duration at each
--concurrency (a call in flight at its end is let finish and counted); the
figures are p50, p99 and throughput. The p50 at
concurrency 1 is one roundtrip's cost.

Bytes per record: MEMORY USAGE of records in the lab's format with a
--value-size response body (Postgres: the key table's size per row, indexes
included). The capacity plan: --rps × --ttl records, their memory, and the
store commands per second at --roundtrips per protected request.

It writes only under a fresh namespace (a Redis key prefix
idemcheck_bench_…:, a Postgres schema of that name), with TTLs, and deletes
it before it ends.`,
		Example: `  idemcheck bench store --redis redis://127.0.0.1:6379/0
  idemcheck bench store --redis redis://127.0.0.1:6379/0 \
      --postgres 'postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable' \
      --concurrency 1,8,64 --duration 5s --value-size 512 --rps 10000 --ttl 24h --format json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.Check(); err != nil {
				return withCode(ExitUsage, err)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return benchStoreRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Redis, "redis", "", "the Redis to measure: redis://host:port/db")
	fl.StringVar(&opts.Postgres, "postgres", "", "the Postgres to measure: postgres://user@host:port/db")
	fl.IntSliceVar(&opts.Concurrency, "concurrency", []int{1, 8, 64}, "concurrent clients, a sweep: 1,8,64")
	fl.DurationVar(&opts.Duration, "duration", 5*time.Second, "time per primitive per concurrency")
	fl.IntVar(&opts.ValueSize, "value-size", 256, "bytes of the stored response body")
	fl.IntVar(&opts.RPS, "rps", 10000, "capacity plan: protected requests per second")
	fl.DurationVar(&opts.TTL, "ttl", 24*time.Hour, "capacity plan: how long a key is kept")
	fl.IntVar(&opts.Roundtrips, "roundtrips", 2, "capacity plan: store roundtrips per protected request (the lab's: 2, lock-or-cached and complete)")
	fl.StringVar(&opts.Format, "format", "text", "output: text or json")
	return c
}

func benchStoreRun(ctx context.Context, opts *BenchStoreOptions) error {
	streams := opts.Streams
	so := storebench.Options{
		Concurrency: opts.Concurrency, Duration: opts.Duration, ValueSize: opts.ValueSize,
		OnStep: func(store, primitive string, c int) {
			fmt.Fprintf(streams.Err, "  %s %s × %d\n", store, primitive, c)
		},
	}
	steps := opts.Steps()
	fmt.Fprintf(streams.Err, "bench store: %d steps of %v (about %v)\n", steps, opts.Duration, time.Duration(steps)*opts.Duration)
	out := reports.Store{RedisURL: redact(opts.Redis), PostgresURL: redact(opts.Postgres), ValueSize: opts.ValueSize, TTL: opts.TTL}
	var per int64
	if opts.Redis != "" {
		r, err := storebench.Redis(ctx, opts.Redis, so)
		if err != nil {
			return storeErr(ctx, out.RedisURL, err)
		}
		out.Redis = r.Report()
		per = r.BytesPerRecord
	}
	if opts.Postgres != "" {
		p, err := storebench.Postgres(ctx, opts.Postgres, so)
		if err != nil {
			return storeErr(ctx, out.PostgresURL, err)
		}
		out.Postgres = p.Report()
		if out.Redis == nil {
			per = p.BytesPerRecord
		}
	}
	out.Capacity = reports.StoreCapacity(storebench.Plan(opts.RPS, opts.TTL, per, opts.Roundtrips))
	write := out.WriteText
	if opts.Format == "json" {
		write = out.WriteJSON
	}
	if err := write(streams.Out); err != nil {
		return withCode(ExitRuntime, err)
	}
	return nil
}

func storeErr(ctx context.Context, where string, err error) error {
	switch {
	case ctx.Err() != nil:
		return withCode(ExitInterrupted, err)
	case errors.Is(err, storebench.ErrURL):
		return withHint(ExitUsage, err, "e.g. redis://:password@host:6379/0 or postgres://user:password@host:5432/db?sslmode=disable; nothing was sent")
	}
	return withHint(ExitRuntime, err, "is the store up at "+where+"?")
}
