package trial

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/pause"
	"github.com/idemcheck/idemcheck/oracles"
	"github.com/idemcheck/idemcheck/scenarios"
)

// A run can be made by several processes, in three phases: one prepares
// it (setup requests, the oracles' readings before the load) and writes a
// Manifest (Publish); n processes each make one shard of the load from it
// (LoadShard), all starting at the manifest's start time; one judges the
// run (Resume, then JudgeShards on the shards' histories). A run in one
// process is the same three phases in one Run.

// ManifestFormat is the version of the manifest this idemcheck writes and
// reads.
const ManifestFormat = 1

// Manifest is what the prepare phase of a sharded run hands the load and
// judge phases: the scenario as it was given, everything the command line
// changed, the seed and key nonce, the shard count and when the load
// starts. The oracles' readings before it are beside it (BeforeFile).
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
	// TargetDigests are, for each of Targets, the SHA-256 of the run id
	// and the target's full URL: a target given again to a later phase
	// must be the very one, secret included, though the manifest does not
	// keep the secret.
	TargetDigests []string `json:"target_digests,omitempty"`

	auth *runAuth // the run key and MACs it was read with (ReadRun)
	// Calibration is what the prepare phase measured to resolve the
	// scenario's relative fault parameters (calibrate.go): every shard
	// loads with the same values. Nil when the scenario has none.
	Calibration *history.Calibration `json:"calibration,omitempty"`
}

// Readings are the oracles' readings before the load of a sharded run.
type Readings struct {
	RunID string `json:"run_id"`
	// Before holds each oracle's reading (oracles.SaveBefore); Errors each
	// oracle whose reading failed, and why.
	Before map[string]json.RawMessage `json:"before,omitempty"`
	Errors map[string]string          `json:"errors,omitempty"`
}

// TargetDigest is what Manifest.TargetDigests holds for target.
func TargetDigest(runID, target string) string {
	sum := sha256.Sum256([]byte(runID + "\x00" + target))
	return hex.EncodeToString(sum[:])
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
	AbortOnFail    bool          `json:"abort_on_fail,omitempty"`
}

// Apply applies the load's overrides to sc: ops or a duration replace
// the scenario's bound (both set keep both), a concurrency the open
// model, a rate the closed one; either replaces a load in stages with a
// flat one, as long as the stages (load.duration is defaulted to their
// total), while a duration shorter than the stages cuts them short.
// Check says whether they can be applied.
func (o Overrides) Apply(sc *scenarios.Scenario) {
	if o.AbortOnFail {
		sc.Load.AbortOnFail = true
	}
	if o.Ops > 0 {
		sc.Load.Ops = o.Ops
		if o.Duration == 0 {
			sc.Load.Duration = 0
		}
	}
	if o.Duration > 0 {
		sc.Load.Duration = scenarios.Duration(o.Duration)
		if o.Ops == 0 {
			sc.Load.Ops = 0
		}
	}
	if o.Concurrency > 0 {
		sc.Load.Concurrency, sc.Load.Rate, sc.Load.Stages = o.Concurrency, 0, nil
	}
	if o.Rate > 0 {
		sc.Load.Rate, sc.Load.Concurrency, sc.Load.Stages = scenarios.Rate(o.Rate), 0, nil
	}
}

// Check reports what keeps the overrides from being applied: a negative
// value, a rate that is no number, both a concurrency and a rate.
func (o Overrides) Check() error {
	switch {
	case math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0):
		return fmt.Errorf("rate %v: want a number of ops per second", o.Rate)
	case o.Ops < 0 || o.Duration < 0 || o.Concurrency < 0 || o.Rate < 0 || o.RequestTimeout < 0:
		return errors.New("ops, duration, concurrency, rate and request timeout must not be negative")
	case o.Concurrency > 0 && o.Rate > 0:
		return errors.New("concurrency and rate both set: the closed model or the open one")
	}
	return nil
}

// MaxShards bounds how many load processes share one run.
const MaxShards = 1000

// CheckShards refuses a sharded run of sc that cannot give every shard
// work: more shards than the load's ops, or than MaxShards.
func CheckShards(sc *scenarios.Scenario, shards int) error {
	switch {
	case shards > MaxShards:
		return fmt.Errorf("%w: %d shards: at most %d load processes share one run", ErrConfig, shards, MaxShards)
	case sc.IsQueue():
		return fmt.Errorf("%w: a scenario that publishes to a queue runs in one process: its consumer's drain and a consumer_cut are watched by one trial (sharded queue runs are not built yet)", ErrConfig)
	case sc.Load.Ops > 0 && shards > sc.Load.Ops:
		return fmt.Errorf("%w: %d shards for a load of %d ops: every shard needs at least one op; use --shards %d or fewer (or more ops)", ErrConfig, shards, sc.Load.Ops, sc.Load.Ops)
	}
	return nil
}

// manifest returns the manifest of a prepared trial, to be completed with
// the scenario's Spec, the overrides, the targets, the shard count and the
// start time (Publish), and the oracles' readings before the load.
func (t *Trial) manifest() (*Manifest, *Readings, error) {
	m := &Manifest{Format: ManifestFormat, RunID: t.opts.RunID, Scenario: t.sc.Name, Source: t.sc.Source,
		Seed: t.opts.Seed, KeyNonce: t.opts.KeyNonce, Prepared: time.Now(), Calibration: t.calibration}
	rd := &Readings{RunID: t.opts.RunID}
	for _, or := range t.oracles {
		if err, ok := t.before[or.Name()]; ok {
			if rd.Errors == nil {
				rd.Errors = map[string]string{}
			}
			rd.Errors[or.Name()] = t.opts.Secrets.Scrub(err.Error())
			continue
		}
		raw, err := oracles.SaveBefore(or)
		if err != nil {
			return nil, nil, fmt.Errorf("oracle %s: %w", or.Name(), err)
		}
		if rd.Before == nil {
			rd.Before = map[string]json.RawMessage{}
		}
		rd.Before[or.Name()] = raw
	}
	return m, rd, nil
}

// writeReadings writes rd as JSON.
func writeReadings(w io.Writer, rd *Readings) error { return json.NewEncoder(w).Encode(rd) }

// maxReadings bounds a readings file: one count for every key a bulk
// oracle listed before the load.
const maxReadings = 1 << 30

// readReadings reads the readings of run m from r.
func readReadings(r io.Reader, m *Manifest) (*Readings, error) {
	var rd Readings
	dec := json.NewDecoder(io.LimitReader(r, maxReadings))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rd); err != nil {
		return nil, fmt.Errorf("%s: %w", BeforeFile, err)
	}
	if rd.RunID != m.RunID {
		return nil, fmt.Errorf("%s is of run %s, not %s: two runs share this directory", BeforeFile, rd.RunID, m.RunID)
	}
	return &rd, nil
}

// Check reports what makes m unusable: another format, no run id, no
// shard, a scenario with no text, overrides that cannot be applied.
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
	if err := m.Overrides.Check(); err != nil {
		return fmt.Errorf("manifest: overrides: %w", err)
	}
	return nil
}

// writeManifest writes m as indented JSON.
func writeManifest(w io.Writer, m *Manifest) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}

// maxManifest bounds a manifest read: the scenario, and one reading of
// every key an oracle listed before the load.
const maxManifest = 256 << 20

// readManifest reads a manifest written by writeManifest and checks it.
func readManifest(r io.Reader) (*Manifest, error) {
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

// LoadShard makes the load of the shard c claims (ClaimShard) of the run
// m describes, sc being m's scenario with its overrides applied: it waits
// for m's start time (or ctx's end), then sends. o gives what a manifest
// does not hold (the transport, the environment, the observer, the
// targets when m's are redacted); its seed, nonce and run id are m's. The
// history is nil only when nothing was sent (a bad shard, an
// interruption before the start): the claim is then released, so that
// the shard may run again. Else it is what the load recorded, as for
// Load, for c.Write; the claim stays, even when the history is lost
// (history.ErrSpill), so that the shard is not sent twice.
func LoadShard(ctx context.Context, sc *scenarios.Scenario, m *Manifest, c *Claim, o Options) (*history.History, error) {
	h, err := loadShard(ctx, sc, m, c.Shard, o)
	if h == nil {
		c.Release()
	}
	return h, err
}

func loadShard(ctx context.Context, sc *scenarios.Scenario, m *Manifest, shard history.Shard, o Options) (*history.History, error) {
	if err := shard.Check(); err != nil || shard.Count != m.Shards {
		return nil, fmt.Errorf("%w: shard %s of a run prepared for %d shards", ErrConfig, shard, m.Shards)
	}
	o.Seed, o.KeyNonce, o.RunID = m.Seed, m.KeyNonce, m.RunID
	t, _, err := newTrial(sc, o)
	if err != nil {
		return nil, err
	}
	t.ropts.Shard = shard
	if m.Calibration != nil { // the prepare phase's, so every shard faults alike
		c := *m.Calibration
		t.calibrated(&c)
	}
	if !pause.For(ctx, time.Until(m.Start)) {
		return nil, fmt.Errorf("%s: shard %s interrupted before its start, nothing sent: %w", sc.Name, shard, context.Canceled)
	}
	return t.Load(ctx)
}

// Resume is the trial of the run m describes, for its judge phase: its
// oracles are built from sc (m's scenario, overrides applied) and given
// their readings before the load, from the first of dirs that holds them
// (else an error wrapping ErrNoReadings). It sends nothing.
func Resume(sc *scenarios.Scenario, m *Manifest, dirs []string, o Options) (*Trial, error) {
	rd, err := loadReadings(dirs, m)
	if err != nil {
		return nil, err
	}
	o.Seed, o.KeyNonce, o.RunID = m.Seed, m.KeyNonce, m.RunID
	t, _, err := newTrial(sc, o)
	if err != nil {
		return nil, err
	}
	for _, or := range t.oracles {
		if msg, ok := rd.Errors[or.Name()]; ok {
			t.before[or.Name()] = errors.New(msg)
			continue
		}
		if err := oracles.LoadBefore(or, rd.Before[or.Name()]); err != nil {
			return nil, fmt.Errorf("%w: oracle %s: %w", ErrConfig, or.Name(), err)
		}
	}
	return t, nil
}

// ShardSet is what a judge found of a run's shards.
type ShardSet struct {
	// Files are the shards' history files found, in shard order: each
	// of the run, of the shard its name says, written whole.
	Files []string
	// Missing are the shards not found.
	Missing []int
}

// ErrShardFile is wrapped by CollectShards' error for a shard file that
// cannot be used: unreadable, malformed, cut short, of another run.
var ErrShardFile = errors.New("unusable shard history")

// CollectShards reads the histories of m's shards from dirs, waiting
// until deadline (and until ctx ends) for those not there yet; it polls
// every poll, and calls waiting (when not nil) once, with the shards
// missing, before it first waits. A look that began before deadline is
// followed by one more, however long it took (a slow disk, a loaded
// machine): the wait given is never spent on the first look alone. A
// shard file of another run, or one cut short, is an error, never
// silently left out; a shard still missing at the end is in Missing.
func CollectShards(ctx context.Context, m *Manifest, dirs []string, deadline time.Time, poll time.Duration, waiting func(missing []int)) (*ShardSet, error) {
	found := make([]string, m.Shards)
	for {
		began := time.Now()
		missing := 0
		for i := range found {
			if found[i] != "" {
				continue
			}
			path, err := findShard(m, history.Shard{Index: i, Count: m.Shards}, dirs)
			if err != nil {
				return nil, err
			}
			if path == "" {
				missing++
			}
			found[i] = path
		}
		if missing == 0 || !began.Before(deadline) {
			break
		}
		if waiting != nil {
			var ids []int
			for i, path := range found {
				if path == "" {
					ids = append(ids, i)
				}
			}
			waiting(ids)
			waiting = nil
		}
		if !pause.For(ctx, min(poll, time.Until(deadline))) {
			break
		}
	}
	set := &ShardSet{}
	for i, path := range found {
		if path == "" {
			set.Missing = append(set.Missing, i)
			continue
		}
		set.Files = append(set.Files, path)
	}
	return set, nil
}

// findShard returns the file of shard's history in the first of dirs
// that has it, checked for its run, its shard and its trailer (the rest
// is checked as it is merged); "" when none has. Another copy in a later
// dir is an error wrapping ErrShardTwice.
func findShard(m *Manifest, s history.Shard, dirs []string) (string, error) {
	found := ""
	for _, dir := range dirs {
		path := filepath.Join(dir, ShardFile(s))
		if found != "" {
			if err := notTwice(m, s, found, path); err != nil {
				return "", err
			}
			continue
		}
		meta, _, err := history.ShardEnds(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return "", fmt.Errorf("%w: %s: %w", ErrShardFile, path, err)
		case meta.RunID != m.RunID:
			return "", fmt.Errorf("%w: %s is of run %s, not %s: two runs share this directory", ErrShardFile, path, meta.RunID, m.RunID)
		case meta.Shard.String() != s.String():
			return "", fmt.Errorf("%w: %s says it is shard %q, not %s", ErrShardFile, path, meta.Shard, s)
		}
		found = path
	}
	return found, nil
}

// ErrNoShards is wrapped by JudgeShards' error when no shard of the run
// delivered its history.
var ErrNoShards = errors.New("no shard delivered its history")

// JudgeShards judges the run m from the shards' histories in set: it
// merges them, has the oracles read the state after the run (Observe)
// and judges the whole (Judge). A shard missing leaves the run
// inconclusive, unless a violation was caught on the others; none at all
// is an error wrapping ErrNoShards. An unusable shard file, or one that
// holds ops not its shard's (checkShardOps), is an error wrapping
// ErrShardFile; a merge the disk cannot hold, history.ErrSpill.
// The merged history is on disk (Judged.History.Spill): the caller
// removes it.
func (t *Trial) JudgeShards(ctx context.Context, m *Manifest, set *ShardSet) (*Judged, error) {
	if len(set.Files) == 0 {
		return nil, &kindError{fmt.Errorf("no shard of run %s delivered its history (%d expected)", m.RunID, m.Shards), ErrNoShards}
	}
	if err := t.checkShardOps(ctx, m, set); err != nil {
		return nil, err
	}
	h, err := merge(set, t.opts.SpillDir)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		h.Meta.Interrupt(history.PhaseMerge)
	}
	t.Observe(ctx, h)
	j, err := judgeIn(h, t.opts.SpillDir)
	if err != nil {
		h.Spill.Remove()
		return nil, err
	}
	return j, nil
}

// merge merges a run's shard histories into the history of the whole run,
// one record at a time into a file in tmp ("": the system's temporary
// directory; the history returned holds it in Spill), so that the judge's
// memory does not grow with the run; a shard missing leaves the run
// inconclusive (history.MergeShardFiles, and the judgement's rule on
// missing shards).
func merge(set *ShardSet, tmp string) (*history.History, error) {
	h, err := history.MergeShardFiles(set.Files, tmp)
	switch {
	case errors.Is(err, history.ErrSpill):
		return nil, err // the disk's fault, not the shards'
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrShardFile, err)
	}
	return h, nil
}
