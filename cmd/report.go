package cmd

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
)

// NewCmdReport builds `idemcheck report`, the commands on saved runs.
func NewCmdReport(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "report",
		Short: "Work on saved runs: merge the shards of a run made by several processes",
		Long: `report works on the files runs leave behind. 'report merge' judges a sharded
run whose shards were saved in several directories (docs/distributed.md).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.AddCommand(NewCmdReportMerge(f, nil))
	return c
}

// NewCmdReportMerge builds `idemcheck report merge`. runF replaces the
// merge in tests.
func NewCmdReportMerge(f *Factory, runF func(context.Context, *RunOptions, []string) error) *cobra.Command {
	opts := &RunOptions{Streams: f.Streams, Getenv: f.Getenv}
	var targets []string
	c := &cobra.Command{
		Use:   "merge DIR...",
		Short: "Merge the shards of a sharded run, read the state after it and judge it",
		Long: `merge judges a sharded run after the fact, when its load processes saved their
files in directories of their own rather than one shared directory: it reads
the run's manifest.json and before.json (the oracles' readings before the
load) from the first DIR that has them and every shard's history
(shard-i-of-N.jsonl) from the DIRs, refuses files of another run, a shard
found in two DIRs (naming both) and a shard file whose ops are not its
own, merges the shards into the run's history (the run's op numbers, one
latency histogram over every attempt), has the oracles read the target's
state once, and judges the whole, exactly as 'run --phase judge' does on one directory.
A shard found in no DIR leaves the run inconclusive (exit 3), unless a
violation was caught on the others (exit 1).

A run prepared with IDEMCHECK_RUN_KEY is merged only with the same key in
the environment, and only if its manifest.json and before.json are what
prepare wrote (manifest.mac, beside the manifest).

The target must still be up: the oracles read its state now.`,
		Example: `  # each load process saved its own directory; the prepare phase's too
  idemcheck report merge prep/ shard-0/ shard-1/ shard-2/ shard-3/ --out merged/

  # with a JUnit report for CI
  idemcheck report merge runs/* --out merged/ --report junit=junit.xml`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return withHint(ExitUsage, errors.New("merge needs the run's directories"), "give the directory of the prepare phase and those of the shards")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(targets) > 0 {
				opts.Target = targets[0]
				opts.Targets = targets
			}
			opts.Reports.noFS = validating(c.Context())
			if err := opts.Reports.resolve(); err != nil {
				return err
			}
			if _, err := opts.Reports.writer(opts.Format); err != nil {
				return withCode(ExitUsage, err)
			}
			if opts.Phases.Wait < 0 {
				return usageError("--wait must not be negative, got %s", opts.Phases.Wait)
			}
			if validating(c.Context()) {
				return nil
			}
			if runF != nil {
				return runF(c.Context(), opts, args)
			}
			return runJudge(c.Context(), opts, args, opts.Out, opts.Phases.Wait)
		},
	}
	fl := c.Flags()
	fl.StringArrayVarP(&targets, "target", "t", nil, "the run's targets again, when they carry a secret the manifest does not keep")
	fl.DurationVar(&opts.Phases.Wait, "wait", 0, "how long to wait for shards not there yet (default: not at all)")
	fl.StringVarP(&opts.Out, "out", "o", "", "directory to write the merged run's report.json and history.jsonl to")
	fl.StringVarP(&opts.Format, "format", "f", "text", "report format on stdout: text, json, markdown, junit or html")
	fl.BoolVarP(&opts.Quiet, "quiet", "q", false, "no progress on stderr")
	opts.Reports.register(fl)
	opts.Client.register(fl)
	return c
}
