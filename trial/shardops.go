package trial

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/runner"
)

// ErrShardTwice is wrapped by CollectShards' error when one shard's
// history is in two of its directories (report merge given a copy):
// which one to judge is no choice to make silently.
var ErrShardTwice = errors.New("a shard's history given twice")

// notTwice returns an error wrapping ErrShardTwice when path, shard s's
// file in another directory, exists beside found and is not the same
// file (the same directory given twice, or through a link, is).
func notTwice(m *Manifest, s history.Shard, found, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil // not there: a file that cannot be read is not a second copy
	}
	if ffi, err := os.Stat(found); err == nil && os.SameFile(fi, ffi) {
		return nil
	}
	return &kindError{fmt.Errorf("%w: shard %s of run %s is in two directories: %s and %s", ErrShardFile, s, m.RunID, found, path), ErrShardTwice}
}

// checkShardOps checks that each shard file in set holds its shard's own
// ops, not another's under an edited header: shard i of n made the run's
// ops i, i+n, i+2n, …, and the k-th op of its file must have the key and
// user the run's seed gives op i+kn (runner.Keys), never a key the target
// gave. When the scenario's keys read the environment, which may differ
// from one process to another, only the users are checked. An op that is
// not the shard's is an error wrapping ErrShardFile, naming the file.
func (t *Trial) checkShardOps(ctx context.Context, m *Manifest, set *ShardSet) error {
	keys, err := runner.NewKeys(t.sc, m.Seed, m.KeyNonce, t.opts.Getenv)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrConfig, t.sc.Name, err)
	}
	// A render is bounded on its own; an interruption must not make a
	// key fail to render, and so differ.
	ctx = context.WithoutCancel(ctx)
	for _, path := range set.Files {
		meta, _, err := history.ShardEnds(path)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrShardFile, path, err)
		}
		s := meta.Shard
		_, err = history.FileOps(path, func(op history.Op) error {
			g := s.Global(op.ID)
			want := keys.Op(ctx, g)
			if op.User != want.User || (!keys.FromEnv() && op.Key != want.Key) {
				return fmt.Errorf("%w: %s: its op %d is not the run's op %d, which shard %s makes: its key or user is not the one the run's seed gives (the file holds another shard's ops, or another run's, under an edited header)",
					ErrShardFile, path, op.ID, g, s)
			}
			return nil
		})
		switch {
		case errors.Is(err, ErrShardFile):
			return err
		case err != nil:
			return fmt.Errorf("%w: %s: %w", ErrShardFile, filepath.Clean(path), err)
		}
	}
	return nil
}
