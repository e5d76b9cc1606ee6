package trial

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/oracles"
)

// fakeEffects is an effects oracle that reads fixed counts.
type fakeEffects map[string]int

func (fakeEffects) Name() string                 { return "ledger" }
func (fakeEffects) Before(context.Context) error { return nil }
func (f fakeEffects) Observe(_ context.Context, h *history.History) (*history.Reading, error) {
	return &history.Reading{Oracle: "ledger", Kind: history.KindEffects, Effects: f}, nil
}

// The live judge stops the load on a duplicate effect of ended ops, never
// on an effect that is missing (it may yet come), and judges effects
// live only when every op has a key of its own.
func TestAbortWatchStopsOnProofOnly(t *testing.T) {
	t.Parallel()
	const text = `name: w
target: http://127.0.0.1:1
operation: {method: POST, path: /c, key: {header: Idempotency-Key%s}}
load: {ops: 100, concurrency: 2, abort_on_fail: true}
oracles: [{name: ledger, effects: {bulk: {path: /n, value: $.n}}}]
invariants: [{check: exactly_once, oracle: ledger}]
`
	feed := func(w *abortWatch, keys ...string) {
		for i, k := range keys {
			w.OpStarted(history.Op{ID: i, Key: k})
			w.AttemptDone(history.Attempt{Op: i, N: 1, Outcome: history.OK, Status: 201})
			w.OpDone(i, history.Acked)
		}
	}
	cases := []struct {
		name    string
		key     string // more of operation.key
		effects fakeEffects
		abort   bool
	}{
		{"a duplicate effect", "", fakeEffects{"a": 1, "b": 2}, true},
		{"a missing effect", "", fakeEffects{"a": 1, "b": 0}, false},
		{"a duplicate under a templated key", `, value: "k{{div .Seq 2}}"`, fakeEffects{"a": 1, "b": 2}, false},
	}
	for _, c := range cases {
		sc := load(t, strings.Replace(text, "%s", c.key, 1))
		w := newAbortWatch(sc, []oracles.Oracle{c.effects})
		feed(w, "a", "b")
		w.judge(context.Background())
		if got := w.halted.Load(); got != c.abort {
			t.Errorf("%s: halted %v (%q), want %v", c.name, got, w.why, c.abort)
		}
		if c.abort && !strings.Contains(w.why, "exactly_once on ledger failed") {
			t.Errorf("%s: why %q", c.name, w.why)
		}
	}
}

// A threshold stops the load once it cannot hold whatever the rest does:
// error_rate 0.1 of 100 ops allows 10 failed ops; the 11th proves it.
func TestAbortWatchThresholdProof(t *testing.T) {
	t.Parallel()
	sc := load(t, `name: w
target: http://127.0.0.1:1
operation: {method: POST, path: /c, key: {header: Idempotency-Key}}
load: {ops: 100, concurrency: 2, abort_on_fail: true}
thresholds: {error_rate: 0.1}
`)
	w := newAbortWatch(sc, nil)
	for i := range 11 {
		if w.halted.Load() {
			t.Fatalf("halted after %d failed ops of 100, limit 0.1: %s", i, w.why)
		}
		w.OpStarted(history.Op{ID: i, Key: "k"})
		w.AttemptDone(history.Attempt{Op: i, N: 1, Outcome: history.OK, Status: 500})
		w.OpDone(i, history.Indeterminate)
	}
	if !w.halted.Load() || !strings.Contains(w.why, "threshold error_rate: 11 ops without a 2xx") {
		t.Errorf("after 11 failed ops of 100: halted %v, why %q", w.halted.Load(), w.why)
	}
}

// A latency limit stops the load only once the final percentile, read
// as measure reads it, can no longer hold: p99 over 160 ops allows 2
// slower ops (rank round(158.9) = 158), the third proves it.
func TestAbortWatchLatencyProof(t *testing.T) {
	t.Parallel()
	sc := load(t, `name: w
target: http://127.0.0.1:1
operation: {method: POST, path: /c, key: {header: Idempotency-Key}}
load: {ops: 160, concurrency: 2, abort_on_fail: true}
thresholds: {p99: 100ms}
`)
	w := newAbortWatch(sc, nil)
	for i := range 3 {
		if w.halted.Load() {
			t.Fatalf("halted after %d slow ops of 160 under p99: %s", i, w.why)
		}
		w.OpStarted(history.Op{ID: i, Key: "k"})
		w.AttemptDone(history.Attempt{Op: i, N: 1, Outcome: history.OK, Status: 201, End: 300 * time.Millisecond})
		w.OpDone(i, history.Acked)
	}
	if !w.halted.Load() || !strings.Contains(w.why, "threshold p99: 3 ops slower than 100ms") {
		t.Errorf("after 3 slow ops of 160: halted %v, why %q", w.halted.Load(), w.why)
	}
}
