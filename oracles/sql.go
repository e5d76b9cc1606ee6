package oracles

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/history"
)

var (
	_ Oracle = (*SQLEffects)(nil)
	_ Oracle = (*SQLCounter)(nil)
)

// SQLEffects counts the effects of each key with a query on Postgres,
// either one query per key of the history (PerKey) or one grouped query
// (Grouped, preferred when both are set). Its zero value with URL and a
// query set is usable.
//
// Each Observe opens its own connections and closes them before it
// returns. Sessions are read-only (default_transaction_read_only): a query
// that writes fails.
type SQLEffects struct {
	OracleName string
	// URL is the database, postgres://user:password@host:port/db or a
	// keyword/value string; errors show it without its password.
	URL string
	// PerKey is a query with one parameter, $1 = the key, that returns
	// exactly one row of one integer column, the count, e.g.
	//	SELECT count(*) FROM payments WHERE idempotency_key = $1
	PerKey string
	// Grouped is a query that returns rows of (key text, count integer),
	// e.g.
	//	SELECT idempotency_key, count(*) FROM payments GROUP BY 1
	// Rows of the same key add up; rows with a NULL key are skipped.
	Grouped string
	// Concurrency bounds the per-key queries in flight (and the
	// connections); default 8.
	Concurrency int

	prior allKeys // a grouped read of every key before the load
}

// Name returns the oracle's name.
func (o *SQLEffects) Name() string { return o.OracleName }

// Before reads every key's effects with a grouped query, so that Observe
// can leave out what the run's keys already had and name keys the run
// never sent that gained effects; a per-key query reads nothing before,
// but the database is connected to, so that one out of reach is known
// before the load.
func (o *SQLEffects) Before(ctx context.Context) error {
	if o.Grouped == "" {
		// Nothing to read before, but a database that cannot be reached
		// now stops the run before its load rather than after it.
		db, err := openPostgres(ctx, o.OracleName, o.URL, 1)
		if err != nil {
			return err
		}
		db.close()
		return nil
	}
	all, err := o.grouped(ctx, nil)
	if err != nil {
		return err
	}
	o.prior.keep(all)
	return nil
}

// Observe counts the effects of every key of h. Keys with no effect are left
// out of the observation; with Grouped, so are keys no op of h used (all
// are kept when h is nil).
func (o *SQLEffects) Observe(ctx context.Context, h *history.History) (*history.Reading, error) {
	keys, m, err := effectKeys(h)
	if err != nil {
		return nil, err
	}
	var effects map[string]int
	switch {
	case o.Grouped != "":
		all, err := o.grouped(ctx, nil)
		if err != nil {
			return nil, err
		}
		return m.fold(o.prior.reading(o.OracleName, all, keys))
	case o.PerKey != "":
		effects, err = o.perKey(ctx, keys)
	default:
		return nil, fmt.Errorf("oracle %s: neither a per-key nor a grouped query is configured", o.OracleName)
	}
	return m.fold(effectsObservation(o.OracleName, effects, err))
}

func (o *SQLEffects) perKey(ctx context.Context, keys []string) (map[string]int, error) {
	if len(keys) == 0 {
		return map[string]int{}, nil
	}
	conc := concurrency(o.Concurrency, len(keys))
	db, err := openPostgres(ctx, o.OracleName, o.URL, conc)
	if err != nil {
		return nil, err
	}
	defer db.close()
	return countEach(ctx, o.OracleName, keys, conc, func(ctx context.Context, key string) (int64, error) {
		n, err := queryInt(ctx, db.pool, o.PerKey, key)
		if err != nil {
			return 0, db.fail(o.PerKey, key, err)
		}
		return n, nil
	})
}

func (o *SQLEffects) grouped(ctx context.Context, keys []string) (map[string]int, error) {
	db, err := openPostgres(ctx, o.OracleName, o.URL, 1)
	if err != nil {
		return nil, err
	}
	defer db.close()
	used := keySet(keys)
	effects := make(map[string]int)
	err = func() error {
		rows, err := db.pool.Query(ctx, o.Grouped)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := columns(rows, 2, "(key text, count integer)"); err != nil {
			return err
		}
		var (
			key *string
			n   int64
		)
		_, err = pgx.ForEachRow(rows, []any{&key, &n}, func() error {
			if key != nil && (used == nil || used[*key]) {
				effects[*key] += int(n)
			}
			return nil
		})
		return scanError(err, "(key text, count integer)")
	}()
	if err != nil {
		return nil, db.fail(o.Grouped, "", err)
	}
	for k, n := range effects {
		if n == 0 {
			delete(effects, k)
		}
	}
	return effects, nil
}

// SQLCounter reads one integer with a query on Postgres before and after
// the run (a like count), e.g.
//
//	SELECT likes FROM posts WHERE id = 'post-1'
//
// The query must return exactly one row of one integer column: to read a
// missing row as 0, write SELECT coalesce((SELECT ...), 0). Its zero value
// with URL and Query set is usable. Each reading opens one connection and
// closes it; sessions are read-only. It must not be copied after first use.
type SQLCounter struct {
	OracleName string
	// URL is the database, as for SQLEffects.
	URL   string
	Query string

	reading counterReading
}

// Name returns the oracle's name.
func (o *SQLCounter) Name() string { return o.OracleName }

// Before reads the counter before the load.
func (o *SQLCounter) Before(ctx context.Context) error {
	return o.reading.takeBefore(ctx, o.read)
}

// Observe reads the counter after the run. It fails when Before was not
// called or failed.
func (o *SQLCounter) Observe(ctx context.Context, _ *history.History) (*history.Reading, error) {
	return o.reading.observe(ctx, o.OracleName, o.read)
}

func (o *SQLCounter) read(ctx context.Context) (int64, error) {
	if o.Query == "" {
		return 0, fmt.Errorf("oracle %s: no query configured", o.OracleName)
	}
	db, err := openPostgres(ctx, o.OracleName, o.URL, 1)
	if err != nil {
		return 0, err
	}
	defer db.close()
	n, err := queryInt(ctx, db.pool, o.Query)
	if err != nil {
		return 0, db.fail(o.Query, "", err)
	}
	return n, nil
}

// QueryError is an SQL or Redis oracle read that failed: connecting to the
// store, or a query or command. It names the oracle, the store's URL
// (without its password) and the query or command, and wraps the driver's
// error (a *pgconn.PgError for a query Postgres rejected).
type QueryError struct {
	Oracle string
	// URL is the store's URL without its password.
	URL string
	// Query is the SQL query or the Redis command; "" when connecting
	// failed.
	Query string
	// Key is the value of $1 for a per-key query; "" for the others.
	Key string
	Err error
}

func (e *QueryError) Error() string {
	if e.Query == "" {
		return fmt.Sprintf("oracle %s: %s: connecting: %v", e.Oracle, e.URL, e.Err)
	}
	if e.Key != "" {
		return fmt.Sprintf("oracle %s: %s: query %q with $1 = %q: %v", e.Oracle, e.URL, e.Query, e.Key, e.Err)
	}
	return fmt.Sprintf("oracle %s: %s: query %q: %v", e.Oracle, e.URL, e.Query, e.Err)
}

func (e *QueryError) Unwrap() error { return e.Err }

// postgres is a pool of connections opened for one reading.
type postgres struct {
	oracle, url string // url is redacted
	pool        *pgxpool.Pool
}

// openPostgres opens at most conns connections to rawURL, read-only, and
// checks that one answers.
func openPostgres(ctx context.Context, oracle, rawURL string, conns int) (*postgres, error) {
	if rawURL == "" {
		return nil, fmt.Errorf("oracle %s: no database URL configured", oracle)
	}
	rawURL = lowerScheme(rawURL)
	db := &postgres{oracle: oracle, url: redactDSN(rawURL)}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		// The driver's message quotes the URL, and its own redaction
		// misses passwords with '@' or '#': never pass it on.
		return nil, fmt.Errorf("oracle %s: %s: %w", oracle, db.url, ErrBadURL)
	}
	cfg.MaxConns = int32(max(conns, 1))
	cfg.MinConns, cfg.MinIdleConns = 0, 0
	cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	if db.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, db.fail("", "", err)
	}
	if err := db.pool.Ping(ctx); err != nil {
		db.close()
		return nil, db.fail("", "", err)
	}
	return db, nil
}

func (db *postgres) close() { db.pool.Close() }

func (db *postgres) fail(query, key string, err error) error {
	return &QueryError{Oracle: db.oracle, URL: db.url, Query: query, Key: key, Err: err}
}

// queryInt runs q and returns its one integer: exactly one row of one
// column.
func queryInt(ctx context.Context, pool *pgxpool.Pool, q string, args ...any) (int64, error) {
	rows, err := pool.Query(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	const want = "one integer column"
	if err := columns(rows, 1, want); err != nil {
		return 0, err
	}
	n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, errors.New("the query returned no row, want exactly one (coalesce((SELECT ...), 0) reads a missing row as 0)")
	case errors.Is(err, pgx.ErrTooManyRows):
		return 0, errors.New("the query returned more than one row, want exactly one")
	}
	return n, scanError(err, want)
}

// columns checks that rows has n columns. A query that failed has none: its
// error is returned instead.
func columns(rows pgx.Rows, n int, want string) error {
	got := len(rows.FieldDescriptions())
	if got == n {
		return nil
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	return fmt.Errorf("the query returns %s, %w: want %s", plural(got, "column", "columns"), ErrType, want)
}

// scanError marks an error scanning a value as ErrType.
func scanError(err error, want string) error {
	var se pgx.ScanArgError
	if errors.As(err, &se) {
		return fmt.Errorf("%w: want %s: %w", ErrType, want, err)
	}
	return err
}

// redactDSN is a database or Redis URL (any scheme, any case), or a
// keyword/value connection string, without its password and the values
// secretParams does not keep; a URL that does not parse is masked whole.
func redactDSN(s string) string {
	return secretParams.String(s)
}
