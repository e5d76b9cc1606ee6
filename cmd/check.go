package cmd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/reports"
)

// CheckOptions are the inputs of `idemcheck check`.
type CheckOptions struct {
	Streams Streams
	Dir     string
	Format  string
}

// NewCmdCheck builds `idemcheck check DIR`.
func NewCmdCheck(f *Factory, runF func(context.Context, *CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{Streams: f.Streams}
	c := &cobra.Command{
		Use:   "check DIR",
		Short: "Check a saved run again, offline",
		Long: `Check re-runs the invariant checkers on a run saved with 'idemcheck run --out DIR'
(or on every run saved below DIR, as several scenarios or the demo save them):
it reads DIR/history.jsonl (every attempt) and the observations in
DIR/report.json, and reports as run did, without sending a request. Use it to
re-judge evidence, or after upgrading idemcheck.`,
		Example: `  idemcheck run charges.yaml --out ./report
  idemcheck check ./report
  idemcheck check ./report --format json
  idemcheck demo --out ./demo && idemcheck check ./demo`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if _, err := reports.Writer(opts.Format); err != nil {
				return withCode(ExitUsage, err)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return checkRun(c.Context(), opts)
		},
	}
	c.Flags().StringVarP(&opts.Format, "format", "f", "text", "report format on stdout: text, json, markdown or junit")
	return c
}

func checkRun(_ context.Context, opts *CheckOptions) error {
	dirs, err := runDirs(opts.Dir)
	if err != nil {
		return err
	}
	var sums []*reports.Summary
	code := ExitOK
	for _, dir := range dirs {
		sum, err := recheck(dir)
		if err != nil {
			return err
		}
		sums = append(sums, sum)
		code = worst(code, resultCode(sum.Result))
	}
	write, _ := reports.Writer(opts.Format)
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

// recheck re-runs the checkers on the run saved in dir.
func recheck(dir string) (*reports.Summary, error) {
	h, prev, err := loadRun(dir)
	if err != nil {
		return nil, err
	}
	invs := make([]checks.Invariant, len(prev.Verdicts))
	for i, v := range prev.Verdicts {
		invs[i] = checks.Invariant{Check: v.Invariant, Oracle: v.Oracle}
	}
	obs := map[string]*checks.Observation{}
	for _, o := range prev.Observations {
		if o != nil {
			obs[o.Oracle] = o
		}
	}
	return reports.Build(h, reports.Input{
		Tool:         "idemcheck " + Version,
		Scenario:     prev.Scenario,
		Verdicts:     checks.Run(h, invs, obs),
		Observations: prev.Observations,
		Limits:       limitsFrom(prev.Thresholds),
	}), nil
}

func loadRun(dir string) (*history.History, *reports.Summary, error) {
	hf, err := os.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return nil, nil, withHint(ExitUsage, err, "DIR must be a directory written by 'idemcheck run --out DIR'")
	}
	defer hf.Close()
	h, err := history.Decode(hf)
	if err != nil {
		return nil, nil, withCode(ExitUsage, fmt.Errorf("%s: %w", hf.Name(), err))
	}
	rf, err := os.Open(filepath.Join(dir, "report.json"))
	if err != nil {
		return nil, nil, withHint(ExitUsage, err, "the observations are read from report.json beside history.jsonl")
	}
	defer rf.Close()
	prev, err := reports.ReadJSON(rf)
	if err != nil {
		return nil, nil, withCode(ExitUsage, fmt.Errorf("%s: %w", rf.Name(), err))
	}
	if prev.Scenario.Name != h.Meta.Scenario {
		return nil, nil, withCode(ExitUsage, errors.New("report.json and history.jsonl are of different runs"))
	}
	return h, prev, nil
}

func limitsFrom(ts []reports.Threshold) reports.Limits {
	var l reports.Limits
	// Limits were saved in ms as floats: round, so 1.005ms comes back as
	// 1.005ms and not 1.004999ms, and check judges as run did.
	d := func(v float64) time.Duration { return time.Duration(math.Round(v * float64(time.Millisecond))) }
	for _, t := range ts {
		switch t.Name {
		case "p50":
			l.P50 = d(t.Limit)
		case "p90":
			l.P90 = d(t.Limit)
		case "p99":
			l.P99 = d(t.Limit)
		case "p99.9":
			l.P999 = d(t.Limit)
		case "max":
			l.Max = d(t.Limit)
		case "error_rate":
			v := t.Limit
			l.ErrorRate = &v
		}
	}
	return l
}
