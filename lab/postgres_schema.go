package lab

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// pgSchema creates the lab's tables in the current schema (search_path).
// Times are the caller's clock, passed in, never the server's now().
const pgSchema = `
CREATE SEQUENCE IF NOT EXISTS charge_ids;
CREATE SEQUENCE IF NOT EXISTS key_refs;

-- One record per scoped key. ref names one generation of the record: a
-- record replaced after it expired (or overwritten without an owner) gets
-- a new ref, so it may produce a new ledger row.
CREATE TABLE IF NOT EXISTS idempotency_keys (
	user_id         text        NOT NULL,
	key             text        NOT NULL,
	ref             bigint      NOT NULL DEFAULT nextval('key_refs'),
	fingerprint     text        NOT NULL,
	status          text        NOT NULL CHECK (status IN ('in_flight', 'completed')),
	response_status integer,     -- NULL: no stored response
	response        bytea,
	charge_id       text        NOT NULL DEFAULT '',
	owner           text        NOT NULL DEFAULT '',
	locked_at       timestamptz, -- set while in flight
	expires_at      timestamptz NOT NULL,
	PRIMARY KEY (user_id, key)
);

-- The ledger. key_ref is the idempotency_keys.ref that produced the row
-- (NULL for charges written without a key record): one row per record.
CREATE TABLE IF NOT EXISTS payments (
	seq             bigserial   PRIMARY KEY,
	id              text        NOT NULL UNIQUE,
	idempotency_key text        NOT NULL DEFAULT '',
	user_id         text        NOT NULL,
	key_ref         bigint      UNIQUE,
	amount          bigint      NOT NULL,
	currency        text        NOT NULL,
	customer        text        NOT NULL,
	status          text        NOT NULL,
	created         timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS payments_idempotency_key ON payments (idempotency_key);

CREATE TABLE IF NOT EXISTS accounts (
	id      text   PRIMARY KEY,
	balance bigint NOT NULL,
	version bigint NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS debits (
	account_id text   NOT NULL,
	version    bigint NOT NULL,
	op_id      text   NOT NULL,
	amount     bigint NOT NULL,
	PRIMARY KEY (account_id, version)
);

CREATE TABLE IF NOT EXISTS posts (
	id    text   PRIMARY KEY,
	likes bigint NOT NULL DEFAULT 0
);

-- dedup rows are unique per (post, op id); rows written without dedup (the
-- naive endpoint) are a plain log.
CREATE TABLE IF NOT EXISTS like_ops (
	seq     bigserial PRIMARY KEY,
	post_id text      NOT NULL,
	op_id   text      NOT NULL,
	dedup   boolean   NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS like_ops_dedup ON like_ops (post_id, op_id) WHERE dedup;
CREATE INDEX IF NOT EXISTS like_ops_op ON like_ops (post_id, op_id);

-- customers as webhook events set them; the events applied, by id
CREATE TABLE IF NOT EXISTS customers (
	id      text   PRIMARY KEY,
	name    text   NOT NULL,
	version bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS customer_events (
	event_id    text PRIMARY KEY,
	customer_id text NOT NULL
);
`

// migrate creates the schema and tables, serialised by an advisory lock so
// that labs starting together do not race on CREATE ... IF NOT EXISTS.
func (l *PostgresLedger) migrate(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('idemcheck.lab.schema'))`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{l.schema}.Sanitize()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, pgSchema)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres ledger: create schema %s: %w", l.schema, err)
	}
	return nil
}
