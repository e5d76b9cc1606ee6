package lab

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	redaction "github.com/idemcheck/idemcheck/internal/redact"
)

// Backends names where the lab keeps its state, as the lab command's
// --store, --ledger and --namespace flags write it.
type Backends struct {
	// Store is the idempotency store: "memory", or a redis:// or rediss://
	// URL in any case.
	Store string
	// Ledger is the ledger: "memory", a postgres:// or postgresql:// URL
	// in any case, or a key=value DSN. The Postgres pool is
	// DefaultPostgresMaxConns unless the URL's pool_max_conns says
	// otherwise.
	Ledger string
	// Namespace, when set, keeps the lab's data apart on shared servers:
	// a Postgres schema and a Redis key prefix of that name (lowercase
	// letters, digits and _).
	Namespace string
	// Consumer, when set, is the broker the lab's queue consumers read:
	// a redis://, nats://, amqp:// or kafka:// URL (StartConsumers).
	Consumer string
}

// ConfigError is a value of Backends that cannot be used: a URL of
// another kind or one that does not parse, or a bad namespace. Open
// returns it before connecting to anything. Its message never quotes a
// secret.
type ConfigError struct {
	// Field is "store", "ledger" or "namespace".
	Field string
	// Value is the value as a message may show it: a URL redacted, a
	// namespace quoted.
	Value string
	// Problem says what is wrong and what is wanted.
	Problem string
}

func (e *ConfigError) Error() string { return e.Field + " " + e.Value + ": " + e.Problem }

// Hint shows a value that works.
func (e *ConfigError) Hint() string {
	return map[string]string{
		"namespace": "e.g. --namespace lab_ci_1",
		"ledger":    "e.g. --ledger postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable, or host=127.0.0.1 user=postgres dbname=postgres",
		"store":     "e.g. --store redis://127.0.0.1:6379/0 (a password: redis://:PASSWORD@host:6379/0)",
		"consumer":  "e.g. --consumer redis://127.0.0.1:6379/0: the Redis whose streams the consumers read",
	}[e.Field]
}

// ConnectError is a store or a ledger that Open could not connect to or
// set up. Its message is the driver's, scrubbed of every secret the URL
// holds; the driver's error is not kept, since its message is what would
// leak.
type ConnectError struct {
	// Backend is "store" or "ledger".
	Backend string
	msg     string
}

func (e *ConnectError) Error() string { return "lab " + e.Backend + ": " + e.msg }

// Hint says what to check.
func (e *ConnectError) Hint() string {
	return map[string]string{
		"ledger":   "is Postgres running and the URL right? e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"store":    "is Redis running and the URL right? e.g. redis://127.0.0.1:6379/0",
		"consumer": "is Redis running and the URL right? e.g. --consumer redis://127.0.0.1:6379/0",
	}[e.Backend]
}

// Open connects to the backends b names and returns n labs on them
// (n < 1 means 1): instances of one service, sharing the store, the
// ledger and, when there are several, one card processor (unless
// cfg.Processor names one). closeBackends closes the backends once the labs are
// done. A bad value in b is a *ConfigError, a backend that cannot be
// reached a *ConnectError, an unknown bug in cfg ErrUnknownBug.
func Open(ctx context.Context, cfg Config, b Backends, n int) (labs []*Server, closeBackends func(), err error) {
	n = max(n, 1)
	if n > 1 && cfg.Processor == nil {
		cfg.Processor = NewProcessor(cfg.ProcessorLatency, cfg.Clock)
	}
	var pgOpts []PostgresOption
	var redisOpts []RedisOption
	if b.Namespace != "" {
		if !validNamespace(b.Namespace) {
			return nil, nil, &ConfigError{Field: "namespace", Value: strconv.Quote(b.Namespace), Problem: "use lowercase letters, digits and _"}
		}
		pgOpts = append(pgOpts, PostgresSchema(b.Namespace))
		redisOpts = append(redisOpts, RedisPrefix(DefaultRedisPrefix+b.Namespace+":"))
	}
	// Both are parsed before anything connects, so a URL that does not
	// parse is a ConfigError, and no message ever quotes one: a driver's
	// error is scrubbed of every secret the URL holds.
	ledgerConn, ledgerSecrets, err := ledgerURL(b.Ledger)
	if err != nil {
		return nil, nil, err
	}
	storeConn, storeSecrets, err := storeURL(b.Store)
	if err != nil {
		return nil, nil, err
	}
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	var l Ledger
	if ledgerConn == "" {
		l = NewMemoryLedger()
	} else {
		pg, err := NewPostgresLedger(ctx, ledgerConn, pgOpts...)
		if err != nil {
			return nil, nil, &ConnectError{Backend: "ledger", msg: ledgerSecrets.Scrub(err.Error())}
		}
		closers = append(closers, pg.Close)
		l = pg
	}
	var c Cache
	if storeConn == "" {
		c = NewMemoryCache(nil)
	} else {
		rc, err := NewRedisCache(ctx, storeConn, redisOpts...)
		if err != nil {
			closeAll()
			return nil, nil, &ConnectError{Backend: "store", msg: storeSecrets.Scrub(err.Error())}
		}
		closers = append(closers, func() { _ = rc.Close() })
		c = rc
	}
	labs = make([]*Server, n)
	for i := range labs {
		if labs[i], err = New(cfg, l, c); err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	return labs, closeAll, nil
}

// SilenceRedisLog stops go-redis logging through its global logger, to
// stderr, for the whole process: the lab answers a Redis it cannot reach
// with 503s and errors instead. Call it before any Redis client is made.
func SilenceRedisLog() { redis.SetLogger(discardLogger{}) }

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

func validNamespace(s string) bool {
	for i, r := range s {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return s != "" && len(s) <= 48
}

// redact is a store or ledger URL (or key=value DSN) as a message may
// show it: password and every value but the connection parameters
// masked, an unparseable URL masked whole.
func redact(raw string) string {
	return redaction.Options{Keep: redaction.ConnParams}.String(raw)
}

// ledgerURL checks Backends.Ledger: "memory" (conn ""), a postgres:// or
// postgresql:// URL in any case (conn with its scheme in lower case, as
// the driver wants it), or a key=value DSN. It returns the secrets the
// value holds, to scrub from errors. Anything else, or a URL or DSN the
// driver cannot parse, is a *ConfigError that does not quote it.
func ledgerURL(raw string) (conn string, secrets *redaction.Secrets, err error) {
	secrets = &redaction.Secrets{}
	secrets.Add(raw)
	if raw == "memory" {
		return "", secrets, nil
	}
	bad := func(problem string) error { return &ConfigError{Field: "ledger", Value: redact(raw), Problem: problem} }
	conn, ok, err := lowerScheme(raw, "postgres", "postgresql")
	switch {
	case err != nil:
		return "", nil, bad(err.Error())
	case !ok && (strings.Contains(raw, "://") || !strings.Contains(raw, "=")):
		return "", nil, bad("want memory, a postgres:// URL or a key=value DSN")
	}
	cfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		return "", nil, bad("cannot parse it: check its form, escaping special characters in the password with %XX")
	}
	secrets.Add(cfg.ConnConfig.Password)
	if u, err := url.Parse(conn); err == nil && ok {
		secrets.AddURL(u)
	}
	return conn, secrets, nil
}

// storeURL checks Backends.Store: "memory" (conn ""), or a redis:// or
// rediss:// URL in any case, as ledgerURL checks the ledger.
func storeURL(raw string) (conn string, secrets *redaction.Secrets, err error) {
	secrets = &redaction.Secrets{}
	secrets.Add(raw)
	if raw == "memory" {
		return "", secrets, nil
	}
	bad := func(problem string) error { return &ConfigError{Field: "store", Value: redact(raw), Problem: problem} }
	conn, ok, err := lowerScheme(raw, "redis", "rediss")
	switch {
	case err != nil:
		return "", nil, bad(err.Error())
	case !ok:
		return "", nil, bad("want memory or a redis:// URL")
	}
	opt, err := redis.ParseURL(conn)
	if err != nil {
		return "", nil, bad("cannot parse it: check its form, escaping special characters in the password with %XX")
	}
	secrets.Add(opt.Password)
	if u, err := url.Parse(conn); err == nil {
		secrets.AddURL(u)
	}
	return conn, secrets, nil
}

// lowerScheme is raw with its scheme in lower case when it is a URL of
// one of schemes (ok); an error when it is such a URL that does not parse.
func lowerScheme(raw string, schemes ...string) (conn string, ok bool, err error) {
	scheme, rest, found := strings.Cut(strings.TrimSpace(raw), "://")
	if !found {
		return raw, false, nil
	}
	scheme = strings.ToLower(scheme)
	for _, s := range schemes {
		if scheme == s {
			conn = scheme + "://" + rest
			if _, err := url.Parse(conn); err != nil {
				return "", false, errors.New("the URL does not parse: escape special characters in the password with %XX")
			}
			return conn, true, nil
		}
	}
	return raw, false, nil
}
