package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/termsafe"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/reports/live"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
)

// runKey is the run key from the environment (trial.RunKeyFrom).
func (opts *RunOptions) runKey() ([]byte, error) {
	key, err := trial.RunKeyFrom(opts.Getenv)
	if err != nil {
		return nil, withHint(ExitUsage, err, trial.RunKeyHint)
	}
	return key, nil
}

// runPhase runs one phase of a sharded run.
func runPhase(ctx context.Context, opts *RunOptions) error {
	switch opts.Phases.Phase {
	case phasePrepare:
		return runPrepare(ctx, opts)
	case phaseLoad:
		return runLoadShard(ctx, opts)
	}
	return runJudge(ctx, opts, []string{opts.Out}, opts.Out, opts.Phases.Wait)
}

func runPrepare(ctx context.Context, opts *RunOptions) error {
	arg := opts.Scenarios[0]
	sc, err := scenarios.ResolveContext(ctx, arg)
	if ctx.Err() != nil {
		return withCode(ExitInterrupted, fmt.Errorf("reading %s: %w", arg, ctx.Err()))
	}
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if err := refuseNemesis(phasePrepare, sc); err != nil {
		return err
	}
	spec, err := trial.ScenarioText(sc, arg)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	// The scenario's text is copied whole, its target too even when
	// --target replaces it.
	if ds := sc.LiteralSecrets(false); len(ds) > 0 {
		return withHint(ExitUsage, fmt.Errorf("--phase prepare copies the scenario into %s, where every phase reads it: %w", trial.ManifestFile, ds),
			"a sharded run keeps no secret on disk: read each one from the environment ({{env \"NAME\"}}), which every phase is given")
	}
	if err := applyOverrides(sc, opts.Ops, opts.Duration, opts.Concurrency, opts.Rate, opts.AbortOnFail); err != nil {
		return err
	}
	if err := trial.CheckShards(sc, opts.Phases.Shards); err != nil {
		return withCode(ExitUsage, err)
	}
	if err := checkOut(opts.Out); err != nil {
		return err
	}
	if err := trial.CheckFresh(opts.Out); err != nil {
		return phaseError(fmt.Errorf("--out %w", err))
	}
	key, err := opts.runKey()
	if err != nil {
		return err
	}
	if err := opts.useTransport(sc); err != nil {
		return err
	}
	defer opts.closeTransport()
	seed, nonce := opts.seedAndNonce()
	prog := live.New(opts.Streams.Err, live.ModeOf(opts.Streams.ErrTerminal, opts.Quiet), sc.Name)
	defer prog.Close()
	t, err := trial.Prepare(ctx, sc, trial.Options{Targets: runTargets(opts), RequestTimeout: opts.RequestTimeout, Seed: seed, KeyNonce: nonce,
		Transport: opts.Transport, Getenv: trial.PhaseEnv(opts.Getenv), Secrets: opts.Streams.Secrets, Observer: prog, FailOn: opts.FailOn, RedactPath: opts.RedactPath})
	if err != nil {
		return prepareError(fmt.Errorf("--phase prepare: %w (no manifest written)", err))
	}
	m, rd, err := t.Publish(opts.Out, trial.Plan{Spec: spec, Shards: opts.Phases.Shards, StartIn: opts.Phases.StartIn, RunKey: key,
		Overrides: trial.Overrides{Ops: opts.Ops, Duration: opts.Duration, Concurrency: opts.Concurrency, Rate: opts.Rate,
			RequestTimeout: opts.RequestTimeout, FailOn: opts.FailOn, RedactPath: opts.RedactPath, AbortOnFail: opts.AbortOnFail}})
	if err != nil {
		return withCode(ExitRuntime, err)
	}
	prog.Close()
	e := opts.Streams.Err
	termsafe.Fprintf(e, "prepared run %s of %s: %d shards, starting at %s (in %s)\n", m.RunID, sc.Name, m.Shards, m.Start.Format(time.RFC3339Nano), opts.Phases.StartIn)
	for name, msg := range rd.Errors {
		termsafe.Fprintf(e, "warning: oracle %s could not read before the load (its checks will be inconclusive): %s\n", name, msg)
	}
	if key == nil {
		fmt.Fprintf(e, "warning: %s is not set: the run's %s and %s are not authenticated, and anyone who can write %s can send every load process's requests, with their secrets, where they choose (docs/distributed.md)\n",
			trial.RunKeyEnv, trial.ManifestFile, trial.BeforeFile, opts.Out)
	}
	if c := sc.Load.Concurrency; sc.Load.Rate == 0 && c > 0 && c < m.Shards {
		fmt.Fprintf(e, "warning: concurrency %d over %d shards: each shard needs a worker, so %d ops run at once\n", c, m.Shards, m.Shards)
	}
	again := ""
	if m.TargetsRedacted {
		again = " --target URL"
	}
	if key != nil {
		fmt.Fprintf(e, "run authenticated with %s (%s): give every phase the same %s\n", trial.RunKeyEnv, trial.MACFile, trial.RunKeyEnv)
	}
	fmt.Fprintf(e, "next, in each of %d processes:  idemcheck run --phase load --shard i/%d --out %s%s\n", m.Shards, m.Shards, opts.Out, again)
	fmt.Fprintf(e, "then:  idemcheck run --phase judge --out %s%s\n", opts.Out, again)
	return nil
}

// readRun is trial.ReadRun, saying on stderr when it waits.
func readRun(ctx context.Context, opts *RunOptions, dirs []string, wait time.Duration) (*trial.Manifest, *scenarios.Scenario, []string, error) {
	key, err := opts.runKey()
	if err != nil {
		return nil, nil, nil, err
	}
	m, sc, err := trial.ReadRun(ctx, dirs, key, wait, func() {
		fmt.Fprintf(opts.Streams.Err, "waiting for %s in %s (up to %s)\n", trial.ManifestFile, strings.Join(dirs, ", "), wait)
	})
	if err != nil {
		return nil, nil, nil, phaseError(err)
	}
	if err := refuseNemesis(opts.Phases.Phase, sc); err != nil {
		return nil, nil, nil, err
	}
	targets, err := m.RunTargets(runTargets(opts))
	if errors.Is(err, trial.ErrTargetSecret) {
		return nil, nil, nil, withHint(ExitUsage, err, fmt.Sprintf("give the targets again: --target %s (with its secret)", strings.Join(m.Targets, " --target ")))
	}
	return m, sc, targets, phaseError(err)
}

// phaseError gives an error of a sharded run's files its exit code (its
// hint comes with it, trial's); any other is the user's (exit 2).
func phaseError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return withCode(ExitInterrupted, err)
	}
	return withCode(ExitUsage, err)
}

func runLoadShard(ctx context.Context, opts *RunOptions) error {
	m, sc, targets, err := readRun(ctx, opts, []string{opts.Out}, opts.Phases.Wait)
	if err != nil {
		return err
	}
	shard, err := parseShardFlag(opts.Phases.Shard, opts.Getenv)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if shard.Count != m.Shards {
		return usageError("--shard %s: the run in %s was prepared for %d shards", shard, opts.Out, m.Shards)
	}
	claim, err := trial.ClaimShard(opts.Out, m, shard)
	var taken *trial.ClaimError
	switch {
	case errors.As(err, &taken):
		return phaseError(err)
	case err != nil:
		return withCode(ExitRuntime, err)
	}
	if err := opts.useTransport(sc); err != nil {
		claim.Release()
		return err
	}
	defer opts.closeTransport()
	switch wait := time.Until(m.Start); {
	case wait > 0 && !opts.Quiet:
		fmt.Fprintf(opts.Streams.Err, "shard %s of run %s: starting at %s (in %s)\n", shard, m.RunID, m.Start.Format(time.RFC3339Nano), wait.Round(time.Millisecond))
	case wait < -time.Second:
		fmt.Fprintf(opts.Streams.Err, "warning: shard %s of run %s starts %s after the run's start time: its ops run that much later than the other shards' (prepare with a longer --start-in)\n",
			shard, m.RunID, (-wait).Round(time.Millisecond))
	}
	prog := live.New(opts.Streams.Err, live.ModeOf(opts.Streams.ErrTerminal, opts.Quiet), fmt.Sprintf("%s %s", sc.Name, shard))
	h, loadErr := trial.LoadShard(ctx, sc, m, claim, trial.Options{Targets: targets, RequestTimeout: m.Overrides.RequestTimeout,
		Transport: opts.Transport, Getenv: trial.PhaseEnv(opts.Getenv), Secrets: opts.Streams.Secrets, Observer: prog, FailOn: m.Overrides.FailOn, RedactPath: m.Overrides.RedactPath,
		SpillAfter: opts.SpillAfter, SpillDir: opts.tmpDir(opts.Out)})
	prog.Close()
	if h == nil { // nothing was sent: the claim is released
		return prepareError(loadErr)
	}
	defer h.Spill.Remove()
	if errors.Is(loadErr, history.ErrSpill) {
		// Ops were sent but their record is lost: no shard file (the
		// judge finds the shard missing: inconclusive); the claim stays.
		return withHint(ExitRuntime, fmt.Errorf("shard %s: %w: no shard file written", shard, loadErr),
			"past --spill-after attempts the load writes its history to --tmp-dir (default: --out): give it a directory with room")
	}
	if err := claim.Write(h); err != nil {
		return withCode(ExitRuntime, errors.Join(loadErr, err))
	}
	ops, atts := len(h.Ops), len(h.Attempts)
	if h.Spill != nil {
		ops, atts = h.Spill.Ops, h.Spill.Attempts
	}
	fmt.Fprintf(opts.Streams.Err, "shard %s: %d ops, %d attempts, written to %s\n", shard, ops, atts, claim.Path)
	switch {
	case loadErr == nil:
		return nil
	case errors.Is(loadErr, context.Canceled):
		return withCode(ExitInterrupted, loadErr)
	case errors.Is(loadErr, trial.ErrConfig):
		return withCode(ExitUsage, loadErr)
	}
	return withCode(ExitRuntime, loadErr)
}

// runJudge merges the shards of the run whose manifest and shard files are
// in dirs, reads the state after it, judges, and writes the run's files
// to out ("" writes none) and the reports.
func runJudge(ctx context.Context, opts *RunOptions, dirs []string, out string, wait time.Duration) error {
	m, sc, targets, err := readRun(ctx, opts, dirs, wait)
	if err != nil {
		return err
	}
	if out != "" {
		if err := checkOut(out); err != nil {
			return err
		}
	}
	if err := opts.useTransport(sc); err != nil {
		return err
	}
	defer opts.closeTransport()
	t, err := trial.Resume(sc, m, dirs, trial.Options{Targets: targets, RequestTimeout: m.Overrides.RequestTimeout,
		Transport: opts.Transport, Getenv: trial.PhaseEnv(opts.Getenv), Secrets: opts.Streams.Secrets, FailOn: m.Overrides.FailOn, RedactPath: m.Overrides.RedactPath,
		SpillDir: opts.tmpDir(out)})
	if err != nil {
		return phaseError(err)
	}
	deadline := m.ShardDeadline(sc, wait)
	set, err := trial.CollectShards(ctx, m, dirs, deadline, 500*time.Millisecond, func(missing []int) {
		if !opts.Quiet {
			fmt.Fprintf(opts.Streams.Err, "run %s: waiting for %d of %d shards' histories (%s), until %s\n", m.RunID, len(missing), m.Shards,
				strings.Trim(strings.Join(strings.Fields(fmt.Sprint(missing)), ", "), "[]"), deadline.Format(time.RFC3339))
		}
	})
	switch {
	case errors.Is(err, trial.ErrShardTwice):
		return withHint(ExitUsage, err, "give each shard's history once: remove the copy, or leave its directory out")
	case err != nil:
		return withHint(ExitUsage, err, "judge one run per directory; a shard's history is written whole or not at all, so a cut file was damaged after")
	}
	if len(set.Missing) > 0 {
		fmt.Fprintf(opts.Streams.Err, "warning: run %s: %d of %d shards missing (%s): the verdict cannot be met\n", m.RunID, len(set.Missing), m.Shards, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(set.Missing)), ", "), "[]"))
	}
	prog := live.New(opts.Streams.Err, live.ModeOf(opts.Streams.ErrTerminal, opts.Quiet), sc.Name)
	t.SetObserver(prog)
	j, err := t.JudgeShards(ctx, m, set)
	prog.Close()
	switch {
	case errors.Is(err, trial.ErrNoShards) && ctx.Err() != nil:
		return withCode(ExitInterrupted, fmt.Errorf("%w: %w", err, ctx.Err()))
	case errors.Is(err, trial.ErrNoShards):
		return withHint(ExitInconclusive, err, "start the load processes: idemcheck run --phase load --shard i/N --out DIR")
	case errors.Is(err, trial.ErrShardFile):
		return withHint(ExitUsage, err, "judge one run per directory; a shard's history is written whole or not at all, so a broken file was damaged after")
	case errors.Is(err, history.ErrSpill):
		return withHint(ExitRuntime, err, "the judge merges the shards into a file in --tmp-dir (default: --out): give it a directory with room")
	case err != nil:
		return withCode(ExitRuntime, err)
	}
	ex := conclude(ctx, sc.Name, j, execOptions{Out: out})
	code, errs := ex.Code, []error{}
	if ex.Err != nil {
		errs = append(errs, ex.Err)
	}
	write, _ := opts.Reports.writer(opts.Format)
	if err := write(opts.Streams.Out, []*reports.Summary{ex.Summary}); err != nil {
		return withCode(ExitRuntime, fmt.Errorf("writing report: %w", err))
	}
	if err := opts.Reports.write([]*reports.Summary{ex.Summary}); err != nil {
		code, errs = worst(code, ExitRuntime), append(errs, err)
	}
	if err := opts.writeHGRM([]*reports.Summary{ex.Summary}); err != nil {
		code, errs = worst(code, ExitRuntime), append(errs, err)
	}
	if ex.Written {
		fmt.Fprintf(opts.Streams.Err, "report written to %s\n", out)
	}
	return finish(code, errs)
}
