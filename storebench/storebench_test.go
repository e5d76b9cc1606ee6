package storebench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// quick measures each step 50 ms, 200 ms under the race detector: a step
// lets the operations it started finish (measure), so a loaded machine
// that stalls them all past the step's end still has them measured.
var quick = Options{Concurrency: []int{1, 4}, Duration: min(testenv.Bound(50*time.Millisecond), 200*time.Millisecond), ValueSize: 300, Samples: 10}

func TestRedisMeasuresAndCleansUp(t *testing.T) {
	t.Parallel()
	url := testsvc.Redis(t)
	ctx := context.Background()
	opt, _ := redis.ParseURL(url)
	raw := redis.NewClient(opt)
	defer raw.Close()
	// someone else's key, which the bench must leave alone
	if err := raw.Set(ctx, "app:keep", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := Redis(ctx, url, quick)
	if err != nil {
		t.Fatalf("Redis = %v", err)
	}
	if got, want := len(res.Primitives), len(RedisPrimitives)*2; got != want {
		t.Errorf("%d primitives measured, want %d", got, want)
	}
	for _, p := range res.Primitives {
		if p.P50US <= 0 || p.P99US < p.P50US || p.OpsPerS <= 0 || p.Errors != 0 {
			t.Errorf("primitive %+v: want positive figures, p99 ≥ p50, no error", p)
		}
	}
	if res.BytesPerRecord < 300 || res.BytesPerRecord > 2000 {
		t.Errorf("BytesPerRecord = %d, want a little over the 300-byte body", res.BytesPerRecord)
	}
	if res.Roundtrip("set_nx_px") <= 0 {
		t.Error("Roundtrip(set_nx_px) = 0")
	}
	keys, _ := raw.Keys(ctx, "*").Result()
	if len(keys) != 1 || keys[0] != "app:keep" {
		t.Errorf("keys after the bench = %v, want only app:keep", keys)
	}
}

func TestPostgresMeasuresAndCleansUp(t *testing.T) {
	t.Parallel()
	url := testsvc.Postgres(t)
	ctx := context.Background()
	// A transaction with fsync on can take over 100 ms on a busy
	// machine: a step long enough for a few (the long suite, run beside
	// the race detector's, waits longer).
	slow := quick
	slow.Duration = testenv.Pick(100*time.Millisecond, 300*time.Millisecond)
	// The scheme as a user may type it: a driver that matched it
	// exactly would read "Postgres://…" as key=value and dial the local
	// socket.
	res, err := Postgres(ctx, strings.Replace(url, "postgres://", "Postgres://", 1), slow)
	if err != nil {
		t.Fatalf("Postgres = %v", err)
	}
	if got, want := len(res.Primitives), len(PostgresPrimitives)*2; got != want {
		t.Errorf("%d primitives measured, want %d", got, want)
	}
	for _, p := range res.Primitives {
		if p.P50US <= 0 || p.OpsPerS <= 0 || p.Errors != 0 {
			t.Errorf("primitive %+v: want positive figures and no error", p)
		}
	}
	if res.BytesPerRecord < 300 {
		t.Errorf("BytesPerRecord = %d, want more than the 300-byte body", res.BytesPerRecord)
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'idemcheck_bench_%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("bench schemas left: %d (%v), want 0", n, err)
	}
}

func TestPlan(t *testing.T) {
	got := Plan(10000, 24*time.Hour, 400, 2)
	want := Capacity{RPS: 10000, TTLS: 86400, Records: 864000000, Bytes: 345600000000, RoundtripsPerRequest: 2, StoreOpsPerS: 20000}
	if got != want {
		t.Errorf("Plan(10K, 24h, 400B, 2) = %+v, want %+v", got, want)
	}
}

func TestBodySize(t *testing.T) {
	for _, n := range []int{10, 256, 4096} {
		if got := len(body(n)); got != max(n, 106) {
			t.Errorf("len(body(%d)) = %d", n, got)
		}
	}
}

// A step lets the operations it started finish, and counts them: an
// operation slower than the whole step is measured, not dropped (a
// loaded machine's stall once left a step with nothing measured).
func TestMeasureLetsOperationsFinish(t *testing.T) {
	t.Parallel()
	const slow = 60 * time.Millisecond
	p, err := measure(context.Background(), "slow", 2, 5*time.Millisecond, time.Minute, func(ctx context.Context, _, _ int) error {
		return pause(ctx, slow)
	})
	if err != nil {
		t.Fatalf("measure = %v", err)
	}
	if p.OpsPerS <= 0 || p.P50US < float64(slow.Microseconds()) || p.Errors != 0 {
		t.Errorf("measure = %+v, want the two operations started, each at least %v", p, slow)
	}
}

// An operation that never answers is cut bound past the step's end, and
// counted as failed, saying so.
func TestMeasureBoundsAStuckOperation(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	p, err := measure(context.Background(), "stuck", 1, 5*time.Millisecond, 50*time.Millisecond, func(ctx context.Context, _, _ int) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if err == nil || !strings.Contains(err.Error(), "stuck at concurrency 1: no answer within 50ms of the step's end") || p.Errors != 1 {
		t.Errorf("measure = %+v, %v; want one failed operation, no answer within 50ms", p, err)
	}
	if d := time.Since(begin); d > testenv.Bound(5*time.Second) {
		t.Errorf("a stuck operation held the step %v", d)
	}
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
