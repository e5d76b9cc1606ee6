package storebench

import (
	"github.com/idemcheck/idemcheck/internal/dsn"

	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/lab"
)

// RedisPrimitives name the Redis primitives in the order they run:
//
//	set_nx_px        SET lock NX PX: the in-flight lock
//	get              HGETALL of a stored response: the replay read
//	lock_or_cached   the lab's script: the cached response, or the lock, in one roundtrip
//	multi_exec       MULTI DEL HSET PEXPIRE EXEC: store the response
//	complete         the lab's script: store the response and release the lock
var RedisPrimitives = []string{"set_nx_px", "get", "lock_or_cached", "multi_exec", "complete"}

// RedisResult is what Redis measured.
type RedisResult struct {
	Primitives []Primitive `json:"primitives"`
	// BytesPerRecord is the mean MEMORY USAGE of a stored response (the
	// lab's hash: fingerprint, status, body of ValueSize bytes).
	BytesPerRecord int64 `json:"bytes_per_record"`
}

// Roundtrip is the p50 of the primitive name at concurrency 1, µs: one
// roundtrip's cost. 0 when not measured.
func (r *RedisResult) Roundtrip(name string) float64 {
	for _, p := range r.Primitives {
		if p.Name == name && p.Concurrency == 1 {
			return p.P50US
		}
	}
	return 0
}

// recordTTL bounds every key the bench writes, should its cleanup fail.
const recordTTL = 10 * time.Minute

// Redis measures the Redis server at url (redis://host:port/db). Every key
// it writes starts with a fresh prefix and carries a TTL; they are all
// deleted before it returns.
func Redis(ctx context.Context, url string, o Options) (res *RedisResult, err error) {
	o = o.defaults()
	opt, err := redis.ParseURL(dsn.LowerScheme(url))
	if err != nil {
		// The parser's message quotes the URL, password and all: say
		// what is wrong without it.
		return nil, fmt.Errorf("redis: %w: %s", ErrURL, urlProblem(url, err))
	}
	opt.PoolSize = slices.Max(o.Concurrency) + 2
	opt.MinIdleConns = 0
	opt.MaxRetries = -1 // a figure must be one command, not a retried one
	c := redis.NewClient(opt)
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("redis: ping %s: %w", opt.Addr, err)
	}
	prefix := namespace() + ":"
	defer func() {
		if cerr := cleanRedis(context.WithoutCancel(ctx), c, prefix); cerr != nil && err == nil {
			err = cerr
		}
	}()
	lockOrCached := redis.NewScript(lab.LockOrCachedScript)
	complete := redis.NewScript(lab.CompleteScript)
	for _, s := range []*redis.Script{lockOrCached, complete} {
		if err := s.Load(ctx, c).Err(); err != nil {
			return nil, fmt.Errorf("redis: script load: %w", err)
		}
	}
	val := body(o.ValueSize)
	fp := fingerprint(val)
	ttl := recordTTL.Milliseconds()
	// records the replay read finds
	stored := func(i int) string { return prefix + "resp:stored:" + strconv.Itoa(i) }
	for i := range o.Samples {
		if err := putRecord(ctx, c, stored(i), fp, val); err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
	}
	res = &RedisResult{}
	if res.BytesPerRecord, err = memoryUsage(ctx, c, stored, o.Samples); err != nil {
		return nil, err
	}
	step := 0 // a new key space per step
	key := func(kind, name string, w, seq int) string {
		return prefix + kind + ":" + name + ":" + strconv.Itoa(step) + ":" + strconv.Itoa(w) + ":" + strconv.Itoa(seq)
	}
	ops := map[string]func(ctx context.Context, w, seq int) error{
		"set_nx_px": func(ctx context.Context, w, seq int) error {
			return c.SetArgs(ctx, key("lock", "set", w, seq), "token", redis.SetArgs{Mode: "NX", TTL: recordTTL}).Err()
		},
		"get": func(ctx context.Context, w, seq int) error {
			m, err := c.HGetAll(ctx, stored((w*7919+seq)%o.Samples)).Result()
			if err == nil && len(m) == 0 {
				err = fmt.Errorf("stored record not found")
			}
			return err
		},
		"lock_or_cached": func(ctx context.Context, w, seq int) error {
			return lockOrCached.Run(ctx, c, []string{key("resp", "loc", w, seq), key("lock", "loc", w, seq)}, "token", ttl).Err()
		},
		"multi_exec": func(ctx context.Context, w, seq int) error {
			k := key("resp", "multi", w, seq)
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Del(ctx, k)
				p.HSet(ctx, k, "fingerprint", fp, "status", "201", "body", val)
				p.PExpire(ctx, k, recordTTL)
				return nil
			})
			return err
		},
		"complete": func(ctx context.Context, w, seq int) error {
			return complete.Run(ctx, c, []string{key("resp", "complete", w, seq), key("lock", "complete", w, seq)}, fp, "201", val, ttl, "token").Err()
		},
	}
	for _, name := range RedisPrimitives {
		for _, conc := range o.Concurrency {
			if o.OnStep != nil {
				o.OnStep("redis", name, conc)
			}
			p, err := measure(ctx, name, conc, o.Duration, opBound, ops[name])
			if err != nil {
				return nil, fmt.Errorf("redis: %w", err)
			}
			res.Primitives = append(res.Primitives, p)
			step++
			// what this step wrote is not needed any more
			if err := cleanRedis(ctx, c, prefix+"lock:"); err != nil {
				return nil, err
			}
			if err := cleanRedis(ctx, c, prefix+"resp:"+shortName(name)+":"); err != nil {
				return nil, err
			}
		}
	}
	return res, ctx.Err()
}

func shortName(primitive string) string {
	switch primitive {
	case "lock_or_cached":
		return "loc"
	case "multi_exec":
		return "multi"
	}
	return primitive
}

// putRecord stores a response hash as the lab does.
func putRecord(ctx context.Context, c *redis.Client, k, fp string, val []byte) error {
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, "fingerprint", fp, "status", "201", "body", val)
		p.PExpire(ctx, k, recordTTL)
		return nil
	})
	return err
}

// memoryUsage is the mean MEMORY USAGE (SAMPLES 0: exact) of n records.
func memoryUsage(ctx context.Context, c *redis.Client, key func(int) string, n int) (int64, error) {
	var sum int64
	for i := range n {
		b, err := c.MemoryUsage(ctx, key(i), 0).Result()
		if err != nil {
			return 0, fmt.Errorf("redis: MEMORY USAGE: %w", err)
		}
		sum += b
	}
	return sum / int64(n), nil
}

// cleanRedis deletes every key under prefix (SCAN and UNLINK).
func cleanRedis(ctx context.Context, c *redis.Client, prefix string) error {
	iter := c.Scan(ctx, 0, globEscape(prefix)+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			if err := c.Unlink(ctx, batch...).Err(); err != nil {
				return fmt.Errorf("redis: cleanup: %w", err)
			}
			batch = batch[:0]
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("redis: cleanup: %w", err)
	}
	if len(batch) > 0 {
		if err := c.Unlink(ctx, batch...).Err(); err != nil {
			return fmt.Errorf("redis: cleanup: %w", err)
		}
	}
	return nil
}

// globEscape quotes the glob metacharacters of a MATCH pattern.
func globEscape(s string) string {
	var out []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\', '^', '-':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func fingerprint(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
