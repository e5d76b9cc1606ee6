package lab

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

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
	schema string
}

// PostgresSchema puts the lab's tables in schema name (created if missing)
// instead of public, so that labs, or tests, sharing a database do not share
// data. The name must be a plain lower-case identifier.
func PostgresSchema(name string) PostgresOption {
	return func(o *pgOptions) { o.schema = name }
}

// DefaultPostgresMaxConns is the Postgres ledger's pool size unless the
// URL's pool_max_conns sets another. pgxpool's own
// default, max(4, CPUs), queues a protected charge (two transactions) behind
// others on a small machine, and takes a connection per core on a large
// one, so that many labs on one server run out of connections.
const DefaultPostgresMaxConns = 16

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
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultPostgresMaxConns
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

// Reset implements Ledger. The sequences keep counting.
func (l *PostgresLedger) Reset(ctx context.Context) error {
	_, err := l.pool.Exec(ctx, `TRUNCATE idempotency_keys, payments, accounts, debits, posts, like_ops, customers, customer_events`)
	if err != nil {
		return fmt.Errorf("postgres ledger: reset: %w", err)
	}
	return nil
}

var _ Ledger = (*PostgresLedger)(nil)
