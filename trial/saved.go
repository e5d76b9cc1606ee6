package trial

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/atomicfile"
	"github.com/idemcheck/idemcheck/scenarios"
)

// HistoryFile is the file a saved run or audit keeps its history in.
const HistoryFile = "history.jsonl"

// ErrNoSavedRun is wrapped by SavedDirs's error: the directory holds no
// saved run, nor any directory below it.
var ErrNoSavedRun = errors.New("holds no saved run (history.jsonl)")

// SavedDirs is dir when it holds a saved run (or audit), else its
// subdirectories that do: what 'idemcheck run --out DIR' writes for
// several scenarios, and the demo under its --out.
func SavedDirs(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, HistoryFile)); err == nil {
		return []string{dir}, nil
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*", HistoryFile))
	if len(matches) == 0 {
		return nil, fmt.Errorf("%s %w", dir, ErrNoSavedRun)
	}
	out := make([]string, len(matches))
	for i, m := range matches {
		out[i] = filepath.Dir(m)
	}
	return out, nil
}

// ReadAudit decodes the audit saved in dir; ok is false when dir holds a
// run, not an audit (or no history: the run's reader says so).
func ReadAudit(dir string) (h *history.History, ok bool, err error) {
	path := filepath.Join(dir, HistoryFile)
	if !history.IsAudit(path) {
		return nil, false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, true, err
	}
	defer f.Close()
	if h, err = history.Decode(f); err != nil {
		return nil, true, fmt.Errorf("%s: %w", path, err)
	}
	return h, true, nil
}

// RecheckAudit judges the audit saved in dir again, from its history
// alone, to its scorecard; with failOn, at that failing severity. ok is
// false when dir holds a run, not an audit (ReadAudit).
func RecheckAudit(dir string, failOn *string) (h *history.History, card *checks.Scorecard, ok bool, err error) {
	h, ok, err = ReadAudit(dir)
	if !ok || err != nil {
		return nil, nil, ok, err
	}
	if failOn != nil {
		h.Meta.Judge.FailOn = *failOn
	}
	return h, checks.JudgeContract(h), true, nil
}

// ErrNoHistory is wrapped by SplitRun's error when the directory's
// history cannot be opened.
var ErrNoHistory = errors.New("the history cannot be opened")

// noHistory is the error opening a history: its text, and ErrNoHistory.
type noHistory struct{ err error }

func (e noHistory) Error() string   { return e.err.Error() }
func (e noHistory) Unwrap() []error { return []error{e.err, ErrNoHistory} }

// SplitRun opens the history of the run saved in dir, split into parts of
// partBytes (history.Split); ctx's end stops it. Its errors name the file
// and wrap history's (ErrOldFormat, ErrTruncated, ErrFormat), or
// ErrNoHistory and os's when the file cannot be opened.
func SplitRun(ctx context.Context, dir string, partBytes int64) (*history.Parts, error) {
	path := filepath.Join(dir, HistoryFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, noHistory{err}
	}
	defer f.Close()
	p, err := history.Split(ctx, f, -1, "", partBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// SaveCheckpoint writes h to out/history.jsonl (whole or not at all), as
// an interrupted run's load is saved before its state is read; no link
// below base (the --out given) is followed. It returns the file's path.
func SaveCheckpoint(base, out string, h *history.History) (string, error) {
	path := filepath.Join(out, HistoryFile)
	err := NoSymlinkBelow(base, out)
	if err == nil {
		err = os.MkdirAll(out, 0o755)
	}
	if err == nil {
		err = atomicfile.Write(path, func(f *os.File) error { return history.Encode(f, h) })
	}
	return path, err
}

// ParseShardArg parses a --shard argument: i/N, or auto/N with i from
// JOB_COMPLETION_INDEX in getenv (a Kubernetes Indexed Job); with a nil
// getenv, auto/N is only checked (as 0/N).
func ParseShardArg(s string, getenv func(string) string) (history.Shard, error) {
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

// Recheck judges the run saved in dir again, from its history alone, in
// parts of partBytes (one part of its keys in memory at a time): with sc,
// against sc's expectation, invariants and thresholds instead of those
// saved; with failOn, at that failing severity. Its errors are
// SplitRun's, ctx's, or name the history.
func Recheck(ctx context.Context, dir string, sc *scenarios.Scenario, failOn *string, partBytes int64) (*Judged, error) {
	p, err := SplitRun(ctx, dir, partBytes)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	meta := p.Meta
	if sc != nil {
		keep := meta.Judge.FailOn
		meta.Judge = JudgeOf(sc)
		meta.Judge.FailOn = keep
	}
	if failOn != nil {
		meta.Judge.FailOn = *failOn
	}
	j, err := JudgeParts(ctx, p, meta)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, HistoryFile), err)
	}
	return j, nil
}
