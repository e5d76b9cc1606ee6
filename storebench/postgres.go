package storebench

import (
	"github.com/idemcheck/idemcheck/internal/dsn"

	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresPrimitives name the Postgres primitives in the order they run:
//
//	insert_on_conflict   INSERT … ON CONFLICT DO NOTHING RETURNING: take a new key
//	key_ledger_tx        BEGIN; take the key; insert the ledger row; complete the key with its response; COMMIT
var PostgresPrimitives = []string{"insert_on_conflict", "key_ledger_tx"}

// PostgresResult is what Postgres measured.
type PostgresResult struct {
	Primitives []Primitive `json:"primitives"`
	// BytesPerRecord is the key table's total size (heap, TOAST and
	// indexes) over its rows, after the run.
	BytesPerRecord int64 `json:"bytes_per_record"`
}

// Postgres measures the Postgres server at url. It creates a schema of its
// own, writes only there, and drops it before returning.
func Postgres(ctx context.Context, url string, o Options) (res *PostgresResult, err error) {
	o = o.defaults()
	cfg, err := pgxpool.ParseConfig(dsn.LowerScheme(url))
	if err != nil {
		// the driver's message may quote the password: never pass it on
		return nil, fmt.Errorf("postgres: %w: %s", ErrURL, urlProblem(url, err))
	}
	cfg.MaxConns = int32(slices.Max(o.Concurrency) + 2)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	defer pool.Close()
	schema := namespace()
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(ctx, `CREATE SCHEMA `+ident+`;
CREATE TABLE `+ident+`.keys (
	user_id text NOT NULL, key text NOT NULL, fingerprint text NOT NULL,
	state text NOT NULL, response bytea, charge_id bigint,
	expires_at timestamptz NOT NULL, PRIMARY KEY (user_id, key));
CREATE TABLE `+ident+`.ledger (
	id bigserial PRIMARY KEY, key text NOT NULL, amount bigint NOT NULL,
	created timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("postgres: create schema: %w", err)
	}
	defer func() {
		if _, derr := pool.Exec(context.WithoutCancel(ctx), `DROP SCHEMA `+ident+` CASCADE`); derr != nil && err == nil {
			err = fmt.Errorf("postgres: drop schema %s: %w", schema, derr)
		}
	}()
	val := body(o.ValueSize)
	fp := fingerprint(val)
	step := 0 // a new key space per step
	key := func(name string, w, seq int) string {
		return name + ":" + strconv.Itoa(step) + ":" + strconv.Itoa(w) + ":" + strconv.Itoa(seq)
	}
	insertKey := `INSERT INTO ` + ident + `.keys (user_id, key, fingerprint, state, expires_at)
VALUES ('alice', $1, $2, 'in_flight', now() + interval '1 minute')
ON CONFLICT DO NOTHING RETURNING key`
	ops := map[string]func(ctx context.Context, w, seq int) error{
		"insert_on_conflict": func(ctx context.Context, w, seq int) error {
			var k string
			return pool.QueryRow(ctx, insertKey, key("ioc", w, seq), fp).Scan(&k)
		},
		"key_ledger_tx": func(ctx context.Context, w, seq int) error {
			k := key("tx", w, seq)
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				var got string
				if err := tx.QueryRow(ctx, insertKey, k, fp).Scan(&got); err != nil {
					return err
				}
				var id int64
				if err := tx.QueryRow(ctx, `INSERT INTO `+ident+`.ledger (key, amount) VALUES ($1, 100) RETURNING id`, k).Scan(&id); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `UPDATE `+ident+`.keys SET state = 'completed', response = $3, charge_id = $4,
	expires_at = now() + interval '24 hours' WHERE user_id = 'alice' AND key = $1 AND fingerprint = $2`, k, fp, val, id)
				return err
			})
		},
	}
	res = &PostgresResult{}
	for _, name := range PostgresPrimitives {
		for _, conc := range o.Concurrency {
			if o.OnStep != nil {
				o.OnStep("postgres", name, conc)
			}
			p, err := measure(ctx, name, conc, o.Duration, opBound, ops[name])
			if err != nil {
				return nil, fmt.Errorf("postgres: %w", err)
			}
			res.Primitives = append(res.Primitives, p)
			step++
		}
	}
	if res.BytesPerRecord, err = pgRecordSize(ctx, pool, ident, fp, val); err != nil {
		return nil, err
	}
	return res, ctx.Err()
}

// pgSampleRows is how many completed key records pgRecordSize writes.
const pgSampleRows = 10000

// pgRecordSize fills a fresh copy of the key table with completed records
// and returns its total size (heap, TOAST, indexes) per row.
func pgRecordSize(ctx context.Context, pool *pgxpool.Pool, ident, fp string, val []byte) (int64, error) {
	var size int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE `+ident+`.keys_sample (LIKE `+ident+`.keys INCLUDING ALL)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+ident+`.keys_sample
SELECT 'alice', gen_random_uuid()::text, $1, 'completed', $2, g, now() + interval '24 hours'
FROM generate_series(1, `+strconv.Itoa(pgSampleRows)+`) g`, fp, val); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT pg_total_relation_size('`+ident+`.keys_sample')`).Scan(&size)
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: record size: %w", err)
	}
	return size / pgSampleRows, nil
}
