package oracles

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

var (
	_ Oracle = (*RedisEffects)(nil)
	_ Oracle = (*RedisCounter)(nil)
)

// The modes of RedisEffects.
const (
	// RedisExists counts 1 effect for a key present in the store
	// (EXISTS), 0 for an absent one.
	RedisExists = "exists"
	// RedisGet counts the integer stored at the key (GET); an absent key
	// counts 0.
	RedisGet = "get"
)

// redisBatch is the most commands sent in one pipeline.
const redisBatch = 256

// RedisEffects reads the dedup store itself: for each key of the history,
// whether its entry is present (Mode "exists") or the integer stored at it
// (Mode "get"). Its zero value with URL set is usable. Each Observe opens its
// own connections and closes them before it returns.
type RedisEffects struct {
	OracleName string
	// URL is the server, redis://[[user]:password@]host:port/db (or
	// rediss://, unix://); errors show it without its password.
	URL string
	// Pattern makes the store's key from the op's key and user: a
	// template that sees .Key and .User ("idem:{{.User}}:{{.Key}}"), or,
	// without "{{", text whose one "%s" is replaced by the op key, every
	// other character literal ("idem:%s"). "" is the op key itself. A key
	// sent by several users counts the effects read for each.
	Pattern string
	// Mode is RedisExists (the default when "") or RedisGet.
	Mode string
	// Concurrency bounds the pipelines (of up to 256 keys) in flight and
	// the connections; default 8.
	Concurrency int
}

// Name returns the oracle's name.
func (o *RedisEffects) Name() string { return o.OracleName }

// Before checks that the store can be read (it connects and pings):
// effects are counted after the run only, but a store that cannot be
// reached now stops the run before its load rather than after it.
func (o *RedisEffects) Before(ctx context.Context) error {
	rc, err := openRedis(ctx, o.OracleName, o.URL, 1)
	if err != nil {
		return err
	}
	rc.close()
	return nil
}

// Observe reads the entry of every key of h. Keys with no effect are left
// out of the observation.
func (o *RedisEffects) Observe(ctx context.Context, h *history.History) (*history.Reading, error) {
	mode := o.Mode
	switch mode {
	case "":
		mode = RedisExists
	case RedisExists, RedisGet:
	default:
		return nil, fmt.Errorf("oracle %s: unknown mode %q (want %s or %s)", o.OracleName, o.Mode, RedisExists, RedisGet)
	}
	storeKeys, owners, err := o.storeKeys(ctx, h)
	if err != nil {
		return nil, err
	}
	if len(storeKeys) == 0 {
		return &history.Reading{Oracle: o.OracleName, Kind: history.KindEffects, Effects: map[string]int{}}, nil
	}
	batches := (len(storeKeys) + redisBatch - 1) / redisBatch
	conc := concurrency(o.Concurrency, batches)
	rc, err := openRedis(ctx, o.OracleName, o.URL, conc)
	if err != nil {
		return nil, err
	}
	defer rc.close()
	counts := make([]int64, len(storeKeys))
	err = parallel(ctx, o.OracleName, batches, conc, func(ctx context.Context, b int) error {
		lo, hi := b*redisBatch, min((b+1)*redisBatch, len(storeKeys))
		return rc.readBatch(ctx, mode, storeKeys[lo:hi], counts[lo:hi])
	})
	if err != nil {
		return nil, err
	}
	effects := make(map[string]int)
	for i, c := range counts {
		if c != 0 {
			effects[owners[i]] += int(c)
		}
	}
	return &history.Reading{Oracle: o.OracleName, Kind: history.KindEffects, Effects: effects}, nil
}

// storeKeys makes the store's keys for the ops of h, each once, and the op
// key each belongs to.
func (o *RedisEffects) storeKeys(ctx context.Context, h *history.History) (storeKeys, owners []string, err error) {
	pattern := o.Pattern
	if pattern == "" {
		pattern = "%s"
	}
	if !strings.Contains(pattern, "{{") {
		if n := strings.Count(pattern, "%s"); n != 1 {
			return nil, nil, fmt.Errorf("oracle %s: pattern %q has %d %%s, want exactly one (the key)", o.OracleName, o.Pattern, n)
		}
		keys, m, err := effectKeys(h)
		if err != nil {
			return nil, nil, err
		}
		storeKeys = make([]string, len(keys))
		owners = make([]string, len(keys))
		for i, k := range keys {
			storeKeys[i] = strings.Replace(pattern, "%s", k, 1)
			owners[i] = m.owner(k)
		}
		return storeKeys, owners, nil
	}
	t, err := scenarios.NewText("pattern", pattern, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("oracle %s: %w", o.OracleName, err)
	}
	if h == nil {
		return nil, nil, nil
	}
	seen := make(map[string]bool, len(h.Ops))
	err = history.EachOp(h, func(op history.Op) error {
		sk, err := t.Render(ctx, scenarios.Vars{Key: op.Key, User: op.User})
		if err != nil {
			return fmt.Errorf("oracle %s: %w", o.OracleName, err)
		}
		if !seen[sk] {
			seen[sk] = true
			storeKeys = append(storeKeys, sk)
			owners = append(owners, op.Key)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return storeKeys, owners, nil
}

// RedisCounter reads an integer key (GET) before and after the run; an
// absent key reads as 0, as INCR counts it. Its zero value with URL and Key
// set is usable. Each reading opens one connection and closes it. It must
// not be copied after first use.
type RedisCounter struct {
	OracleName string
	// URL is the server, as for RedisEffects.
	URL string
	Key string

	reading counterReading
}

// Name returns the oracle's name.
func (o *RedisCounter) Name() string { return o.OracleName }

// Before reads the counter before the load.
func (o *RedisCounter) Before(ctx context.Context) error {
	return o.reading.takeBefore(ctx, o.read)
}

// Observe reads the counter after the run. It fails when Before was not
// called or failed.
func (o *RedisCounter) Observe(ctx context.Context, _ *history.History) (*history.Reading, error) {
	return o.reading.observe(ctx, o.OracleName, o.read)
}

func (o *RedisCounter) read(ctx context.Context) (int64, error) {
	if o.Key == "" {
		return 0, fmt.Errorf("oracle %s: no key configured", o.OracleName)
	}
	rc, err := openRedis(ctx, o.OracleName, o.URL, 1)
	if err != nil {
		return 0, err
	}
	defer rc.close()
	cmd := rc.client.Get(ctx, o.Key)
	return rc.value(cmd)
}

// redisConn is a client opened for one reading.
type redisConn struct {
	oracle, url string // url is redacted
	client      *redis.Client
}

// openRedis connects to rawURL with at most conns connections and checks
// that the server answers PING. A failed dial is not retried by the client
// (commands are, being reads).
func openRedis(ctx context.Context, oracle, rawURL string, conns int) (*redisConn, error) {
	if rawURL == "" {
		return nil, fmt.Errorf("oracle %s: no Redis URL configured", oracle)
	}
	rawURL = lowerScheme(rawURL)
	rc := &redisConn{oracle: oracle, url: redactDSN(rawURL)}
	if u, err := url.Parse(rawURL); err == nil && u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix" {
		return nil, fmt.Errorf("oracle %s: %s: invalid URL scheme %q: want redis://, rediss:// or unix://", oracle, rc.url, u.Scheme)
	}
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		// go-redis quotes the raw URL (an invalid port can quote part of
		// the password): never pass its message on.
		return nil, fmt.Errorf("oracle %s: %s: %w", oracle, rc.url, ErrBadURL)
	}
	opt.PoolSize = max(conns, 1)
	opt.DialerRetries = 1
	rc.client = redis.NewClient(opt)
	if err := rc.client.Ping(ctx).Err(); err != nil {
		rc.close()
		return nil, rc.fail(nil, err)
	}
	return rc, nil
}

func (rc *redisConn) close() { _ = rc.client.Close() }

// fail wraps err about cmd (nil: connecting).
func (rc *redisConn) fail(cmd redis.Cmder, err error) error {
	e := &QueryError{Oracle: rc.oracle, URL: rc.url, Err: err}
	if cmd != nil {
		args := make([]string, len(cmd.Args()))
		for i, a := range cmd.Args() {
			args[i] = fmt.Sprint(a)
		}
		e.Query = strings.Join(args, " ")
	}
	return e
}

// readBatch reads the entries at the store keys in one pipeline into
// counts.
func (rc *redisConn) readBatch(ctx context.Context, mode string, storeKeys []string, counts []int64) error {
	pipe := rc.client.Pipeline()
	cmds := make([]redis.Cmder, len(storeKeys))
	for i, sk := range storeKeys {
		if mode == RedisGet {
			cmds[i] = pipe.Get(ctx, sk)
		} else {
			cmds[i] = pipe.Exists(ctx, sk)
		}
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, cmd := range cmds {
		n, err := rc.value(cmd)
		if err != nil {
			return err
		}
		counts[i] = n
	}
	return nil
}

// value is the count a GET or EXISTS answered: an absent key is 0, a GET
// value must be an integer.
func (rc *redisConn) value(cmd redis.Cmder) (int64, error) {
	switch c := cmd.(type) {
	case *redis.IntCmd:
		if err := c.Err(); err != nil {
			return 0, rc.fail(cmd, err)
		}
		return c.Val(), nil
	case *redis.StringCmd:
		s, err := c.Result()
		if errors.Is(err, redis.Nil) {
			return 0, nil
		}
		if err != nil {
			return 0, rc.fail(cmd, err)
		}
		n, err := toInt64(s, stringer("the value"))
		if err != nil {
			return 0, rc.fail(cmd, err)
		}
		return n, nil
	}
	return 0, rc.fail(cmd, fmt.Errorf("%w: %T", ErrType, cmd))
}
