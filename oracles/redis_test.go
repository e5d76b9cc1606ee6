package oracles

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// redisClient is a client of url closed with the test.
func redisClient(t *testing.T, url string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRedis(t *testing.T) {
	url := testsvc.Redis(t)
	rdb := redisClient(t, url)
	ctx := testCtx(t)
	// 600 keys (more than one pipeline) x0..x599, stored with the value
	// i%3 when it is not 0; k1 stored once, k2 twice (a duplicate).
	var keys []string
	exists := map[string]int{"k1": 1, "k2": 1}
	counts := map[string]int{"k1": 1, "k2": 2}
	pairs := []any{"idem:k1", "1", "idem:k2", "2", "idem:other-run", "5", "idem:bad", "many", "idem:zero", "0"}
	for i := range 600 {
		k := fmt.Sprintf("x%d", i)
		keys = append(keys, k)
		if i%3 != 0 {
			pairs = append(pairs, "idem:"+k, i%3)
			exists[k] = 1
			counts[k] = i % 3
		}
	}
	if err := rdb.MSet(ctx, pairs...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, "idem:hash", "f", "1").Err(); err != nil {
		t.Fatal(err)
	}
	rdb.Close() // no connection of the test is left open for goleak
	current := goleak.IgnoreCurrent()
	defer func() {
		// After a failed dial, go-redis probes the server from a goroutine
		// that sleeps 1 s between probes and ends once the client is closed.
		waitGone(t, "redis/go-redis/v9/internal/pool.(*ConnPool).tryDial", 5*time.Second)
		goleak.VerifyNone(t, current)
	}()
	h := keysHistory(append(keys, "k1", "k2", "k3", "k1")...)

	t.Run("effects", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			oracle *RedisEffects
			h      *history.History
			want   map[string]int
		}{
			{"exists", &RedisEffects{OracleName: "store", URL: url, Pattern: "idem:%s", Concurrency: 2}, h, exists},
			{"exists, history spilled to disk", &RedisEffects{OracleName: "store", URL: url, Pattern: "idem:%s", Concurrency: 2}, spilled(t, h), exists},
			{"templated pattern, history spilled to disk", &RedisEffects{OracleName: "store", URL: url, Pattern: "idem:{{.Key}}", Mode: RedisGet}, spilled(t, h), counts},
			{"exists by default", &RedisEffects{OracleName: "store", URL: url, Pattern: "idem:%s"}, h, exists},
			{"get", &RedisEffects{OracleName: "store", URL: url, Pattern: "idem:%s", Mode: RedisGet}, h, counts},
			{"get zero", &RedisEffects{OracleName: "store", URL: url, Pattern: "idem:%s", Mode: RedisGet},
				keysHistory("zero", "k1"), map[string]int{"k1": 1}},
			{"exists zero", &RedisEffects{OracleName: "store", URL: url, Pattern: "idem:%s"},
				keysHistory("zero", "k1"), map[string]int{"zero": 1, "k1": 1}},
			{"pattern is literal", &RedisEffects{OracleName: "store", URL: url, Pattern: "%s", Mode: RedisGet},
				keysHistory("idem:k2", "k2", "idem:%s"), map[string]int{"idem:k2": 2}},
			{"no pattern", &RedisEffects{OracleName: "store", URL: url, Mode: RedisGet},
				keysHistory("idem:k2"), map[string]int{"idem:k2": 2}},
			{"no history", &RedisEffects{OracleName: "store", URL: url}, nil, map[string]int{}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				obs, err := tc.oracle.Observe(testCtx(t), tc.h)
				if err != nil {
					t.Fatalf("Observe() error: %v", err)
				}
				wantObs := &history.Reading{Oracle: "store", Kind: history.KindEffects, Effects: tc.want}
				if diff := cmp.Diff(wantObs, obs); diff != "" {
					t.Errorf("Observe() (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("effects checked", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			h    *history.History
			mode string
			want checks.Status
		}{
			{"duplicate", hist(o("k1", ok(201)), o("k2", lost(), ok(201))), RedisGet, checks.Fail},
			{"correct", hist(o("k1", ok(201)), o("x1", lost(), ok(201))), RedisGet, checks.Pass},
			{"present", hist(o("k1", ok(201)), o("k2", lost(), ok(201))), RedisExists, checks.Pass},
			{"missing", hist(o("k1", ok(201)), o("x3", ok(201))), RedisExists, checks.Fail},
		} {
			t.Run(tc.name, func(t *testing.T) {
				oracle := &RedisEffects{OracleName: "store", URL: url, Pattern: "idem:%s", Mode: tc.mode}
				obs, err := oracle.Observe(testCtx(t), tc.h)
				if err != nil {
					t.Fatalf("Observe() error: %v", err)
				}
				if v := checks.Check(tc.h, history.Invariant{Check: checks.ExactlyOnce, Oracle: "store"}, obs); v.Status != tc.want {
					t.Errorf("checks.Check(exactly_once) = %s (%s), want %s", v.Status, v.Summary, tc.want)
				}
			})
		}
	})

	t.Run("counter", func(t *testing.T) {
		two := hist(o("op-1", ok(200)), o("op-2", ok(200)))
		for _, tc := range []struct {
			name      string
			key       string
			set       bool
			increment int64
			want      checks.Status
		}{
			{"exact", "likes:1", true, 2, checks.Pass},
			{"counted twice", "likes:2", true, 3, checks.Fail},
			{"absent before", "likes:3", false, 2, checks.Pass},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rdb := redisClient(t, url)
				var before int64
				if tc.set {
					before = 7
					if err := rdb.Set(testCtx(t), tc.key, before, 0).Err(); err != nil {
						t.Fatal(err)
					}
				}
				c := &RedisCounter{OracleName: "likes", URL: url, Key: tc.key}
				if err := c.Before(testCtx(t)); err != nil {
					t.Fatalf("Before() error: %v", err)
				}
				if err := rdb.IncrBy(testCtx(t), tc.key, tc.increment).Err(); err != nil {
					t.Fatal(err)
				}
				rdb.Close()
				obs, err := c.Observe(testCtx(t), two)
				if err != nil {
					t.Fatalf("Observe() error: %v", err)
				}
				after := before + tc.increment
				wantObs := &history.Reading{Oracle: "likes", Kind: history.KindCounter, Before: &before, After: &after}
				if diff := cmp.Diff(wantObs, obs); diff != "" {
					t.Errorf("Observe() (-want +got):\n%s", diff)
				}
				if v := checks.Check(two, history.Invariant{Check: checks.ExactCounter, Oracle: "likes"}, obs); v.Status != tc.want {
					t.Errorf("checks.Check(exact_counter) = %s (%s), want %s", v.Status, v.Summary, tc.want)
				}
			})
		}
		t.Run("no before", func(t *testing.T) {
			c := &RedisCounter{OracleName: "likes", URL: url, Key: "likes:1"}
			if _, err := c.Observe(testCtx(t), two); !errors.Is(err, ErrNoBefore) {
				t.Errorf("Observe() without Before error = %v, want ErrNoBefore", err)
			}
		})
	})

	t.Run("errors", func(t *testing.T) {
		closed := fmt.Sprintf("redis://:hunter2@127.0.0.1:%d/0", closedPort(t))
		for _, tc := range []struct {
			name   string
			oracle Oracle
			keys   []string // of the history; default k1, k2
			want   []string
			is     error
			query  string // QueryError.Query; "-" for no QueryError
		}{
			{"not an integer", &RedisEffects{OracleName: "store", URL: url, Pattern: "idem:%s", Mode: RedisGet},
				[]string{"k1", "bad", "k2"}, []string{`oracle store: redis://127.0.0.1:`, `query "get idem:bad": the value is "many" (a string), unexpected type: want an integer`}, ErrType, "get idem:bad"},
			{"wrong type", &RedisEffects{OracleName: "store", URL: url, Pattern: "idem:%s", Mode: RedisGet},
				[]string{"k1", "hash"}, []string{"WRONGTYPE"}, nil, "get idem:hash"},
			{"counter not an integer", &RedisCounter{OracleName: "store", URL: url, Key: "idem:bad"}, nil,
				[]string{`query "get idem:bad"`}, ErrType, "get idem:bad"},
			{"unreachable", &RedisEffects{OracleName: "store", URL: closed}, nil,
				[]string{"oracle store: redis://:xxxxx@127.0.0.1:", "connecting", "connection refused"}, nil, ""},
			{"unreachable counter", &RedisCounter{OracleName: "store", URL: closed, Key: "likes"}, nil,
				[]string{"redis://:xxxxx@127.0.0.1:", "connecting"}, nil, ""},
			{"bad URL", &RedisCounter{OracleName: "store", URL: "http://:hunter2@127.0.0.1/0", Key: "likes"}, nil,
				[]string{"oracle store: http://:xxxxx@127.0.0.1/0: invalid URL scheme"}, nil, "-"},
			{"no URL", &RedisCounter{OracleName: "store", Key: "likes"}, nil, []string{"oracle store: no Redis URL"}, nil, "-"},
			{"no key", &RedisCounter{OracleName: "store", URL: url}, nil, []string{"oracle store: no key"}, nil, "-"},
			{"unknown mode", &RedisEffects{OracleName: "store", URL: url, Mode: "count"}, nil,
				[]string{`oracle store: unknown mode "count" (want exists or get)`}, nil, "-"},
			{"pattern without key", &RedisEffects{OracleName: "store", URL: url, Pattern: "idem"}, nil,
				[]string{`pattern "idem" has 0 %s, want exactly one`}, nil, "-"},
			{"pattern with two keys", &RedisEffects{OracleName: "store", URL: url, Pattern: "%s:%s"}, nil,
				[]string{`has 2 %s`}, nil, "-"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel() // within "errors": the next subtest starts once all are done
				keys := tc.keys
				if keys == nil {
					keys = []string{"k1", "k2"}
				}
				err := tc.oracle.Before(testCtx(t))
				if err == nil {
					_, err = tc.oracle.Observe(testCtx(t), keysHistory(keys...))
				}
				if err == nil {
					t.Fatal("Observe() error = nil, want an error")
				}
				msg := err.Error()
				t.Logf("error: %s", msg)
				for _, w := range tc.want {
					if !strings.Contains(msg, w) {
						t.Errorf("Observe() error = %q, want it to contain %q", msg, w)
					}
				}
				if strings.Contains(msg, "hunter2") {
					t.Errorf("Observe() error = %q shows the password", msg)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("Observe() error = %v, want errors.Is %v", err, tc.is)
				}
				var qe *QueryError
				if got := errors.As(err, &qe); got != (tc.query != "-") {
					t.Errorf("Observe() error = %v (%T), want a QueryError: %v", err, err, tc.query != "-")
				} else if got && qe.Query != tc.query {
					t.Errorf("QueryError.Query = %q, want %q", qe.Query, tc.query)
				}
			})
		}
	})

	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		o := &RedisEffects{OracleName: "store", URL: url}
		if _, err := o.Observe(ctx, h); !errors.Is(err, context.Canceled) {
			t.Errorf("Observe(canceled) error = %v, want context.Canceled", err)
		}
		c := &RedisCounter{OracleName: "store", URL: url, Key: "likes"}
		if err := c.Before(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Before(canceled) error = %v, want context.Canceled", err)
		}
	})

	t.Run("connections closed", func(t *testing.T) {
		o := &RedisEffects{OracleName: "store", URL: url, Pattern: "idem:%s", Concurrency: 8}
		if _, err := o.Observe(testCtx(t), h); err != nil {
			t.Fatalf("Observe() error: %v", err)
		}
		rdb := redisClient(t, url)
		// The server drops a closed connection shortly after the client
		// leaves: poll briefly.
		deadline := time.Now().Add(5 * time.Second)
		for {
			list, err := rdb.ClientList(testCtx(t)).Result()
			if err != nil {
				t.Fatal(err)
			}
			n := strings.Count(strings.TrimSpace(list), "\n") + 1
			if n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("client connections after Observe = %d, want 1 (this one):\n%s", n, list)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// waitGone waits until no goroutine runs a function whose name contains fn,
// and fails the test if one still does after within.
func waitGone(t *testing.T, fn string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if !strings.Contains(string(buf[:n]), fn) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("a goroutine still runs %s after %v", fn, within)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
