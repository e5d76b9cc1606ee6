package lab

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresLedger is a Ledger in PostgreSQL, the lab's source of truth. A key
// record and its ledger row are written in one transaction (CompleteCharge),
// and unique constraints hold the line where code could race:
//
//	idempotency_keys  PRIMARY KEY (user_id, key)      one live record per scoped key
//	payments          UNIQUE (key_ref)                at most one ledger row per key record
//	like_ops          UNIQUE (post_id, op_id) WHERE dedup   one counted like per op id
//	debits            PRIMARY KEY (account_id, version)     one debit per account version
//
// Every table lives in one schema (PostgresSchema; default public), created
// with the schema on start. It is safe for concurrent use.
type PostgresLedger struct {
	pool   *pgxpool.Pool
	schema string
}

// PostgresOption configures NewPostgresLedger.
type PostgresOption func(*pgOptions)

type pgOptions struct {
	schema   string
	maxConns int32
}

// PostgresSchema puts the lab's tables in schema name (created if missing)
// instead of public, so that labs, or tests, sharing a database do not share
// data. The name must be a plain lower-case identifier.
func PostgresSchema(name string) PostgresOption {
	return func(o *pgOptions) { o.schema = name }
}

// PostgresMaxConns caps the connection pool (default: pgxpool's, or the
// URL's pool_max_conns).
func PostgresMaxConns(n int32) PostgresOption {
	return func(o *pgOptions) { o.maxConns = n }
}

// pgConnectTimeout bounds each connection attempt when the URL sets no
// connect_timeout, so an unreachable server fails fast (fail closed).
const pgConnectTimeout = 5 * time.Second

var pgIdent = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// NewPostgresLedger connects to the database at url (postgres://...),
// creates the lab's schema and tables if missing, and returns the ledger.
// Close it when done.
func NewPostgresLedger(ctx context.Context, url string, opts ...PostgresOption) (*PostgresLedger, error) {
	o := pgOptions{schema: "public"}
	for _, opt := range opts {
		opt(&o)
	}
	if !pgIdent.MatchString(o.schema) {
		return nil, fmt.Errorf("postgres ledger: schema %q: want a lower-case identifier ([a-z_][a-z0-9_]*)", o.schema)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = pgConnectTimeout
	}
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	}
	// Every connection resolves the lab's table names in its schema.
	cfg.ConnConfig.RuntimeParams["search_path"] = o.schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: %w", err)
	}
	l := &PostgresLedger{pool: pool, schema: o.schema}
	if err := l.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return l, nil
}

// Close closes the connection pool.
func (l *PostgresLedger) Close() { l.pool.Close() }

// Schema returns the schema holding the lab's tables.
func (l *PostgresLedger) Schema() string { return l.schema }

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

const keyColumns = `user_id, key, fingerprint, status, response_status, response, charge_id, owner, expires_at`

// scanKey reads a row of keyColumns.
func scanKey(row pgx.Row) (KeyRecord, error) {
	var (
		rec    KeyRecord
		state  string
		status *int32
		body   []byte
	)
	err := row.Scan(&rec.ID.User, &rec.ID.Key, &rec.Fingerprint, &state, &status, &body,
		&rec.ChargeID, &rec.Owner, &rec.ExpiresAt)
	if err != nil {
		return KeyRecord{}, err
	}
	rec.State = KeyState(state)
	if status != nil {
		rec.Response = &Response{Status: int(*status), Body: body}
	}
	rec.ExpiresAt = rec.ExpiresAt.UTC()
	return rec, nil
}

// keyArgs returns rec as the arguments $1..$10 of the key statements below:
// keyColumns, then locked_at.
func keyArgs(rec KeyRecord, now time.Time) []any {
	var status *int32
	var body []byte
	if rec.Response != nil {
		s := int32(rec.Response.Status)
		status = &s
		body = rec.Response.Body
	}
	var lockedAt *time.Time
	if rec.State == KeyInFlight {
		lockedAt = &now
	}
	return []any{rec.ID.User, rec.ID.Key, rec.Fingerprint, string(rec.State), status, body,
		rec.ChargeID, rec.Owner, rec.ExpiresAt, lockedAt}
}

// BeginKey implements Payments: one INSERT ... ON CONFLICT DO UPDATE that
// replaces only an expired record, then a SELECT of the live record that
// won. A record deleted between the two statements is retried.
func (l *PostgresLedger) BeginKey(ctx context.Context, rec KeyRecord, now time.Time) (KeyRecord, bool, error) {
	const upsert = `
INSERT INTO idempotency_keys AS k (` + keyColumns + `, locked_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (user_id, key) DO UPDATE SET
	ref = nextval('key_refs'),
	fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status,
	response_status = EXCLUDED.response_status, response = EXCLUDED.response,
	charge_id = EXCLUDED.charge_id, owner = EXCLUDED.owner,
	locked_at = EXCLUDED.locked_at, expires_at = EXCLUDED.expires_at
WHERE k.expires_at <= $11
RETURNING ` + keyColumns
	const live = `SELECT ` + keyColumns + ` FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND expires_at > $3`
	for try := 0; try < 5; try++ {
		got, err := scanKey(l.pool.QueryRow(ctx, upsert, append(keyArgs(rec, now), now)...))
		if err == nil {
			return got, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return KeyRecord{}, false, fmt.Errorf("postgres ledger: begin key: %w", err)
		}
		got, err = scanKey(l.pool.QueryRow(ctx, live, rec.ID.User, rec.ID.Key, now))
		if err == nil {
			return got, false, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return KeyRecord{}, false, fmt.Errorf("postgres ledger: begin key: %w", err)
		}
	}
	return KeyRecord{}, false, fmt.Errorf("postgres ledger: begin key %q: record kept changing, gave up", rec.ID.Key)
}

// LookupKey implements Payments.
func (l *PostgresLedger) LookupKey(ctx context.Context, id KeyID, now time.Time) (KeyRecord, bool, error) {
	rec, err := scanKey(l.pool.QueryRow(ctx,
		`SELECT `+keyColumns+` FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND expires_at > $3`,
		id.User, id.Key, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return KeyRecord{}, false, nil
	}
	if err != nil {
		return KeyRecord{}, false, fmt.Errorf("postgres ledger: lookup key: %w", err)
	}
	return rec, true, nil
}

// PutKey implements Payments. The record gets a new ref: it is a new
// generation that may produce its own ledger row. An in-flight record's
// locked_at is the server's clock (PutKey is given none).
func (l *PostgresLedger) PutKey(ctx context.Context, rec KeyRecord) error {
	_, err := l.pool.Exec(ctx, `
INSERT INTO idempotency_keys AS k (`+keyColumns+`, locked_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, CASE WHEN $4 = 'in_flight' THEN now() END)
ON CONFLICT (user_id, key) DO UPDATE SET
	ref = nextval('key_refs'),
	fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status,
	response_status = EXCLUDED.response_status, response = EXCLUDED.response,
	charge_id = EXCLUDED.charge_id, owner = EXCLUDED.owner,
	locked_at = EXCLUDED.locked_at, expires_at = EXCLUDED.expires_at`,
		keyArgs(rec, time.Time{})[:9]...)
	if err != nil {
		return fmt.Errorf("postgres ledger: put key: %w", err)
	}
	return nil
}

// ReleaseKey implements Payments.
func (l *PostgresLedger) ReleaseKey(ctx context.Context, id KeyID, owner string) error {
	var held bool
	err := l.pool.QueryRow(ctx, `
WITH del AS (
	DELETE FROM idempotency_keys
	WHERE user_id = $1 AND key = $2 AND status = 'in_flight' AND owner = $3
	RETURNING 1
)
SELECT NOT EXISTS (SELECT 1 FROM del)
   AND EXISTS (SELECT 1 FROM idempotency_keys WHERE user_id = $1 AND key = $2)`,
		id.User, id.Key, owner).Scan(&held)
	if err != nil {
		return fmt.Errorf("postgres ledger: release key: %w", err)
	}
	if held {
		return ErrKeyLost
	}
	return nil
}

// CompleteCharge implements Payments: in one transaction, upsert the key
// record (only if it is rec.Owner's, unless rec.Owner is "") and insert the
// ledger row carrying the record's ref. Both or neither.
func (l *PostgresLedger) CompleteCharge(ctx context.Context, rec KeyRecord, ch Charge) error {
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		// With an owner, the record keeps its ref (the generation BeginKey
		// made); without one, the write is a new generation.
		var ref int64
		err := tx.QueryRow(ctx, `
INSERT INTO idempotency_keys AS k (`+keyColumns+`, locked_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (user_id, key) DO UPDATE SET
	ref = CASE WHEN EXCLUDED.owner = '' THEN nextval('key_refs') ELSE k.ref END,
	fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status,
	response_status = EXCLUDED.response_status, response = EXCLUDED.response,
	charge_id = EXCLUDED.charge_id, owner = EXCLUDED.owner,
	locked_at = EXCLUDED.locked_at, expires_at = EXCLUDED.expires_at
WHERE EXCLUDED.owner = '' OR k.owner = EXCLUDED.owner
RETURNING ref`, keyArgs(rec, ch.Created)...).Scan(&ref)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrKeyLost
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
INSERT INTO payments (id, idempotency_key, user_id, key_ref, amount, currency, customer, status, created)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			ch.ID, ch.IdempotencyKey, ch.User, ref, ch.Amount, ch.Currency, ch.Customer, ch.Status, ch.Created)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "payments_key_ref_key" {
			// This record generation already produced its ledger row.
			return ErrKeyLost
		}
		return err
	})
	if errors.Is(err, ErrKeyLost) {
		return ErrKeyLost
	}
	if err != nil {
		return fmt.Errorf("postgres ledger: complete charge: %w", err)
	}
	return nil
}

// InsertCharge implements Payments.
func (l *PostgresLedger) InsertCharge(ctx context.Context, ch Charge) error {
	_, err := l.pool.Exec(ctx, `
INSERT INTO payments (id, idempotency_key, user_id, amount, currency, customer, status, created)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		ch.ID, ch.IdempotencyKey, ch.User, ch.Amount, ch.Currency, ch.Customer, ch.Status, ch.Created)
	if err != nil {
		return fmt.Errorf("postgres ledger: insert charge: %w", err)
	}
	return nil
}

// NextChargeID implements Payments with a sequence.
func (l *PostgresLedger) NextChargeID(ctx context.Context) (string, error) {
	var n int64
	if err := l.pool.QueryRow(ctx, `SELECT nextval('charge_ids')`).Scan(&n); err != nil {
		return "", fmt.Errorf("postgres ledger: next charge id: %w", err)
	}
	return fmt.Sprintf("ch_%d", n), nil
}

// ChargesByKey implements Payments.
func (l *PostgresLedger) ChargesByKey(ctx context.Context, key string) ([]Charge, error) {
	rows, err := l.pool.Query(ctx, `
SELECT id, idempotency_key, user_id, amount, currency, customer, status, created
FROM payments WHERE idempotency_key = $1 ORDER BY seq`, key)
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: charges by key: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Charge, error) {
		var ch Charge
		err := row.Scan(&ch.ID, &ch.IdempotencyKey, &ch.User, &ch.Amount, &ch.Currency, &ch.Customer, &ch.Status, &ch.Created)
		ch.Created = ch.Created.UTC()
		return ch, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: charges by key: %w", err)
	}
	if out == nil {
		out = []Charge{}
	}
	return out, nil
}

// ChargeCounts implements Payments.
func (l *PostgresLedger) ChargeCounts(ctx context.Context) (map[string]int, error) {
	rows, err := l.pool.Query(ctx, `
SELECT idempotency_key, count(*) FROM payments WHERE idempotency_key <> '' GROUP BY idempotency_key`)
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: charge counts: %w", err)
	}
	out := map[string]int{}
	var (
		key string
		n   int
	)
	_, err = pgx.ForEachRow(rows, []any{&key, &n}, func() error {
		out[key] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: charge counts: %w", err)
	}
	return out, nil
}

// PutAccount implements Accounts.
func (l *PostgresLedger) PutAccount(ctx context.Context, id string, balance int64) (Account, error) {
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
INSERT INTO accounts (id, balance, version) VALUES ($1, $2, 0)
ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance, version = 0`, id, balance); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM debits WHERE account_id = $1`, id)
		return err
	})
	if err != nil {
		return Account{}, fmt.Errorf("postgres ledger: put account: %w", err)
	}
	return Account{ID: id, Balance: balance}, nil
}

// Account implements Accounts.
func (l *PostgresLedger) Account(ctx context.Context, id string) (Account, error) {
	a := Account{ID: id}
	err := l.pool.QueryRow(ctx, `SELECT balance, version FROM accounts WHERE id = $1`, id).Scan(&a.Balance, &a.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return Account{}, ErrNotFound
	}
	if err != nil {
		return Account{}, fmt.Errorf("postgres ledger: account: %w", err)
	}
	return a, nil
}

// Debit implements Accounts: in one transaction, lock the account row,
// check it, then UPDATE accounts SET balance = balance - $a, version =
// version + 1 and append the debit log row.
func (l *PostgresLedger) Debit(ctx context.Context, id string, amount int64, expectedVersion *int64, opID string) (Account, error) {
	a := Account{ID: id}
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT balance, version FROM accounts WHERE id = $1 FOR UPDATE`, id).Scan(&a.Balance, &a.Version)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if expectedVersion != nil && *expectedVersion != a.Version {
			return &StaleError{Current: a.Version}
		}
		if a.Balance < amount {
			return ErrInsufficientFunds
		}
		err = tx.QueryRow(ctx, `
UPDATE accounts SET balance = balance - $2, version = version + 1 WHERE id = $1
RETURNING balance, version`, id, amount).Scan(&a.Balance, &a.Version)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO debits (account_id, version, op_id, amount) VALUES ($1, $2, $3, $4)`,
			id, a.Version, opID, amount)
		return err
	})
	var stale *StaleError
	switch {
	case errors.As(err, &stale):
		return Account{}, stale
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrInsufficientFunds):
		return Account{}, err
	case err != nil:
		return Account{}, fmt.Errorf("postgres ledger: debit: %w", err)
	}
	return a, nil
}

// Debits implements Accounts, in one statement (a consistent snapshot).
func (l *PostgresLedger) Debits(ctx context.Context, id string) ([]Debit, error) {
	rows, err := l.pool.Query(ctx, `
SELECT d.op_id, d.amount, d.version
FROM accounts a LEFT JOIN debits d ON d.account_id = a.id
WHERE a.id = $1 ORDER BY d.version`, id)
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: debits: %w", err)
	}
	found := false
	out := []Debit{}
	var (
		op      *string
		amount  *int64
		version *int64
	)
	_, err = pgx.ForEachRow(rows, []any{&op, &amount, &version}, func() error {
		found = true
		if op != nil {
			out = append(out, Debit{OpID: *op, Amount: *amount, Version: *version})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres ledger: debits: %w", err)
	}
	if !found {
		return nil, ErrNotFound
	}
	return out, nil
}

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

// Reset implements Ledger. The sequences keep counting.
func (l *PostgresLedger) Reset(ctx context.Context) error {
	_, err := l.pool.Exec(ctx, `TRUNCATE idempotency_keys, payments, accounts, debits, posts, like_ops`)
	if err != nil {
		return fmt.Errorf("postgres ledger: reset: %w", err)
	}
	return nil
}

var _ Ledger = (*PostgresLedger)(nil)
