package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/history"
	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
)

// The phases of a sharded run (docs/distributed.md): prepare writes the
// run's manifest into --out, each load process writes its shard's
// history there, judge merges them, reads the state and reports.
const (
	phasePrepare = "prepare"
	phaseLoad    = "load"
	phaseJudge   = "judge"
)

// defaultStartIn is how long after prepare the shards start by default:
// time for the load processes to be scheduled.
const defaultStartIn = 10 * time.Second

// defaultShardWait is how long judge waits for the shards by default.
const defaultShardWait = 10 * time.Minute

// phaseFlags are run's flags for the phases of a sharded run.
type phaseFlags struct {
	Phase   string
	Shards  int
	Shard   string
	StartIn time.Duration
	Wait    time.Duration
}

func (p *phaseFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&p.Phase, "phase", "", "make one phase of a run shared by several processes: prepare (needs --shards), load (needs --shard) or judge; each needs --out, the run's directory (see docs/distributed.md)")
	fl.IntVar(&p.Shards, "shards", 0, "with --phase prepare: how many load processes will share the run")
	fl.StringVar(&p.Shard, "shard", "", "with --phase load: which shard this process makes, i/N (0 <= i < N), or auto/N to take i from $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)")
	fl.DurationVar(&p.StartIn, "start-in", defaultStartIn, "with --phase prepare: when every shard starts its load, from the end of prepare")
	fl.DurationVar(&p.Wait, "wait", defaultShardWait, "with --phase load: how long to wait for the run's manifest (prepare may still be running); with --phase judge: for the manifest and the shards' histories, a shard still missing then leaving the run inconclusive")
}

// check validates the phase flags with the run's arguments.
func (p *phaseFlags) check(c *cobra.Command, args []string, out string) error {
	set := func(name string) bool { return c.Flags().Changed(name) }
	if p.Phase == "" {
		for _, name := range []string{"shards", "shard", "start-in", "wait"} {
			if set(name) {
				return withHint(ExitUsage, fmt.Errorf("--%s belongs to a sharded run", name), "give --phase prepare, load or judge (docs/distributed.md)")
			}
		}
		return nil
	}
	only := map[string][]string{phasePrepare: {"shards", "start-in"}, phaseLoad: {"shard", "wait"}, phaseJudge: {"wait"}}
	allowed, ok := only[p.Phase]
	if !ok {
		return usageError("--phase %q: want prepare, load or judge", p.Phase)
	}
	for _, name := range []string{"shards", "shard", "start-in", "wait"} {
		if set(name) && !contains(allowed, name) {
			return usageError("--%s does not apply to --phase %s", name, p.Phase)
		}
	}
	fixed := []string{"ops", "duration", "concurrency", "rate", "seed", "key-nonce", "request-timeout", "fail-on", "redact-path"}
	reportsOnly := []string{"report", "format", "junit-inconclusive"}
	for _, name := range fixed {
		if set(name) && p.Phase != phasePrepare {
			return withHint(ExitUsage, fmt.Errorf("--%s does not apply to --phase %s: the run's manifest fixes it", name, p.Phase),
				"give it to --phase prepare")
		}
	}
	for _, name := range reportsOnly {
		if set(name) && p.Phase != phaseJudge {
			return withHint(ExitUsage, fmt.Errorf("--%s does not apply to --phase %s, which writes no report", name, p.Phase),
				"give it to --phase judge")
		}
	}
	if out == "" {
		return withHint(ExitUsage, fmt.Errorf("--phase %s needs --out, the run's directory", p.Phase), "every phase of a run reads and writes the same directory, a shared volume when the phases run on several machines")
	}
	switch p.Phase {
	case phasePrepare:
		if len(args) != 1 {
			return usageError("--phase prepare takes one scenario (file or built-in name), got %d", len(args))
		}
		if p.Shards < 1 {
			return withHint(ExitUsage, errors.New("--phase prepare needs --shards N (N >= 1)"), "N is how many load processes will run, each with --phase load --shard i/N")
		}
		if p.StartIn < 0 {
			return usageError("--start-in must not be negative, got %s", p.StartIn)
		}
	case phaseLoad, phaseJudge:
		if len(args) > 0 {
			return withHint(ExitUsage, fmt.Errorf("--phase %s takes no scenario: it reads the one in %s", p.Phase, filepath.Join(out, trial.ManifestFile)),
				fmt.Sprintf("drop %q", strings.Join(args, " ")))
		}
		if p.Phase == phaseLoad {
			if p.Shard == "" {
				return usageError("--phase load needs --shard i/N (or auto/N in a Kubernetes Indexed Job)")
			}
			if _, err := parseShardFlag(p.Shard, nil); err != nil {
				return withCode(ExitUsage, err)
			}
		}
		if p.Wait < 0 {
			return usageError("--wait must not be negative, got %s", p.Wait)
		}
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// parseShardFlag parses --shard: i/N, or auto/N with i from
// $JOB_COMPLETION_INDEX. With getenv nil, auto/N is only checked for form.
func parseShardFlag(s string, getenv func(string) string) (history.Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	if ok && i == "auto" {
		if _, err := strconv.Atoi(n); err != nil {
			return history.Shard{}, fmt.Errorf("--shard %q: want i/N or auto/N, e.g. 0/4", s)
		}
		if getenv == nil {
			return history.ParseShard("0/" + n)
		}
		idx := getenv("JOB_COMPLETION_INDEX")
		if idx == "" {
			return history.Shard{}, fmt.Errorf("--shard %s: JOB_COMPLETION_INDEX is not set (it is in a Kubernetes Indexed Job); give the index, --shard i/%s", s, n)
		}
		sh, err := history.ParseShard(idx + "/" + n)
		if err != nil {
			return history.Shard{}, fmt.Errorf("--shard %s with JOB_COMPLETION_INDEX=%s: %w", s, idx, err)
		}
		return sh, nil
	}
	sh, err := history.ParseShard(s)
	if err != nil {
		return history.Shard{}, fmt.Errorf("--shard: %w", err)
	}
	return sh, nil
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
	spec, err := scenarioText(sc, arg)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if ds := sc.LiteralSecrets(len(runTargets(opts)) > 0); len(ds) > 0 {
		return withHint(ExitUsage, fmt.Errorf("--phase prepare copies the scenario into %s, where every phase reads it: %w", trial.ManifestFile, ds),
			"a sharded run keeps no secret on disk: read each one from the environment, which every phase is given")
	}
	ov := trial.Overrides{Ops: opts.Ops, Duration: opts.Duration, Concurrency: opts.Concurrency, Rate: opts.Rate,
		RequestTimeout: opts.RequestTimeout, FailOn: opts.FailOn, RedactPath: opts.RedactPath}
	if err := applyManifestOverrides(sc, ov); err != nil {
		return err
	}
	if err := checkOut(opts.Out); err != nil {
		return err
	}
	if err := freshRunDir(opts.Out); err != nil {
		return err
	}
	if err := opts.useTransport(sc); err != nil {
		return err
	}
	defer opts.closeTransport()
	seed, nonce := opts.seedAndNonce()
	targets := runTargets(opts)
	prog := newProgressMode(opts.Streams, progressModeOf(opts.Streams, opts.Quiet), sc.Name)
	defer prog.Close()
	t, err := trial.Prepare(ctx, sc, trial.Options{Targets: targets, RequestTimeout: opts.RequestTimeout, Seed: seed, KeyNonce: nonce,
		Transport: opts.Transport, Getenv: opts.Getenv, Observer: prog, FailOn: opts.FailOn, RedactPath: opts.RedactPath})
	if err != nil {
		return prepareError(fmt.Errorf("--phase prepare: %w (no manifest written)", err))
	}
	m, rd, err := t.Manifest()
	if err != nil {
		return withCode(ExitRuntime, err)
	}
	m.Spec, m.Overrides, m.Shards = spec, ov, opts.Phases.Shards
	for _, raw := range targets {
		shown := redaction.String(raw)
		m.Targets = append(m.Targets, shown)
		m.TargetDigests = append(m.TargetDigests, trial.TargetDigest(m.RunID, raw))
		m.TargetsRedacted = m.TargetsRedacted || shown != raw
	}
	m.Start = time.Now().Add(opts.Phases.StartIn).UTC().Truncate(time.Millisecond)
	// The readings first: a manifest is the sign that the run is ready.
	if err := writeFile(filepath.Join(opts.Out, trial.BeforeFile), func(f *os.File) error { return trial.WriteReadings(f, rd) }); err != nil {
		return withCode(ExitRuntime, err)
	}
	if err := writeFile(filepath.Join(opts.Out, trial.ManifestFile), func(f *os.File) error { return trial.WriteManifest(f, m) }); err != nil {
		return withCode(ExitRuntime, err)
	}
	prog.Close()
	e := opts.Streams.Err
	fmt.Fprintf(e, "prepared run %s of %s: %d shards, starting at %s (in %s)\n", m.RunID, sc.Name, m.Shards, m.Start.Format(time.RFC3339Nano), opts.Phases.StartIn)
	for name, msg := range rd.Errors {
		fmt.Fprintf(e, "warning: oracle %s could not read before the load (its checks will be inconclusive): %s\n", name, msg)
	}
	if c := sc.Load.Concurrency; sc.Load.Rate == 0 && c > 0 && c < m.Shards {
		fmt.Fprintf(e, "warning: concurrency %d over %d shards: each shard needs a worker, so %d ops run at once\n", c, m.Shards, m.Shards)
	}
	again := ""
	if m.TargetsRedacted {
		again = " --target URL"
	}
	fmt.Fprintf(e, "next, in each of %d processes:  idemcheck run --phase load --shard i/%d --out %s%s\n", m.Shards, m.Shards, opts.Out, again)
	fmt.Fprintf(e, "then:  idemcheck run --phase judge --out %s%s\n", opts.Out, again)
	return nil
}

// scenarioText is the YAML sc was read from: the file arg, or the
// built-in's text.
func scenarioText(sc *scenarios.Scenario, arg string) (string, error) {
	if name, ok := strings.CutPrefix(sc.Source, "builtin:"); ok {
		b, err := scenarios.BuiltinYAML(name)
		return string(b), err
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// freshRunDir refuses a directory that already holds a run: its shards'
// files would be judged with the new one's.
func freshRunDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, trial.ManifestFile)); err == nil {
		return withHint(ExitUsage, fmt.Errorf("--out %s already holds a run (%s)", dir, trial.ManifestFile), "give each sharded run a directory of its own")
	}
	shards, _ := filepath.Glob(filepath.Join(dir, "shard-*-of-*.jsonl"))
	if len(shards) > 0 {
		return withHint(ExitUsage, fmt.Errorf("--out %s already holds shard histories (%s)", dir, filepath.Base(shards[0])), "give each sharded run a directory of its own")
	}
	return nil
}

// applyManifestOverrides applies a manifest's overrides to its scenario.
func applyManifestOverrides(sc *scenarios.Scenario, ov trial.Overrides) error {
	return applyOverrides(sc, ov.Ops, ov.Duration, ov.Concurrency, ov.Rate)
}

// manifestPoll is how often a phase looks for the run's manifest while
// it waits for prepare.
const manifestPoll = 250 * time.Millisecond

// readRun reads the manifest from the first of dirs that has one, and its
// scenario with the overrides applied. When none has one yet it waits up
// to wait (and until ctx ends) for prepare to write it: the phases of a
// run may all be started at once (kubectl apply).
func readRun(ctx context.Context, dirs []string, wait time.Duration, errw io.Writer) (*trial.Manifest, *scenarios.Scenario, error) {
	deadline := time.Now().Add(wait)
	told := false
	for {
		m, sc, err := readManifest(dirs)
		if err == nil || !errors.Is(err, errNoManifest) || !time.Now().Before(deadline) {
			return m, sc, err
		}
		if !told {
			fmt.Fprintf(errw, "waiting for %s in %s (up to %s)\n", trial.ManifestFile, strings.Join(dirs, ", "), wait)
			told = true
		}
		t := time.NewTimer(min(manifestPoll, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, withCode(ExitInterrupted, fmt.Errorf("waiting for %s: %w", trial.ManifestFile, ctx.Err()))
		case <-t.C:
		}
	}
}

// errNoManifest: no directory holds a manifest (yet).
var errNoManifest = errors.New("no manifest")

// noManifest is errNoManifest in dirs.
type noManifest struct{ dirs []string }

func (e *noManifest) Error() string {
	return fmt.Sprintf("no %s in %s", trial.ManifestFile, strings.Join(e.dirs, ", "))
}

func (e *noManifest) Unwrap() error { return errNoManifest }

// readManifest is readRun without the wait.
func readManifest(dirs []string) (*trial.Manifest, *scenarios.Scenario, error) {
	var m *trial.Manifest
	for _, dir := range dirs {
		path := filepath.Join(dir, trial.ManifestFile)
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, withCode(ExitUsage, err)
		}
		m, err = trial.ReadManifest(f)
		f.Close()
		if err != nil {
			return nil, nil, withHint(ExitUsage, fmt.Errorf("%s: %w", path, err), "prepare the run with 'idemcheck run FILE --phase prepare --shards N --out DIR'")
		}
		break
	}
	if m == nil {
		return nil, nil, withHint(ExitUsage, &noManifest{dirs},
			"prepare the run first: idemcheck run FILE --phase prepare --shards N --out DIR")
	}
	sc, err := scenarios.Parse(m.Source, []byte(m.Spec))
	if err != nil {
		return nil, nil, withCode(ExitUsage, fmt.Errorf("the manifest's scenario: %w", err))
	}
	if err := applyManifestOverrides(sc, m.Overrides); err != nil {
		return nil, nil, err
	}
	return m, sc, nil
}

// manifestTargets are the targets of the run m prepared: those given
// again on the command line (which must match m's), else m's own.
func manifestTargets(m *trial.Manifest, given []string) ([]string, error) {
	if len(given) == 0 {
		if m.TargetsRedacted {
			return nil, withHint(ExitUsage, errors.New("the run's target carries a secret, which the manifest does not keep"),
				fmt.Sprintf("give the targets again: --target %s (with its secret)", strings.Join(m.Targets, " --target ")))
		}
		return m.Targets, nil
	}
	if len(m.Targets) == 0 {
		return nil, withHint(ExitUsage, fmt.Errorf("--target %s: the run was prepared with the scenario's own target", redaction.String(given[0])),
			"drop --target (and IDEMCHECK_TARGET), or prepare the run with it")
	}
	if len(given) != len(m.Targets) {
		return nil, usageError("%d targets given, the run was prepared with %d (%s)", len(given), len(m.Targets), strings.Join(m.Targets, ", "))
	}
	for i, raw := range given {
		if redaction.String(raw) != m.Targets[i] || (i < len(m.TargetDigests) && trial.TargetDigest(m.RunID, raw) != m.TargetDigests[i]) {
			return nil, usageError("--target %s is not the run's target %s (its secret too must be the same)", redaction.String(raw), m.Targets[i])
		}
	}
	return given, nil
}

func runLoadShard(ctx context.Context, opts *RunOptions) error {
	m, sc, err := readRun(ctx, []string{opts.Out}, opts.Phases.Wait, opts.Streams.Err)
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
	path := filepath.Join(opts.Out, trial.ShardFile(shard))
	if _, err := os.Stat(path); err == nil {
		return withHint(ExitUsage, fmt.Errorf("shard %s of run %s already ran: %s exists", shard, m.RunID, path),
			"a shard runs once (a second run would resend its keys into the same verdict); prepare a new run to run again")
	}
	targets, err := manifestTargets(m, runTargets(opts))
	if err != nil {
		return err
	}
	// One process per shard: the claim is taken atomically, so two
	// processes given the same index cannot both send its ops.
	claim := filepath.Join(opts.Out, strings.TrimSuffix(trial.ShardFile(shard), ".jsonl")+".claim")
	cf, err := os.OpenFile(claim, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return withHint(ExitUsage, fmt.Errorf("shard %s of run %s is taken by another process (%s exists)", shard, m.RunID, claim),
			"give each load process its own index; a shard that stopped before its start frees its claim")
	}
	if err != nil {
		return withCode(ExitRuntime, fmt.Errorf("claiming shard %s: %w", shard, unwrapPath(err)))
	}
	fmt.Fprintf(cf, "%d\n", os.Getpid())
	cf.Close()
	if err := opts.useTransport(sc); err != nil {
		os.Remove(claim)
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
	prog := newProgressMode(opts.Streams, progressModeOf(opts.Streams, opts.Quiet), fmt.Sprintf("%s %s", sc.Name, shard))
	h, loadErr := trial.LoadShard(ctx, sc, m, shard, trial.Options{Targets: targets, RequestTimeout: m.Overrides.RequestTimeout,
		Transport: opts.Transport, Getenv: opts.Getenv, Observer: prog, FailOn: m.Overrides.FailOn, RedactPath: m.Overrides.RedactPath,
		SpillAfter: opts.SpillAfter})
	prog.Close()
	if h != nil {
		defer h.Spill.Remove()
	}
	if errors.Is(loadErr, history.ErrSpill) {
		// Ops were sent but their record is lost: no shard file (the
		// judge finds the shard missing: inconclusive), and the claim
		// stays, so that the shard is not sent twice.
		return withHint(ExitRuntime, fmt.Errorf("shard %s: %w: its history is lost", shard, loadErr),
			"the load writes its history to $TMPDIR past --spill-after attempts: point TMPDIR at a directory with room")
	}
	if h == nil {
		os.Remove(claim) // nothing was sent: the shard may run again
		return prepareError(loadErr)
	}
	if err := writeFile(path, func(f *os.File) error { return history.Encode(f, h) }); err != nil {
		return withCode(ExitRuntime, errors.Join(loadErr, err))
	}
	ops, atts := len(h.Ops), len(h.Attempts)
	if h.Spill != nil {
		ops, atts = h.Spill.Ops, h.Spill.Attempts
	}
	fmt.Fprintf(opts.Streams.Err, "shard %s: %d ops, %d attempts, written to %s\n", shard, ops, atts, path)
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
	m, sc, err := readRun(ctx, dirs, wait, opts.Streams.Err)
	if err != nil {
		return err
	}
	targets, err := manifestTargets(m, runTargets(opts))
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
	rd, err := readReadings(dirs, m)
	if err != nil {
		return err
	}
	t, err := trial.Resume(sc, m, rd, trial.Options{Targets: targets, RequestTimeout: m.Overrides.RequestTimeout,
		Transport: opts.Transport, Getenv: opts.Getenv, FailOn: m.Overrides.FailOn, RedactPath: m.Overrides.RedactPath})
	if err != nil {
		return prepareError(err)
	}
	// The wait runs from the load's planned end, not from now: a judge
	// started with the rest (kubectl apply) waits out the whole load.
	end := plannedEnd(m, sc)
	deadline := later(time.Now(), end).Add(wait)
	set, err := trial.CollectShards(ctx, m, dirs, deadline, 500*time.Millisecond, func(missing []int) {
		if opts.Quiet {
			return
		}
		fmt.Fprintf(opts.Streams.Err, "run %s: waiting for %d of %d shards' histories (%s), until %s\n", m.RunID, len(missing), m.Shards,
			intsString(missing), deadline.Format(time.RFC3339))
	})
	if err != nil {
		return withHint(ExitUsage, err, "judge one run per directory; a shard's history is written whole or not at all, so a cut file was damaged after")
	}
	if len(set.Missing) > 0 {
		fmt.Fprintf(opts.Streams.Err, "warning: run %s: %d of %d shards missing (%s): the verdict cannot be met\n", m.RunID, len(set.Missing), m.Shards, intsString(set.Missing))
	}
	if len(set.Files) == 0 {
		err := fmt.Errorf("no shard of run %s delivered its history (%d expected)", m.RunID, m.Shards)
		if ctx.Err() != nil {
			return withCode(ExitInterrupted, fmt.Errorf("%w: %w", err, ctx.Err()))
		}
		return withHint(ExitInconclusive, err, "start the load processes: idemcheck run --phase load --shard i/N --out DIR")
	}
	h, err := trial.Merge(set, m)
	switch {
	case errors.Is(err, trial.ErrShardFile):
		return withHint(ExitUsage, err, "judge one run per directory; a shard's history is written whole or not at all, so a broken file was damaged after")
	case err != nil:
		return withHint(ExitRuntime, err, "the judge merges the shards into a file in $TMPDIR: point TMPDIR at a directory with room")
	}
	defer h.Spill.Remove()
	prog := newProgressMode(opts.Streams, progressModeOf(opts.Streams, opts.Quiet), sc.Name)
	t.SetObserver(prog)
	t.Observe(ctx, h)
	prog.Close()
	j, err := trial.Judge(h)
	if err != nil {
		return withCode(ExitRuntime, err)
	}
	sum := summarize(j)
	code := resultCode(sum.Result)
	var errs []error
	if ctx.Err() != nil {
		code, errs = ExitInterrupted, append(errs, fmt.Errorf("%s: interrupted: %w", sc.Name, context.Canceled))
	}
	write, _ := opts.Reports.writer(opts.Format)
	if err := write(opts.Streams.Out, []*reports.Summary{sum}); err != nil {
		return withCode(ExitRuntime, fmt.Errorf("writing report: %w", err))
	}
	if err := opts.Reports.write([]*reports.Summary{sum}); err != nil {
		code, errs = worst(code, ExitRuntime), append(errs, err)
	}
	if out != "" {
		if err := writeRun(out, sum, h); err != nil {
			code, errs = worst(code, ExitRuntime), append(errs, err)
		} else {
			fmt.Fprintf(opts.Streams.Err, "report written to %s\n", out)
		}
	}
	return finish(code, errs)
}

// readReadings reads the oracles' readings before the load of run m
// from the first of dirs that has them.
func readReadings(dirs []string, m *trial.Manifest) (*trial.Readings, error) {
	for _, dir := range dirs {
		f, err := os.Open(filepath.Join(dir, trial.BeforeFile))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, withCode(ExitUsage, err)
		}
		rd, err := trial.ReadReadings(f, m)
		f.Close()
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("%s: %w", dir, err))
		}
		return rd, nil
	}
	return nil, withHint(ExitUsage, fmt.Errorf("no %s in %s: the oracles' readings before the load are lost", trial.BeforeFile, strings.Join(dirs, ", ")),
		"give report merge the directory prepare wrote, which holds it beside manifest.json")
}

// plannedEnd is when the load of run m should end: its start plus
// load.duration, or ops / rate in the open model; its start when the
// load is bound by ops in the closed model (no telling how long).
func plannedEnd(m *trial.Manifest, sc *scenarios.Scenario) time.Time {
	switch l := sc.Load; {
	case l.Duration > 0:
		return m.Start.Add(time.Duration(l.Duration))
	case l.Rate > 0 && l.Ops > 0:
		return m.Start.Add(time.Duration(float64(l.Ops) / float64(l.Rate) * float64(time.Second)))
	}
	return m.Start
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func intsString(l []int) string {
	s := make([]string, len(l))
	for i, v := range l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}
