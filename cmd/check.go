package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/checks"
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
judge a saved run against other invariants or thresholds. An audit saved
with 'idemcheck audit --out DIR' is judged again to its scorecard.`,
		Example: `  idemcheck run charges.yaml --out ./report
  idemcheck check ./report
  idemcheck check ./report --format json
  idemcheck check ./report --scenario stricter.yaml   # other invariants and thresholds
  idemcheck demo --out ./demo && idemcheck check ./demo
  idemcheck audit POST http://127.0.0.1:8080/charges -d '{"amount":100}' --out ./audit && idemcheck check ./audit`,
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
	var audits []judgedAudit
	code := ExitOK
	for _, dir := range dirs {
		if a, ok, err := recheckAudit(dir, sc, opts); err != nil {
			return err
		} else if ok {
			audits = append(audits, a)
			code = worst(code, resultCode(a.card.Result))
			continue
		}
		sum, err := recheck(ctx, dir, sc, opts)
		if err != nil {
			return err
		}
		sums = append(sums, sum)
		code = worst(code, resultCode(sum.Result))
	}
	if len(sums) > 0 || len(audits) == 0 {
		write, _ := opts.Reports.writer(opts.Format)
		if err := opts.Reports.write(sums); err != nil {
			return err
		}
		if err := write(opts.Streams.Out, sums); err != nil {
			return withCode(ExitRuntime, err)
		}
	}
	for _, a := range audits {
		if err := opts.Reports.writeScorecard(opts.Streams.Out, opts.Format, a.card, a.h); err != nil {
			return err
		}
	}
	return finish(code, nil)
}

// judgedAudit is an audit saved with 'idemcheck audit --out DIR', judged
// again.
type judgedAudit struct {
	h    *history.History
	card *checks.Scorecard
}

// recheckAudit judges the audit saved in dir again (trial.RecheckAudit);
// ok is false when dir holds a run, not an audit.
func recheckAudit(dir string, sc *scenarios.Scenario, opts *CheckOptions) (judgedAudit, bool, error) {
	var failOn *string
	if opts.FailOnSet {
		failOn = &opts.FailOn
	}
	h, card, ok, err := trial.RecheckAudit(dir, failOn)
	switch {
	case !ok:
		return judgedAudit{}, false, nil // a run (or an error the run's path reports)
	case sc != nil:
		return judgedAudit{}, false, withHint(ExitUsage, fmt.Errorf("%s holds an audit, judged against the contract checks: --scenario applies to runs", dir),
			"drop --scenario to judge the audit again as it was audited")
	case errors.Is(err, history.ErrFormat):
		return judgedAudit{}, false, withCode(ExitUsage, err)
	case err != nil:
		return judgedAudit{}, false, withCode(ExitRuntime, err)
	}
	return judgedAudit{h: h, card: card}, true, nil
}

// runDirs is dir's saved runs (trial.SavedDirs).
func runDirs(dir string) ([]string, error) {
	dirs, err := trial.SavedDirs(dir)
	if err != nil {
		return nil, withHint(ExitUsage, err, "DIR must be a directory written by 'idemcheck run --out DIR' or 'idemcheck demo --out DIR'")
	}
	return dirs, nil
}

// recheck judges the run saved in dir again (trial.Recheck), in parts
// of checkPartBytes.
func recheck(ctx context.Context, dir string, sc *scenarios.Scenario, opts *CheckOptions) (*reports.Summary, error) {
	var failOn *string
	if opts.FailOnSet {
		failOn = &opts.FailOn
	}
	j, err := trial.Recheck(ctx, dir, sc, failOn, checkPartBytes)
	switch {
	case err == nil:
		return summarize(j), nil
	case ctx.Err() != nil:
		return nil, withCode(ExitInterrupted, fmt.Errorf("check %s: %w", dir, ctx.Err()))
	case errors.Is(err, trial.ErrNoHistory) && errors.Is(err, os.ErrNotExist):
		return nil, withHint(ExitUsage, err, "DIR must be a directory written by 'idemcheck run --out DIR'")
	case errors.Is(err, history.ErrFormat) || strings.Contains(err.Error(), ": reading history"):
		return nil, withCode(ExitUsage, err) // ErrOldFormat and ErrTruncated say what to do (their hints)
	}
	return nil, withCode(ExitRuntime, err)
}

// checkPartBytes is the size of the parts check judges a history in.
var checkPartBytes int64 = history.DefaultPartBytes
