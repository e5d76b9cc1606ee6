package lab

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/idemcheck/idemcheck/internal/testsvc"
	"github.com/redis/go-redis/v9"
)

// redisPrefixes numbers the key prefixes the tests use, one per cache.
var redisPrefixes atomic.Int64

// newTestRedisCache opens a cache with a fresh prefix on the server at url,
// closed when t ends.
func newTestRedisCache(t *testing.T, url string) *RedisCache {
	t.Helper()
	c, err := NewRedisCache(testCtx(t), url, RedisPrefix(fmt.Sprintf("test:%d:", redisPrefixes.Add(1))))
	if err != nil {
		t.Fatalf("NewRedisCache(%q) = %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawRedis is a plain client to look at what the cache wrote.
func rawRedis(t *testing.T, url string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRedisCache runs the Cache contract against a real Redis; TTLs run
// out in real time (Redis expires keys itself).
func TestRedisCache(t *testing.T) {
	t.Parallel()
	url := testsvc.Redis(t)
	runCacheContract(t, func(t *testing.T) (Cache, func(time.Duration)) {
		return newTestRedisCache(t, url), time.Sleep
	})

	t.Run("KeysCarryTheirTTL", func(t *testing.T) {
		ctx, c, raw := testCtx(t), newTestRedisCache(t, url), rawRedis(t, url)
		if ok, err := c.Lock(ctx, "k", "tok", 30*time.Second); err != nil || !ok {
			t.Fatalf("Lock = %v, %v", ok, err)
		}
		if err := c.Put(ctx, "k", Entry{Fingerprint: "fp", Response: Response{Status: 201, Body: []byte("x")}}, 24*time.Hour); err != nil {
			t.Fatalf("Put = %v", err)
		}
		tests := []struct {
			key      string
			min, max time.Duration
		}{
			{c.prefix + "lock:k", 29 * time.Second, 30 * time.Second},
			{c.prefix + "resp:k", 24*time.Hour - time.Minute, 24 * time.Hour},
		}
		for _, tt := range tests {
			got, err := raw.PTTL(ctx, tt.key).Result()
			if err != nil || got < tt.min || got > tt.max {
				t.Errorf("PTTL(%s) = %v, %v, want in [%v, %v]", tt.key, got, err, tt.min, tt.max)
			}
		}
		if got, _ := raw.Get(ctx, c.prefix+"lock:k").Result(); got != "tok" {
			t.Errorf("GET lock = %q, want the holder's token", got)
		}
	})

	t.Run("PutReplaces", func(t *testing.T) {
		ctx, c := testCtx(t), newTestRedisCache(t, url)
		first := Entry{Fingerprint: "fp1", Response: Response{Status: 201, Body: []byte("one")}}
		second := Entry{Fingerprint: "fp2", Response: Response{Status: 500, Body: []byte("two\x00\xff")}}
		for _, e := range []Entry{first, second} {
			if err := c.Put(ctx, "k", e, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		got, found, err := c.Get(ctx, "k")
		if err != nil || !found {
			t.Fatalf("Get = %v, %v", found, err)
		}
		if diff := cmp.Diff(second, got); diff != "" {
			t.Errorf("Get after two Puts (-want +got):\n%s", diff)
		}
	})

	t.Run("PrefixesIsolate", func(t *testing.T) {
		ctx := testCtx(t)
		a, b := newTestRedisCache(t, url), newTestRedisCache(t, url)
		if ok, _ := a.Lock(ctx, "k", "ta", time.Minute); !ok {
			t.Fatal("Lock(a) = false")
		}
		if err := a.Put(ctx, "k", Entry{Fingerprint: "fp"}, time.Minute); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.Lock(ctx, "k", "tb", time.Minute); err != nil || !ok {
			t.Errorf("Lock(b, k) = %v, %v, want true: prefixes must not share locks", ok, err)
		}
		if err := b.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := a.Get(ctx, "k"); !found {
			t.Error("b.Reset deleted a's entry")
		}
		if ok, _ := a.Lock(ctx, "k", "ta2", time.Minute); ok {
			t.Error("b.Reset released a's lock")
		}
	})

	t.Run("TTLTooShort", func(t *testing.T) {
		ctx, c := testCtx(t), newTestRedisCache(t, url)
		if _, err := c.Lock(ctx, "k", "t", 0); err == nil {
			t.Error("Lock(ttl 0) = nil error, want an error (SET PX needs >= 1ms)")
		}
		if err := c.Put(ctx, "k", Entry{}, time.Microsecond); err == nil {
			t.Error("Put(ttl 1µs) = nil error, want an error")
		}
	})
}

func TestGlobEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"idemcheck:lab:", "idemcheck:lab:"},
		{"a*b?[c]\\", `a\*b\?\[c\]\\`},
	}
	for _, tt := range tests {
		if got := globEscape(tt.in); got != tt.want {
			t.Errorf("globEscape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRedisCacheFailsClosed checks that an unreachable Redis is an error
// from the constructor and from every method: never "lock free", "lock
// held" or "no entry", which the handlers would act on.
func TestRedisCacheFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	url, stop := testsvc.RedisWithStop(t)
	c, err := NewRedisCache(ctx, url)
	if err != nil {
		t.Fatalf("NewRedisCache = %v", err)
	}
	defer c.Close()
	stop()
	calls := map[string]func() error{
		"Lock":   func() error { _, err := c.Lock(ctx, "k", "t", time.Minute); return err },
		"Unlock": func() error { return c.Unlock(ctx, "k", "t") },
		"Get":    func() error { _, _, err := c.Get(ctx, "k"); return err },
		"Put":    func() error { return c.Put(ctx, "k", Entry{}, time.Minute) },
		"Reset":  func() error { return c.Reset(ctx) },
		"LockOrGet": func() error {
			_, _, _, err := c.LockOrGet(ctx, "k", "t", time.Minute)
			return err
		},
		"Complete": func() error { return c.Complete(ctx, "k", "t", Entry{}, time.Minute) },
	}
	for name, call := range calls {
		begin := time.Now()
		err := call()
		t.Logf("%s: %v in %v", name, err, time.Since(begin))
		if err == nil || errors.Is(err, redis.Nil) {
			t.Errorf("%s with Redis down = %v, want a connection error", name, err)
		}
	}
	if c2, err := NewRedisCache(ctx, url); err == nil {
		c2.Close()
		t.Errorf("NewRedisCache(%s) with Redis down = nil error, want an error", url)
	}
}

// TestRedisCacheOneRoundtrip checks the one-roundtrip pair against Get,
// Lock, Put and Unlock: LockOrGet answers as Get then Lock would, and
// Complete as Put then Unlock, each in a single command (a script).
func TestRedisCacheOneRoundtrip(t *testing.T) {
	t.Parallel()
	url := testsvc.Redis(t)
	ctx, c, raw := testCtx(t), newTestRedisCache(t, url), rawRedis(t, url)
	e := Entry{Fingerprint: "fp", Response: Response{Status: 201, Body: []byte(`{"id":"ch_1"}`)}}

	if _, cached, locked, err := c.LockOrGet(ctx, "k", "tok", 30*time.Second); err != nil || cached || !locked {
		t.Fatalf("LockOrGet(new key) = cached %v, locked %v, %v; want the lock taken", cached, locked, err)
	}
	if _, cached, locked, err := c.LockOrGet(ctx, "k", "other", 30*time.Second); err != nil || cached || locked {
		t.Fatalf("LockOrGet(held key) = cached %v, locked %v, %v; want neither (409)", cached, locked, err)
	}
	if err := c.Complete(ctx, "k", "tok", e, time.Hour); err != nil {
		t.Fatalf("Complete = %v", err)
	}
	if n, _ := raw.Exists(ctx, c.lockKey("k")).Result(); n != 0 {
		t.Error("Complete left the lock held by its own token")
	}
	if ttl, _ := raw.PTTL(ctx, c.respKey("k")).Result(); ttl < 59*time.Minute || ttl > time.Hour {
		t.Errorf("Complete: entry TTL %v, want about 1h", ttl)
	}
	got, cached, locked, err := c.LockOrGet(ctx, "k", "third", 30*time.Second)
	if err != nil || !cached || locked || !cmp.Equal(got, e) {
		t.Fatalf("LockOrGet(completed key) = %+v cached %v locked %v, %v; want the stored entry", got, cached, locked, err)
	}
	if g, ok, err := c.Get(ctx, "k"); err != nil || !ok || !cmp.Equal(g, e) {
		t.Errorf("Get after Complete = %+v %v %v, want the same entry", g, ok, err)
	}

	// Complete never releases a lock another token holds.
	if ok, _ := c.Lock(ctx, "k2", "mine", 30*time.Second); !ok {
		t.Fatal("Lock(k2) not taken")
	}
	if err := c.Complete(ctx, "k2", "stale", e, time.Hour); err != nil {
		t.Fatal(err)
	}
	if v, _ := raw.Get(ctx, c.lockKey("k2")).Result(); v != "mine" {
		t.Errorf("Complete with a stale token released the lock: %q, want mine", v)
	}
	if _, _, _, err := c.LockOrGet(ctx, "k3", "t", time.Microsecond); err == nil {
		t.Error("LockOrGet(ttl 1µs) = nil error, want an error")
	}
}
