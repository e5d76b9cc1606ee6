package trial

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/atomicfile"
	"github.com/idemcheck/idemcheck/internal/hint"
	"github.com/idemcheck/idemcheck/internal/pause"
	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/scenarios"
)

// A sharded run's directory, shared by its phases (a shared volume when
// they run on several machines), holds:
//
//	before.json          the oracles' readings before the load (Publish)
//	manifest.json        the run (Publish, after before.json: its sign that
//	                     the run is ready)
//	shard-i-of-N.claim   the load process that took shard i (ClaimShard)
//	shard-i-of-N.jsonl   shard i's history, written whole (Claim.Write)
//
// A judge reads them from one directory, or from several when each
// process kept its own (report merge): ReadRun, Resume, CollectShards.

// ManifestFile names the run's manifest in its directory.
const ManifestFile = "manifest.json"

// BeforeFile names the file of the oracles' readings before the load, in
// the run's directory: only the judge reads it, and a bulk oracle's
// reading of every key can be large.
const BeforeFile = "before.json"

// ShardFile is the name of shard's history in the run's directory.
func ShardFile(s history.Shard) string { return fmt.Sprintf("shard-%d-of-%d.jsonl", s.Index, s.Count) }

// Errors of a run's directory that a caller tells apart, each wrapped
// by an error of its own words.
var (
	// ErrRunExists: the directory holds a run already (CheckFresh).
	ErrRunExists error = hint.New("give each sharded run a directory of its own", errors.New("the directory holds a run already"))
	// ErrNoManifest: no directory holds the run's manifest (yet).
	ErrNoManifest error = hint.New("prepare the run first: idemcheck run FILE --phase prepare --shards N --out DIR", errors.New("no manifest"))
	// ErrManifest: a manifest that cannot be used: malformed, of another
	// format, inconsistent.
	ErrManifest error = hint.New("prepare the run with 'idemcheck run FILE --phase prepare --shards N --out DIR'", errors.New("unusable manifest"))
	// ErrNoReadings: no directory holds the readings before the load.
	ErrNoReadings error = hint.New("give report merge the directory prepare wrote, which holds it beside manifest.json", errors.New("no readings before the load"))
	// ErrTargetSecret: the run's targets carry a secret the manifest
	// does not keep: a later phase must be given them again.
	ErrTargetSecret = errors.New("the run's target carries a secret, which the manifest does not keep")
	// ErrScenarioTarget: targets were given to a later phase of a run
	// prepared with the scenario's own.
	ErrScenarioTarget error = hint.New("drop --target (and IDEMCHECK_TARGET), or prepare the run with it", errors.New("the run was prepared with the scenario's own target"))
)

// kindError is err, which is also kind for errors.Is: a sentinel to tell
// it apart, the words its own.
type kindError struct{ err, kind error }

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }

// CheckFresh returns an error wrapping ErrRunExists when dir holds a run
// already: a manifest, shard histories that would be judged with the
// new run's, or a run's history or report (a plain run's, a judged
// one's), which the new run's judge would replace.
func CheckFresh(dir string) error {
	for _, name := range []string{ManifestFile, HistoryFile, "report.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return &kindError{fmt.Errorf("%s already holds a run (%s)", dir, name), ErrRunExists}
		}
	}
	shards, _ := filepath.Glob(filepath.Join(dir, "shard-*-of-*.jsonl"))
	if len(shards) > 0 {
		return &kindError{fmt.Errorf("%s already holds shard histories (%s)", dir, filepath.Base(shards[0])), ErrRunExists}
	}
	return nil
}

// Plan is what makes a prepared trial a sharded run, beside the trial
// itself (its scenario, seed, key nonce and targets).
type Plan struct {
	// Spec is the scenario's YAML as it was given (ScenarioText).
	Spec string
	// Overrides are the command line's changes to it.
	Overrides Overrides
	// Shards is how many load processes share the run.
	Shards int
	// StartIn is when every shard starts its load, from now.
	StartIn time.Duration
	// RunKey, when set, authenticates the run's files (MACFile): the
	// later phases must be given it (ReadRun).
	RunKey []byte
}

// Publish makes the prepared trial t a sharded run in dir, which
// CheckFresh found free: it writes the oracles' readings before the load
// (BeforeFile), then, with a run key, their MACs (MACFile), then the
// manifest (ManifestFile), the sign that the run is ready. Targets with a secret are kept redacted, with a digest that
// a later phase's targets must match (RunTargets).
func (t *Trial) Publish(dir string, p Plan) (*Manifest, *Readings, error) {
	m, rd, err := t.manifest()
	if err != nil {
		return nil, nil, err
	}
	m.Spec, m.Overrides, m.Shards = p.Spec, p.Overrides, p.Shards
	for _, raw := range t.opts.Targets {
		shown := redaction.String(raw)
		m.Targets = append(m.Targets, shown)
		m.TargetDigests = append(m.TargetDigests, TargetDigest(m.RunID, raw))
		m.TargetsRedacted = m.TargetsRedacted || shown != raw
	}
	m.Start = time.Now().Add(p.StartIn).UTC().Truncate(time.Millisecond)
	if err := writeRun(dir, m, rd, p.RunKey); err != nil {
		return nil, nil, err
	}
	return m, rd, nil
}

// manifestPoll is how often ReadRun looks for the run's manifest while it
// waits for prepare.
const manifestPoll = 250 * time.Millisecond

// ReadRun reads the run's manifest from the first of dirs that holds one,
// and its scenario with the manifest's overrides applied. key is the run
// key prepare was given (nil for none): a manifest whose MAC does not
// check is an error wrapping ErrTampered, a run and a key that do not go
// together (a key for a run without MACs, or the reverse) ErrRunKey; the
// manifest keeps the key to check the readings (Resume). When none holds
// one yet it waits up to wait (and until ctx ends) for prepare to write
// it: the phases of a run may all be started at once (kubectl apply).
// waiting, when not nil, is called once, before the first wait.
//
// An error wraps ErrNoManifest when none came, ErrManifest for a manifest
// that cannot be used, ctx's error when it ended first.
func ReadRun(ctx context.Context, dirs []string, key []byte, wait time.Duration, waiting func()) (*Manifest, *scenarios.Scenario, error) {
	deadline := time.Now().Add(wait)
	for {
		m, sc, err := readRun(dirs, key)
		if err == nil || !errors.Is(err, ErrNoManifest) || !time.Now().Before(deadline) {
			return m, sc, err
		}
		if waiting != nil {
			waiting()
			waiting = nil
		}
		if !pause.For(ctx, min(manifestPoll, time.Until(deadline))) {
			return nil, nil, fmt.Errorf("waiting for %s: %w", ManifestFile, ctx.Err())
		}
	}
}

// readRun is ReadRun without the wait.
func readRun(dirs []string, key []byte) (*Manifest, *scenarios.Scenario, error) {
	var m *Manifest
	for _, dir := range dirs {
		path := filepath.Join(dir, ManifestFile)
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		m, err = readManifestIn(dir, f, key)
		f.Close()
		if err != nil {
			return nil, nil, &kindError{fmt.Errorf("%s: %w", path, err), ErrManifest}
		}
		break
	}
	if m == nil {
		return nil, nil, &kindError{fmt.Errorf("no %s in %s", ManifestFile, strings.Join(dirs, ", ")), ErrNoManifest}
	}
	sc, err := scenarios.Parse(m.Source, []byte(m.Spec))
	if err != nil {
		return nil, nil, fmt.Errorf("the manifest's scenario: %w", err)
	}
	m.Overrides.Apply(sc)
	return m, sc, nil
}

// loadReadings reads the oracles' readings before the load of run m from
// the first of dirs that holds them; an error wraps ErrNoReadings when
// none does.
func loadReadings(dirs []string, m *Manifest) (*Readings, error) {
	for _, dir := range dirs {
		f, err := os.Open(filepath.Join(dir, BeforeFile))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		rd, err := m.decodeReadings(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		return rd, nil
	}
	return nil, &kindError{fmt.Errorf("no %s in %s: the oracles' readings before the load are lost", BeforeFile, strings.Join(dirs, ", ")), ErrNoReadings}
}

// RunTargets are the targets of run m's later phases: those given again
// (which must be m's, secrets included: their digests must match), else
// m's own. Every error is the caller's: the targets given, or those not
// given though m's carry a secret (ErrTargetSecret).
func (m *Manifest) RunTargets(given []string) ([]string, error) {
	if len(given) == 0 {
		if m.TargetsRedacted {
			return nil, ErrTargetSecret
		}
		return m.Targets, nil
	}
	if len(m.Targets) == 0 {
		return nil, fmt.Errorf("--target %s: %w", redaction.String(given[0]), ErrScenarioTarget)
	}
	if len(given) != len(m.Targets) {
		return nil, fmt.Errorf("%d targets given, the run was prepared with %d (%s)", len(given), len(m.Targets), strings.Join(m.Targets, ", "))
	}
	for i, raw := range given {
		if redaction.String(raw) != m.Targets[i] || (i < len(m.TargetDigests) && TargetDigest(m.RunID, raw) != m.TargetDigests[i]) {
			return nil, fmt.Errorf("--target %s is not the run's target %s (its secret too must be the same)", redaction.String(raw), m.Targets[i])
		}
	}
	return given, nil
}

// ShardDeadline is until when a judge of run m (sc its scenario) waits
// for the shards' histories: wait past the load's planned end, or past
// now when that is later. The wait runs from the planned end, not from
// now: a judge started with the rest (kubectl apply) waits out the whole
// load.
func (m *Manifest) ShardDeadline(sc *scenarios.Scenario, wait time.Duration) time.Time {
	end := m.Start // a load bound by ops in the closed model: no telling how long
	switch l := sc.Load; {
	case l.Duration > 0:
		end = m.Start.Add(time.Duration(l.Duration))
	case l.Rate > 0 && l.Ops > 0:
		end = m.Start.Add(time.Duration(float64(l.Ops) / float64(l.Rate) * float64(time.Second)))
	}
	if now := time.Now(); now.After(end) {
		end = now
	}
	return end.Add(wait)
}

// Claim is a load process's hold on one shard of a run: a file beside
// the shard's history, taken atomically, so that two processes given the
// same index cannot both send its ops.
type Claim struct {
	// Shard is the shard claimed.
	Shard history.Shard
	// Path is where its history goes (ShardFile in the run's directory).
	Path  string
	claim string
}

// ClaimError is a shard a load process may not make: it ran already (its
// history is in the directory), or another process claimed it.
type ClaimError struct {
	Shard history.Shard
	RunID string
	// Path is the shard's history when Ran, else its claim.
	Path string
	Ran  bool
}

// Hint says what to do instead.
func (e *ClaimError) Hint() string {
	if e.Ran {
		return "a shard runs once (a second run would resend its keys into the same verdict); prepare a new run to run again"
	}
	return "give each load process its own index; a shard that stopped before its start frees its claim"
}

func (e *ClaimError) Error() string {
	if e.Ran {
		return fmt.Sprintf("shard %s of run %s already ran: %s exists", e.Shard, e.RunID, e.Path)
	}
	return fmt.Sprintf("shard %s of run %s is taken by another process (%s exists)", e.Shard, e.RunID, e.Path)
}

// ClaimShard takes shard s of run m, in dir, for this process; a
// *ClaimError when it ran already or another process holds it. A shard
// runs once: a second run would resend its keys into the same verdict.
func ClaimShard(dir string, m *Manifest, s history.Shard) (*Claim, error) {
	path := filepath.Join(dir, ShardFile(s))
	if _, err := os.Stat(path); err == nil {
		return nil, &ClaimError{Shard: s, RunID: m.RunID, Path: path, Ran: true}
	}
	claim := strings.TrimSuffix(path, ".jsonl") + ".claim"
	f, err := os.OpenFile(claim, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, &ClaimError{Shard: s, RunID: m.RunID, Path: claim}
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the claim is named already
		}
		return nil, fmt.Errorf("claiming shard %s: %w", s, err)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	f.Close()
	return &Claim{Shard: s, Path: path, claim: claim}, nil
}

// Release gives the shard up when nothing was sent, so that it may run
// again. A shard that sent ops keeps its claim, whether its history was
// written or lost: it must not be sent twice.
func (c *Claim) Release() { os.Remove(c.claim) }

// Write writes the shard's history to Path, whole or not at all.
func (c *Claim) Write(h *history.History) error {
	return atomicfile.Write(c.Path, func(f *os.File) error { return history.Encode(f, h) })
}

// ScenarioText is the YAML sc was read from: the file arg, or the
// built-in's text.
func ScenarioText(sc *scenarios.Scenario, arg string) (string, error) {
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
