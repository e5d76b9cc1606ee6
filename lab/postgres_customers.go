package lab

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ApplyCustomerEvent implements Customers: in one transaction, the event
// id inserted (dedup: ON CONFLICT DO NOTHING, and nothing more when it was
// there), then the customer upserted, only over an older version when
// ordered.
func (l *PostgresLedger) ApplyCustomerEvent(ctx context.Context, eventID, customer string, version int64, name string, dedup, ordered bool) (bool, Customer, error) {
	c := Customer{ID: customer}
	applied := true
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if dedup {
			tag, err := tx.Exec(ctx, `INSERT INTO customer_events (event_id, customer_id) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING`, eventID, customer)
			if err != nil {
				return err
			}
			applied = tag.RowsAffected() == 1
		}
		if applied {
			upsert := `
INSERT INTO customers (id, name, version) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET name = excluded.name, version = excluded.version`
			if ordered {
				upsert += ` WHERE customers.version < excluded.version`
			}
			if _, err := tx.Exec(ctx, upsert, customer, name, version); err != nil {
				return err
			}
		}
		err := tx.QueryRow(ctx, `SELECT name, version FROM customers WHERE id = $1`, customer).Scan(&c.Name, &c.Version)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return false, Customer{}, fmt.Errorf("postgres ledger: apply customer event: %w", err)
	}
	return applied, c, nil
}

// Customer implements Customers.
func (l *PostgresLedger) Customer(ctx context.Context, id string) (Customer, bool, error) {
	c := Customer{ID: id}
	err := l.pool.QueryRow(ctx, `SELECT name, version FROM customers WHERE id = $1`, id).Scan(&c.Name, &c.Version)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Customer{}, false, nil
	case err != nil:
		return Customer{}, false, fmt.Errorf("postgres ledger: customer: %w", err)
	}
	return c, true, nil
}
