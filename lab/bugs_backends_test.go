package lab

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// bugLab is a lab under a bug probe, on any backends, with what a probe
// needs to start a second instance of the same service.
type bugLab struct {
	*Server
	cfg    Config // as built: the clock and the shared processor set
	ledger Ledger
	cache  Cache
	clock  *fakeClock
	// reopen opens the lab's ledger and cache again, as another process
	// of the same service would: the same data, other connections.
	reopen func(t *testing.T) (Ledger, Cache)
}

// newBugLab builds a lab on ledger and cache with a fake clock and a
// processor that a twin shares.
func newBugLab(t *testing.T, cfg Config, ledger Ledger, cache Cache, clk *fakeClock, reopen func(t *testing.T) (Ledger, Cache)) *bugLab {
	t.Helper()
	cfg.Clock = clk.Now
	if cfg.ProcessorLatency == 0 {
		cfg.ProcessorLatency = NoProcessorLatency
	}
	cfg.Processor = NewProcessor(cfg.ProcessorLatency, clk.Now)
	s, err := New(cfg, ledger, cache)
	if err != nil {
		t.Fatalf("New(%+v) = %v", cfg, err)
	}
	return &bugLab{Server: s, cfg: cfg, ledger: ledger, cache: cache, clock: clk, reopen: reopen}
}

// twin starts another instance of the lab's service: the same config,
// processor, and data behind the ledger and the cache.
func (bl *bugLab) twin(t *testing.T) *Server {
	t.Helper()
	l, c := bl.reopen(t)
	s, err := New(bl.cfg, l, c)
	if err != nil {
		t.Fatalf("New(%+v) = %v", bl.cfg, err)
	}
	return s
}

func (bl *bugLab) do(t *testing.T, r req) *httptest.ResponseRecorder {
	t.Helper()
	return serve(bl.Server, r, context.Background())
}

func (bl *bugLab) ledgerCount(t *testing.T, key string) int {
	t.Helper()
	rows, err := bl.ledger.ChargesByKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// keyRecorded reports whether the ledger holds a live record for alice's
// key.
func (bl *bugLab) keyRecorded(t *testing.T, key string) bool {
	t.Helper()
	_, found, err := bl.ledger.LookupKey(context.Background(), KeyID{User: "alice", Key: key}, bl.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// split sends n copies of r at once, alternately to each of hs, and
// returns the answers.
func split(r req, n int, hs ...http.Handler) []*httptest.ResponseRecorder {
	out := make([]*httptest.ResponseRecorder, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = serve(hs[i%len(hs)], r, context.Background())
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// bugProbe is a probe run on every backend: what the correct lab shows and
// what the bug shows.
type bugProbe struct {
	bug     string
	latency time.Duration
	flaky   int // Config.FlakyEvery, for the correct lab and the buggy one
	probe   func(t *testing.T, bl *bugLab) string
	fixed   string
	buggy   string
}

// backendBugProbes are the probes of the bugs whose behaviour depends on
// the backends (shared by two labs, or read back from the ledger after a
// cache loss), run on memory and on Redis+Postgres.
func backendBugProbes() []bugProbe {
	other := `{"amount":999,"currency":"usd","customer":"cus_1"}`
	return []bugProbe{
		{
			// An identical retry gets 422, from the cache and from the
			// ledger alike; nothing is charged again.
			bug: BugReplayMismatchStatus,
			probe: func(t *testing.T, bl *bugLab) string {
				first := bl.do(t, charge("alice", "k1", body1))
				retry := bl.do(t, charge("alice", "k1", body1))
				if err := bl.cache.Reset(context.Background()); err != nil {
					t.Fatal(err)
				}
				fromLedger := bl.do(t, charge("alice", "k1", body1))
				otherPayload := bl.do(t, charge("alice", "k1", other))
				return fmt.Sprintf("first=%d retry=%d replayed=%q same body=%v from ledger=%d other payload=%d ledger=%d processor=%d",
					first.Code, retry.Code, retry.Header().Get("Idempotent-Replayed"), retry.Body.String() == first.Body.String(),
					fromLedger.Code, otherPayload.Code, bl.ledgerCount(t, "k1"), len(bl.Processor().Charges("k1")))
			},
			fixed: `first=201 retry=201 replayed="true" same body=true from ledger=201 other payload=422 ledger=1 processor=1`,
			buggy: `first=201 retry=422 replayed="" same body=false from ledger=422 other payload=422 ledger=1 processor=1`,
		},
		{
			// Every key's first processor charge fails (flaky 1): the
			// correct lab answers 502 and the retry charges; the bug
			// answers 409 to every retry, a minute (past the lock's lease)
			// later too, and never charges.
			bug:   BugStuckKey,
			flaky: 1,
			probe: func(t *testing.T, bl *bugLab) string {
				first := bl.do(t, charge("alice", "k1", body1))
				retry := bl.do(t, charge("alice", "k1", body1))
				bl.clock.Advance(time.Minute)
				late := bl.do(t, charge("alice", "k1", body1))
				return fmt.Sprintf("first=%d retry=%d after 1m=%d ledger=%d processor=%d",
					first.Code, retry.Code, late.Code, bl.ledgerCount(t, "k1"), len(bl.Processor().Charges("k1")))
			},
			fixed: "first=502 retry=201 after 1m=201 ledger=1 processor=1",
			buggy: "first=502 retry=409 after 1m=409 ledger=0 processor=0",
		},
		{
			// Every attempt is charged, written to the ledger and answered
			// 400; no key is kept.
			bug: BugChargeThen4xx,
			probe: func(t *testing.T, bl *bugLab) string {
				first := bl.do(t, charge("alice", "k1", body1))
				retry := bl.do(t, charge("alice", "k1", body1))
				return fmt.Sprintf("first=%d retry=%d key recorded=%v ledger=%d processor=%d",
					first.Code, retry.Code, bl.keyRecorded(t, "k1"), bl.ledgerCount(t, "k1"), len(bl.Processor().Charges("k1")))
			},
			fixed: "first=201 retry=201 key recorded=true ledger=1 processor=1",
			buggy: "first=400 retry=400 key recorded=false ledger=2 processor=2",
		},
		{
			// Concurrent copies of one key, split between two labs on the
			// same store and ledger, over a few rounds: the bug charges
			// twice; against one lab it holds.
			bug:     BugInProcessLock,
			latency: 30 * time.Millisecond,
			probe: func(t *testing.T, bl *bugLab) string {
				twin := bl.twin(t)
				procTwice, ledgerTwice := false, false
				for round := range 4 {
					key := fmt.Sprintf("k%d", round)
					split(charge("alice", key, body1), 6, bl.Server, twin)
					procTwice = procTwice || len(bl.Processor().Charges(key)) > 1
					ledgerTwice = ledgerTwice || bl.ledgerCount(t, key) > 1
				}
				split(charge("alice", "solo", body1), 6, bl.Server)
				return fmt.Sprintf("two labs charged twice: processor=%v ledger=%v; one lab: processor=%d ledger=%d",
					procTwice, ledgerTwice, len(bl.Processor().Charges("solo")), bl.ledgerCount(t, "solo"))
			},
			fixed: "two labs charged twice: processor=false ledger=false; one lab: processor=1 ledger=1",
			buggy: "two labs charged twice: processor=true ledger=true; one lab: processor=1 ledger=1",
		},
	}
}

// runBugProbes runs each backend probe on the correct lab and on the lab
// with its bug, at once, each on fresh backends from open. A probe's
// processor latency is at most maxLatency when it is set: the long
// latencies some probes need on Redis and Postgres under a loaded race
// suite (a second) are not needed where a store roundtrip takes
// microseconds.
func runBugProbes(t *testing.T, maxLatency time.Duration, open func(t *testing.T, cfg Config) *bugLab) {
	for _, tt := range append(backendBugProbes(), keyBugProbes()...) {
		t.Run(tt.bug, func(t *testing.T) {
			t.Parallel()
			for _, withBug := range []bool{false, true} {
				t.Run(fmt.Sprintf("bug=%v", withBug), func(t *testing.T) {
					t.Parallel()
					cfg := Config{ProcessorLatency: tt.latency, FlakyEvery: tt.flaky}
					if maxLatency > 0 {
						cfg.ProcessorLatency = min(cfg.ProcessorLatency, maxLatency)
					}
					want := tt.fixed
					if withBug {
						cfg.Bugs = []string{tt.bug}
						want = tt.buggy
					}
					if got := tt.probe(t, open(t, cfg)); got != want {
						t.Errorf("bug %s enabled=%v: probe = %s, want %s", tt.bug, withBug, got, want)
					}
				})
			}
		})
	}
}

// memoryProbeLatency caps the probes' processor latency on the memory
// backends (see runBugProbes): 100 ms, and 400 ms under the race
// detector, whose loaded suite can hold a goroutine back for tens of
// milliseconds.
var memoryProbeLatency = min(testenv.Bound(100*time.Millisecond), 400*time.Millisecond)

func TestSeededBugsMemory(t *testing.T) {
	runBugProbes(t, memoryProbeLatency, func(t *testing.T, cfg Config) *bugLab {
		clk := newFakeClock()
		l, c := NewMemoryLedger(), NewMemoryCache(clk.Now)
		return newBugLab(t, cfg, l, c, clk, func(*testing.T) (Ledger, Cache) { return l, c })
	})
}

// TestSeededBugsRedisPostgres runs the probes on a real Redis and
// Postgres; a twin lab opens its own connections to the same schema and
// key prefix, as a second process of the service would.
func TestSeededBugsRedisPostgres(t *testing.T) {
	// Every seeded bug on Redis and Postgres: the long suite's sweep; the
	// fast one probes them on the memory backends (TestSeededBugsMemory).
	testenv.SkipUnlessLong(t)
	t.Parallel()
	url, dsn := testsvc.Redis(t), testsvc.Postgres(t)
	runBugProbes(t, 0, func(t *testing.T, cfg Config) *bugLab {
		l, c := newTestPostgresLedger(t, dsn), newTestRedisCache(t, url)
		reopen := func(t *testing.T) (Ledger, Cache) {
			l2, err := NewPostgresLedger(testCtx(t), dsn, PostgresSchema(l.schema))
			if err != nil {
				t.Fatalf("NewPostgresLedger(schema %s) = %v", l.schema, err)
			}
			t.Cleanup(l2.Close)
			c2, err := NewRedisCache(testCtx(t), url, RedisPrefix(c.prefix))
			if err != nil {
				t.Fatalf("NewRedisCache(prefix %s) = %v", c.prefix, err)
			}
			t.Cleanup(func() { c2.Close() })
			return l2, c2
		}
		return newBugLab(t, cfg, l, c, newFakeClock(), reopen)
	})
}

// TestStuckKeyFlakyByDefault: the stuck-key bug alone fails the first
// charge of about one key in DefaultFlakyEvery, the same keys on every
// lab, so a demo with the bug meets it; the correct lab fails none.
func TestStuckKeyFlakyByDefault(t *testing.T) {
	const keys = 200
	failed := func(cfg Config) []string {
		var out []string
		tl := newTestLab(t, cfg)
		for i := range keys {
			key := fmt.Sprintf("key-%d", i)
			if w := tl.do(t, charge("alice", key, body1)); w.Code != http.StatusCreated {
				wantProblem(t, key, w, http.StatusBadGateway)
				out = append(out, key)
			}
		}
		return out
	}
	if got := failed(Config{}); len(got) != 0 {
		t.Errorf("correct lab: first charges failed for %d of %d keys, want none", len(got), keys)
	}
	a, b := failed(Config{Bugs: []string{BugStuckKey}}), failed(Config{Bugs: []string{BugStuckKey}})
	if lo, hi := keys/DefaultFlakyEvery/2, keys/DefaultFlakyEvery*2; len(a) < lo || len(a) > hi {
		t.Errorf("stuck-key: first charges failed for %d of %d keys, want %d to %d", len(a), keys, lo, hi)
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("stuck-key: failed keys differ between two labs:\n%v\n%v", a, b)
	}
	if got := failed(Config{Bugs: []string{BugStuckKey}, FlakyEvery: -1}); len(got) != 0 {
		t.Errorf("stuck-key with FlakyEvery -1: first charges failed for %d keys, want none", len(got))
	}
}
