package oracles

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// A pattern that is a template makes the store's key from the op's user and
// key, as a store scoped per user keeps it.
func TestRedisPatternTemplate(t *testing.T) {
	url := testsvc.Redis(t)
	rdb := redisClient(t, url)
	ctx := testCtx(t)
	if err := rdb.MSet(ctx, "idem:alice|k1", "1", "idem:bob|k1", "1", "idem:bob|k2", "2", "idem:k3", "1").Err(); err != nil {
		t.Fatal(err)
	}
	// k1 sent by alice and bob (a key shared across users), k2 by bob
	// twice, k3 by alice only.
	h := &history.History{Ops: []history.Op{
		{ID: 0, Key: "k1", User: "alice"}, {ID: 1, Key: "k1", User: "bob"},
		{ID: 2, Key: "k2", User: "bob"}, {ID: 3, Key: "k2", User: "bob"}, {ID: 4, Key: "k3", User: "alice"},
	}}
	for _, tc := range []struct {
		name, pattern, mode string
		want                map[string]int
	}{
		{"user and key", "idem:{{.User}}|{{.Key}}", RedisExists, map[string]int{"k1": 2, "k2": 1}},
		{"user and key, get", "idem:{{.User}}|{{.Key}}", RedisGet, map[string]int{"k1": 2, "k2": 2}},
		{"key only", "idem:{{.Key}}", RedisExists, map[string]int{"k3": 1}},
		{"old form", "idem:%s", RedisExists, map[string]int{"k3": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &RedisEffects{OracleName: "store", URL: url, Pattern: tc.pattern, Mode: tc.mode}
			obs, err := o.Observe(testCtx(t), h)
			if err != nil {
				t.Fatalf("Observe() error: %v", err)
			}
			if diff := cmp.Diff(tc.want, obs.Effects); diff != "" {
				t.Errorf("Observe(%q).Effects (-want +got):\n%s", tc.pattern, diff)
			}
		})
	}
	if _, err := (&RedisEffects{OracleName: "store", URL: url, Pattern: "idem:{{.Nope}}"}).Observe(testCtx(t), h); err == nil {
		t.Errorf("Observe(pattern with .Nope) = nil error, want one")
	}
}
