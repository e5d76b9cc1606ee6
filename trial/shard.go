package trial

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/oracles"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// A run can be made by several processes, in three phases: one prepares
// it (setup requests, the oracles' readings before the load) and writes a
// Manifest; n processes each make one shard of the load from it
// (LoadShard), all starting at the manifest's start time; one judges the
// run (Resume, then Observe and Judge on the shards' merged history). A
// run in one process is the same three phases in one Run.

// ManifestFormat is the version of the manifest this idemcheck writes and
// reads.
const ManifestFormat = 1

// ManifestFile and ShardFile name the files the phases of a sharded run
// leave in its directory.
const ManifestFile = "manifest.json"

// ShardFile is the name of shard's history in the run's directory.
func ShardFile(s runner.Shard) string { return fmt.Sprintf("shard-%d-of-%d.jsonl", s.Index, s.Count) }

// Manifest is what the prepare phase of a sharded run hands the load and
// judge phases: the scenario as it was given, everything the command line
// changed, the seed and key nonce, the shard count, when the load starts,
// and the oracles' readings before it.
type Manifest struct {
	Format int    `json:"format"`
	RunID  string `json:"run_id"`
	// Scenario is the scenario's name, Source where it came from (a file,
	// builtin:NAME) and Spec its YAML, verbatim: every phase parses the
	// same text.
	Scenario string `json:"scenario"`
	Source   string `json:"source"`
	Spec     string `json:"spec"`
	// Overrides are the command line's changes to the scenario.
	Overrides Overrides `json:"overrides"`
	// Targets are the --target URLs, "" for the scenario's own. A target
	// with a secret in it (a password, a query value) is kept redacted
	// (TargetsRedacted): the load and judge phases are then given the
	// targets again, which must match.
	Targets         []string `json:"targets,omitempty"`
	TargetsRedacted bool     `json:"targets_redacted,omitempty"`
	Seed            uint64   `json:"seed"`
	KeyNonce        uint64   `json:"key_nonce"`
	Shards          int      `json:"shards"`
	// Prepared is when the prepare phase ended; Start when every shard
	// starts its load.
	Prepared time.Time `json:"prepared"`
	Start    time.Time `json:"start"`
	// Before holds each oracle's reading before the load (oracles.SaveBefore);
	// BeforeErrors each oracle whose reading failed, and why.
	Before       map[string]json.RawMessage `json:"before,omitempty"`
	BeforeErrors map[string]string          `json:"before_errors,omitempty"`
}

// Overrides are the command line's changes to a scenario that a sharded
// run's phases all apply.
type Overrides struct {
	Ops            int           `json:"ops,omitempty"`
	Duration       time.Duration `json:"duration_ns,omitempty"`
	Concurrency    int           `json:"concurrency,omitempty"`
	Rate           float64       `json:"rate,omitempty"`
	RequestTimeout time.Duration `json:"request_timeout_ns,omitempty"`
	FailOn         string        `json:"fail_on,omitempty"`
	RedactPath     bool          `json:"redact_path,omitempty"`
}

// Manifest returns the manifest of a prepared trial, to be completed with
// the scenario's Spec, the overrides, the shard count and the start time.
func (t *Trial) Manifest() (*Manifest, error) {
	m := &Manifest{Format: ManifestFormat, RunID: t.opts.RunID, Scenario: t.sc.Name, Source: t.sc.Source,
		Seed: t.opts.Seed, KeyNonce: t.opts.KeyNonce, Prepared: time.Now()}
	for _, or := range t.oracles {
		if err, ok := t.before[or.Name()]; ok {
			if m.BeforeErrors == nil {
				m.BeforeErrors = map[string]string{}
			}
			m.BeforeErrors[or.Name()] = err.Error()
			continue
		}
		raw, err := oracles.SaveBefore(or)
		if err != nil {
			return nil, fmt.Errorf("oracle %s: %w", or.Name(), err)
		}
		if m.Before == nil {
			m.Before = map[string]json.RawMessage{}
		}
		m.Before[or.Name()] = raw
	}
	return m, nil
}

// Check reports what makes m unusable: another format, no run id, no
// shard, a scenario with no text.
func (m *Manifest) Check() error {
	switch {
	case m.Format != ManifestFormat:
		return fmt.Errorf("manifest format %d: this idemcheck reads format %d; prepare the run again with this version", m.Format, ManifestFormat)
	case m.RunID == "":
		return errors.New("manifest has no run_id")
	case m.Shards < 1:
		return fmt.Errorf("manifest: shards %d: want at least 1", m.Shards)
	case m.Spec == "":
		return errors.New("manifest has no scenario (spec)")
	}
	return nil
}

// WriteManifest writes m as indented JSON.
func WriteManifest(w io.Writer, m *Manifest) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}

// maxManifest bounds a manifest read: the scenario, and one reading of
// every key an oracle listed before the load.
const maxManifest = 256 << 20

// ReadManifest reads a manifest written by WriteManifest and checks it.
func ReadManifest(r io.Reader) (*Manifest, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxManifest+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxManifest {
		return nil, fmt.Errorf("manifest larger than %d MiB", maxManifest>>20)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	return &m, nil
}

// LoadShard makes shard's part of the load of the run m describes, sc
// being m's scenario with its overrides applied: it waits for m's start
// time (or ctx's end), then sends. o gives what a manifest does not hold
// (the transport, the environment, the observer, the targets when m's
// are redacted); its seed, nonce and run id are m's. The history is never
// nil, as for Load.
func LoadShard(ctx context.Context, sc *scenarios.Scenario, m *Manifest, shard runner.Shard, o Options) (*history.History, error) {
	if err := shard.Check(); err != nil || shard.Count != m.Shards {
		return nil, fmt.Errorf("%w: shard %s of a run prepared for %d shards", ErrConfig, shard, m.Shards)
	}
	o.Seed, o.KeyNonce, o.RunID = m.Seed, m.KeyNonce, m.RunID
	t, _, err := newTrial(sc, o)
	if err != nil {
		return nil, err
	}
	t.ropts.Shard = shard
	if !sleep(ctx, time.Until(m.Start)) {
		h := &history.History{Meta: history.Meta{RunID: m.RunID, Scenario: sc.Name, Shard: shard.String(), Seed: m.Seed, KeyNonce: m.KeyNonce,
			Started: time.Now(), Ended: time.Now(), Interrupted: true, Judge: JudgeOf(sc)}}
		h.Meta.Judge.FailOn = o.FailOn
		return h, fmt.Errorf("%s: interrupted before the start: %w", sc.Name, context.Canceled)
	}
	return t.Load(ctx)
}

// Resume is the trial of the run m describes, for its judge phase: its
// oracles are built from sc (m's scenario, overrides applied) and given
// m's readings before the load. It sends nothing.
func Resume(sc *scenarios.Scenario, m *Manifest, o Options) (*Trial, error) {
	o.Seed, o.KeyNonce, o.RunID = m.Seed, m.KeyNonce, m.RunID
	t, _, err := newTrial(sc, o)
	if err != nil {
		return nil, err
	}
	for _, or := range t.oracles {
		if msg, ok := m.BeforeErrors[or.Name()]; ok {
			t.before[or.Name()] = errors.New(msg)
			continue
		}
		if err := oracles.LoadBefore(or, m.Before[or.Name()]); err != nil {
			return nil, fmt.Errorf("%w: oracle %s: %w", ErrConfig, or.Name(), err)
		}
	}
	return t, nil
}

// ShardSet is what a judge found of a run's shards.
type ShardSet struct {
	// Histories are the shards' histories found, in shard order.
	Histories []*history.History
	// Missing are the shards not found.
	Missing []int
}

// ErrShardFile is wrapped by CollectShards' error for a shard file that
// cannot be used: unreadable, malformed, cut short, of another run.
var ErrShardFile = errors.New("unusable shard history")

// CollectShards reads the histories of m's shards from dirs, waiting up to
// wait (and until ctx ends) for those not there yet; it polls every
// poll. A shard file of another run, or one cut short, is an error, never
// silently left out; a shard still missing at the end is in Missing.
func CollectShards(ctx context.Context, m *Manifest, dirs []string, wait, poll time.Duration) (*ShardSet, error) {
	deadline := time.Now().Add(wait)
	found := make([]*history.History, m.Shards)
	for {
		missing := 0
		for i := range found {
			if found[i] != nil {
				continue
			}
			h, err := readShard(m, runner.Shard{Index: i, Count: m.Shards}, dirs)
			if err != nil {
				return nil, err
			}
			if h == nil {
				missing++
			}
			found[i] = h
		}
		if missing == 0 || time.Now().After(deadline) || !sleep(ctx, min(poll, time.Until(deadline))) {
			break
		}
	}
	set := &ShardSet{}
	for i, h := range found {
		if h == nil {
			set.Missing = append(set.Missing, i)
			continue
		}
		set.Histories = append(set.Histories, h)
	}
	return set, nil
}

// readShard reads shard's history from the first of dirs that has it;
// nil, nil when none has.
func readShard(m *Manifest, s runner.Shard, dirs []string) (*history.History, error) {
	for _, dir := range dirs {
		path := filepath.Join(dir, ShardFile(s))
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrShardFile, err)
		}
		h, err := history.Decode(f)
		f.Close()
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: %s: %w", ErrShardFile, path, err)
		case h.Meta.RunID != m.RunID:
			return nil, fmt.Errorf("%w: %s is of run %s, not %s: two runs share this directory", ErrShardFile, path, h.Meta.RunID, m.RunID)
		case h.Meta.Shard != s.String():
			return nil, fmt.Errorf("%w: %s says it is shard %q, not %s", ErrShardFile, path, h.Meta.Shard, s)
		}
		return h, nil
	}
	return nil, nil
}

// Merge merges a run's shard histories into the history of the whole run;
// a shard missing leaves the run inconclusive (history.MergeShards, and
// the judgement's rule on missing shards).
func Merge(set *ShardSet, m *Manifest) (*history.History, error) {
	if len(set.Histories) == 0 {
		return nil, fmt.Errorf("no shard of run %s delivered its history (%d expected)", m.RunID, m.Shards)
	}
	return history.MergeShards(set.Histories)
}
