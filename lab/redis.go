package lab

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCache is a Cache in Redis: the in-flight lock and the response cache
// in front of the ledger. Every key it writes carries a TTL and starts with
// its prefix:
//
//	PREFIX lock:KEY   a string, the holder's token      SET NX PX
//	PREFIX resp:KEY   a hash {fingerprint, status, body}  replaced in MULTI/EXEC
//
// Redis is never the source of truth: a lost entry costs a ledger read, and
// an unreachable Redis makes every method return an error (the handlers
// answer 503, fail closed). It is safe for concurrent use.
type RedisCache struct {
	client *redis.Client
	prefix string
}

// RedisOption configures NewRedisCache.
type RedisOption func(*redisOptions)

type redisOptions struct {
	prefix string
}

// DefaultRedisPrefix starts every key a RedisCache writes, unless
// RedisPrefix says otherwise.
const DefaultRedisPrefix = "idemcheck:lab:"

// RedisPrefix makes the cache use prefix for its keys instead of
// DefaultRedisPrefix, so that labs, or tests, sharing a Redis database do not
// share entries. Reset deletes only keys under the prefix.
func RedisPrefix(prefix string) RedisOption {
	return func(o *redisOptions) { o.prefix = prefix }
}

// NewRedisCache connects to the Redis server at url (redis://host:port/db),
// checks it answers PING, and returns the cache. Close it when done.
//
// Commands are not retried by the client (unless the URL sets max_retries):
// a SET NX whose answer was lost must surface as an error, not be re-sent
// and then read as "held by someone else". Nor are failed dials, so an
// unreachable Redis fails each call at once (fail closed, fast).
func NewRedisCache(ctx context.Context, url string, opts ...RedisOption) (*RedisCache, error) {
	o := redisOptions{prefix: DefaultRedisPrefix}
	for _, opt := range opts {
		opt(&o)
	}
	ropt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis cache: %w", err)
	}
	if ropt.MaxRetries == 0 {
		ropt.MaxRetries = -1
	}
	// One dial per command: an unreachable Redis answers 503 at once.
	ropt.DialerRetries = 1
	c := &RedisCache{client: redis.NewClient(ropt), prefix: o.prefix}
	if err := c.client.Ping(ctx).Err(); err != nil {
		c.client.Close()
		return nil, fmt.Errorf("redis cache: ping %s: %w", ropt.Addr, err)
	}
	return c, nil
}

// Close closes the client's connections.
func (c *RedisCache) Close() error { return c.client.Close() }

func (c *RedisCache) lockKey(key string) string { return c.prefix + "lock:" + key }
func (c *RedisCache) respKey(key string) string { return c.prefix + "resp:" + key }

// errTTL is returned for a TTL Redis cannot store (it must be at least 1 ms).
var errTTL = errors.New("ttl must be at least 1ms")

// Lock implements Cache: SET lock:KEY token NX PX ttl.
func (c *RedisCache) Lock(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if ttl < time.Millisecond {
		return false, fmt.Errorf("redis cache: lock %q: %w", key, errTTL)
	}
	ok, err := c.client.SetArgs(ctx, c.lockKey(key), token, redis.SetArgs{Mode: "NX", TTL: ttl}).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil // NX: the key is held
	}
	if err != nil {
		return false, fmt.Errorf("redis cache: lock %q: %w", key, err)
	}
	return ok == "OK", nil
}

// unlockScript deletes the lock only if the caller still holds it.
var unlockScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`)

// Unlock implements Cache with a compare-and-delete script.
func (c *RedisCache) Unlock(ctx context.Context, key, token string) error {
	if err := unlockScript.Run(ctx, c.client, []string{c.lockKey(key)}, token).Err(); err != nil {
		return fmt.Errorf("redis cache: unlock %q: %w", key, err)
	}
	return nil
}

// Get implements Cache: HGETALL resp:KEY (Redis expires the hash itself).
func (c *RedisCache) Get(ctx context.Context, key string) (Entry, bool, error) {
	m, err := c.client.HGetAll(ctx, c.respKey(key)).Result()
	if err != nil {
		return Entry{}, false, fmt.Errorf("redis cache: get %q: %w", key, err)
	}
	if len(m) == 0 {
		return Entry{}, false, nil
	}
	e, err := entryOf(m)
	if err != nil {
		return Entry{}, false, fmt.Errorf("redis cache: get %q: %w", key, err)
	}
	return e, true, nil
}

// entryOf reads a cached entry's hash.
func entryOf(m map[string]string) (Entry, error) {
	status, err := strconv.Atoi(m["status"])
	if err != nil {
		return Entry{}, fmt.Errorf("bad status %q: %w", m["status"], err)
	}
	return Entry{
		Fingerprint: m["fingerprint"],
		Response:    Response{Status: status, Body: []byte(m["body"])},
	}, nil
}

// Put implements Cache: DEL, HSET and PEXPIRE of resp:KEY in one MULTI/EXEC,
// so a reader sees the old entry, nothing, or the whole new one, never an
// entry without its TTL.
func (c *RedisCache) Put(ctx context.Context, key string, e Entry, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("redis cache: put %q: %w", key, errTTL)
	}
	k := c.respKey(key)
	_, err := c.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, k)
		p.HSet(ctx, k, "fingerprint", e.Fingerprint, "status", strconv.Itoa(e.Response.Status), "body", e.Response.Body)
		p.PExpire(ctx, k, ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis cache: put %q: %w", key, err)
	}
	return nil
}

// LockOrCachedScript is the protected path's first and, for a new key,
// only read of the store: in one roundtrip it returns the cached response
// of KEYS[1] if there is one, else takes the lock KEYS[2] for token
// ARGV[1] for ARGV[2] ms (SET NX PX). It answers {1, HGETALL} for a cached
// entry, {0, 1} for the lock taken and {0, 0} for a lock held by another.
// `idemcheck bench store` measures this very script.
const LockOrCachedScript = `
local r = redis.call("HGETALL", KEYS[1])
if #r > 0 then return {1, r} end
if redis.call("SET", KEYS[2], ARGV[1], "NX", "PX", ARGV[2]) then return {0, 1} end
return {0, 0}`

var lockOrCachedScript = redis.NewScript(LockOrCachedScript)

// CompleteScript stores the response and releases the lock in one
// roundtrip: it replaces the hash KEYS[1] with fingerprint ARGV[1],
// status ARGV[2] and body ARGV[3] for ARGV[4] ms, then deletes the lock
// KEYS[2] if token ARGV[5] still holds it. A script runs atomically, so a
// reader sees the old entry, nothing, or the whole new one.
const CompleteScript = `
redis.call("DEL", KEYS[1])
redis.call("HSET", KEYS[1], "fingerprint", ARGV[1], "status", ARGV[2], "body", ARGV[3])
redis.call("PEXPIRE", KEYS[1], ARGV[4])
if redis.call("GET", KEYS[2]) == ARGV[5] then redis.call("DEL", KEYS[2]) end
return 1`

var completeScript = redis.NewScript(CompleteScript)

// LockOrGet is Get then, on a miss, Lock, in one roundtrip
// (LockOrCachedScript): it returns the cached entry (cached true), or
// whether the lock on key was taken for token for ttl. It is what the
// protected path calls when the cache offers it, so that a new key costs
// one roundtrip before the work instead of two.
func (c *RedisCache) LockOrGet(ctx context.Context, key, token string, ttl time.Duration) (e Entry, cached, locked bool, err error) {
	if ttl < time.Millisecond {
		return Entry{}, false, false, fmt.Errorf("redis cache: lock %q: %w", key, errTTL)
	}
	v, err := lockOrCachedScript.Run(ctx, c.client, []string{c.respKey(key), c.lockKey(key)}, token, ttl.Milliseconds()).Slice()
	if err != nil {
		return Entry{}, false, false, fmt.Errorf("redis cache: lock or get %q: %w", key, err)
	}
	if len(v) != 2 {
		return Entry{}, false, false, fmt.Errorf("redis cache: lock or get %q: unexpected answer %v", key, v)
	}
	if hit, _ := v[0].(int64); hit == 0 {
		n, _ := v[1].(int64)
		return Entry{}, false, n == 1, nil
	}
	fields, _ := v[1].([]any)
	m := make(map[string]string, len(fields)/2)
	for i := 0; i+1 < len(fields); i += 2 {
		k, _ := fields[i].(string)
		val, _ := fields[i+1].(string)
		m[k] = val
	}
	e, err = entryOf(m)
	if err != nil {
		return Entry{}, false, false, fmt.Errorf("redis cache: lock or get %q: %w", key, err)
	}
	return e, true, false, nil
}

// Complete is Put then Unlock in one roundtrip (CompleteScript): it stores
// e for key for ttl and releases the lock if token still holds it.
func (c *RedisCache) Complete(ctx context.Context, key, token string, e Entry, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("redis cache: complete %q: %w", key, errTTL)
	}
	err := completeScript.Run(ctx, c.client, []string{c.respKey(key), c.lockKey(key)},
		e.Fingerprint, strconv.Itoa(e.Response.Status), e.Response.Body, ttl.Milliseconds(), token).Err()
	if err != nil {
		return fmt.Errorf("redis cache: complete %q: %w", key, err)
	}
	return nil
}

// Reset implements Cache: it deletes every key under the prefix (SCAN and
// UNLINK; entries written meanwhile may survive).
func (c *RedisCache) Reset(ctx context.Context) error {
	iter := c.client.Scan(ctx, 0, globEscape(c.prefix)+"*", 500).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := c.client.Unlink(ctx, batch...).Err()
		batch = batch[:0]
		return err
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			if err := flush(); err != nil {
				return fmt.Errorf("redis cache: reset: %w", err)
			}
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("redis cache: reset: %w", err)
	}
	if err := flush(); err != nil {
		return fmt.Errorf("redis cache: reset: %w", err)
	}
	return nil
}

// globEscape quotes the glob metacharacters of a Redis MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

var _ Cache = (*RedisCache)(nil)
