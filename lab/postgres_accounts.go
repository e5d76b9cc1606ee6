package lab

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

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
