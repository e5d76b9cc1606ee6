package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/trial"
)

// CheckOptions are the inputs of `idemcheck check`.
type CheckOptions struct {
	Streams Streams
	Dir     string
	Format  string
	// Scenario, when set, re-judges against this scenario's expectation,
	// invariants and thresholds instead of those saved with the run.
	Scenario string
	// Reports are the --report files.
	Reports reportFlags
	// FailOn, when set, replaces the saved --fail-on.
	FailOn    string
	FailOnSet bool
}

// NewCmdCheck builds `idemcheck check DIR`.
func NewCmdCheck(f *Factory, runF func(context.Context, *CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{Streams: f.Streams}
	c := &cobra.Command{
		Use:   "check DIR",
		Short: "Check a saved run again, offline",
		Long: `Check re-runs the invariant checkers on a run saved with 'idemcheck run --out DIR'
(or on every run saved below DIR, as several scenarios or the demo save them):
it reads DIR/history.jsonl alone (every attempt, the oracles' readings, and
the invariants, thresholds and expectation the run was judged against) and
reports as run did, without sending a request. report.json is output only.
Use it to re-judge evidence, after upgrading idemcheck, or with --scenario to
judge a saved run against other invariants or thresholds.`,
		Example: `  idemcheck run charges.yaml --out ./report
  idemcheck check ./report
  idemcheck check ./report --format json
  idemcheck check ./report --scenario stricter.yaml   # other invariants and thresholds
  idemcheck demo --out ./demo && idemcheck check ./demo`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if _, err := opts.Reports.writer(opts.Format); err != nil {
				return withCode(ExitUsage, err)
			}
			if err := opts.Reports.resolve(); err != nil {
				return err
			}
			if err := failOnFlag(opts.FailOn); err != nil {
				return err
			}
			opts.FailOnSet = c.Flags().Changed("fail-on")
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return checkRun(c.Context(), opts)
		},
	}
	c.Flags().StringVarP(&opts.Format, "format", "f", "text", "report format on stdout: text, json, markdown, junit or html")
	c.Flags().StringVar(&opts.FailOn, "fail-on", "", "also fail on deviations from the profile: medium (default: as the run was judged)")
	opts.Reports.register(c.Flags())
	c.Flags().StringVar(&opts.Scenario, "scenario", "", "judge against this scenario's (file or built-in name) invariants, thresholds and expectation instead of the saved ones")
	return c
}

func checkRun(ctx context.Context, opts *CheckOptions) error {
	dirs, err := runDirs(opts.Dir)
	if err != nil {
		return err
	}
	var sc *scenarios.Scenario
	if opts.Scenario != "" {
		if sc, err = scenarios.ResolveContext(ctx, opts.Scenario); err != nil {
			if ctx.Err() != nil {
				return withCode(ExitInterrupted, err)
			}
			return withCode(ExitUsage, err)
		}
	}
	var sums []*reports.Summary
	code := ExitOK
	for _, dir := range dirs {
		sum, err := recheck(ctx, dir, sc, opts)
		if err != nil {
			return err
		}
		sums = append(sums, sum)
		code = worst(code, resultCode(sum.Result))
	}
	write, _ := opts.Reports.writer(opts.Format)
	if err := opts.Reports.write(sums); err != nil {
		return err
	}
	if err := write(opts.Streams.Out, sums); err != nil {
		return withCode(ExitRuntime, err)
	}
	return finish(code, nil)
}

// runDirs is dir when it holds a saved run, else its subdirectories that
// do (what 'idemcheck run --out DIR' writes for several scenarios, and the
// demo under its --out).
func runDirs(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "history.jsonl")); err == nil {
		return []string{dir}, nil
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*", "history.jsonl"))
	if len(matches) == 0 {
		return nil, withHint(ExitUsage, fmt.Errorf("%s holds no saved run (history.jsonl)", dir),
			"DIR must be a directory written by 'idemcheck run --out DIR' or 'idemcheck demo --out DIR'")
	}
	out := make([]string, len(matches))
	for i, m := range matches {
		out[i] = filepath.Dir(m)
	}
	return out, nil
}

// recheck judges the run saved in dir again, from its history alone;
// with sc, against sc's expectation, invariants and thresholds instead of
// those saved. A history larger than checkPartBytes is judged in parts,
// one part of its keys in memory at a time.
func recheck(ctx context.Context, dir string, sc *scenarios.Scenario, opts *CheckOptions) (*reports.Summary, error) {
	p, err := splitRun(ctx, dir, checkPartBytes)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	meta := p.Meta
	if sc != nil {
		failOn := meta.Judge.FailOn
		meta.Judge = trial.JudgeOf(sc)
		meta.Judge.FailOn = failOn
	}
	if opts.FailOnSet {
		meta.Judge.FailOn = opts.FailOn
	}
	j, err := trial.JudgeParts(ctx, p, meta)
	switch {
	case ctx.Err() != nil:
		return nil, withCode(ExitInterrupted, fmt.Errorf("check %s: %w", dir, ctx.Err()))
	case errors.Is(err, history.ErrFormat):
		return nil, withCode(ExitUsage, fmt.Errorf("%s: %w", filepath.Join(dir, "history.jsonl"), err))
	case err != nil:
		return nil, withCode(ExitRuntime, fmt.Errorf("%s: %w", filepath.Join(dir, "history.jsonl"), err))
	}
	return summarize(j), nil
}

// checkPartBytes is the size of the parts check judges a history in.
var checkPartBytes int64 = history.DefaultPartBytes

// splitRun opens the history saved in dir, split into parts of partBytes
// (history.Split); ctx's end stops it.
func splitRun(ctx context.Context, dir string, partBytes int64) (*history.Parts, error) {
	path := filepath.Join(dir, "history.jsonl")
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, withHint(ExitUsage, err, "DIR must be a directory written by 'idemcheck run --out DIR'")
		}
		return nil, withCode(ExitRuntime, err)
	}
	defer f.Close()
	p, err := history.Split(ctx, f, -1, "", partBytes)
	switch {
	case err == nil:
		return p, nil
	case ctx.Err() != nil:
		return nil, withCode(ExitInterrupted, fmt.Errorf("check %s: %w", dir, ctx.Err()))
	case errors.Is(err, history.ErrOldFormat):
		return nil, withHint(ExitUsage, fmt.Errorf("%s: %w", path, err),
			"run the scenario again with this idemcheck to judge it; its report.json gives the seed and key nonce to resend the same requests: idemcheck run NAME --seed S --key-nonce N --out DIR")
	case errors.Is(err, history.ErrTruncated):
		return nil, withHint(ExitUsage, fmt.Errorf("%s: %w", path, err),
			"judging part of a run could accuse a correct API or pass a broken one: run it again")
	case err != nil && (errors.Is(err, history.ErrFormat) || strings.HasPrefix(err.Error(), "reading history")):
		return nil, withCode(ExitUsage, fmt.Errorf("%s: %w", path, err))
	case err != nil:
		return nil, withCode(ExitRuntime, fmt.Errorf("%s: %w", path, err))
	}
	return p, nil
}
