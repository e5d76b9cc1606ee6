package lab

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Like implements Posts. With dedup, in one transaction: INSERT INTO
// like_ops ... ON CONFLICT DO NOTHING (the partial unique index), then the
// increment only if the op was inserted.
func (l *PostgresLedger) Like(ctx context.Context, post, opID string, dedup bool) (Post, error) {
	p := Post{ID: post}
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		count := true
		switch {
		case dedup:
			tag, err := tx.Exec(ctx, `
INSERT INTO like_ops (post_id, op_id, dedup) VALUES ($1, $2, true)
ON CONFLICT (post_id, op_id) WHERE dedup DO NOTHING`, post, opID)
			if err != nil {
				return err
			}
			count = tag.RowsAffected() == 1
		case opID != "":
			if _, err := tx.Exec(ctx, `INSERT INTO like_ops (post_id, op_id, dedup) VALUES ($1, $2, false)`, post, opID); err != nil {
				return err
			}
		}
		if !count {
			err := tx.QueryRow(ctx, `SELECT likes FROM posts WHERE id = $1`, post).Scan(&p.Likes)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}
		return tx.QueryRow(ctx, `
INSERT INTO posts (id, likes) VALUES ($1, 1)
ON CONFLICT (id) DO UPDATE SET likes = posts.likes + 1
RETURNING likes`, post).Scan(&p.Likes)
	})
	if err != nil {
		return Post{}, fmt.Errorf("postgres ledger: like: %w", err)
	}
	return p, nil
}

// HasLikeOp implements Posts.
func (l *PostgresLedger) HasLikeOp(ctx context.Context, post, opID string) (bool, error) {
	var ok bool
	err := l.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM like_ops WHERE post_id = $1 AND op_id = $2)`, post, opID).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("postgres ledger: has like op: %w", err)
	}
	return ok, nil
}

// Post implements Posts.
func (l *PostgresLedger) Post(ctx context.Context, id string) (Post, error) {
	p := Post{ID: id}
	err := l.pool.QueryRow(ctx, `SELECT likes FROM posts WHERE id = $1`, id).Scan(&p.Likes)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Post{}, fmt.Errorf("postgres ledger: post: %w", err)
	}
	return p, nil
}
