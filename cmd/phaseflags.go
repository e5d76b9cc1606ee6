package cmd

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
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
		if set(name) && !slices.Contains(allowed, name) {
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

// parseShardFlag parses --shard (trial.ParseShardArg).
func parseShardFlag(s string, getenv func(string) string) (history.Shard, error) {
	return trial.ParseShardArg(s, getenv)
}

// refuseNemesis refuses a phase of a sharded run whose scenario declares
// a nemesis (trial.ErrNemesisSharded says why), before anything is sent
// or written. User commands run only in the process that read the
// user's scenario.
func refuseNemesis(phase string, sc *scenarios.Scenario) error {
	if !faults.HasNemesis(sc.Faults) {
		return nil
	}
	if phase == "" {
		phase = "judge" // report merge judges
	}
	return withHint(ExitUsage, fmt.Errorf("--phase %s: scenario %s declares a nemesis: %w", phase, sc.Name, trial.ErrNemesisSharded),
		"run it unsharded, in one process: idemcheck run FILE (without --phase and --shards)")
}
