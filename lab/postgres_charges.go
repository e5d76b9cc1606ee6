package lab

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

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
