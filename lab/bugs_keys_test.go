package lab

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// keyBugProbes are the probes of the bugs of how keys are named, kept and
// claimed (charges_keys.go), run on memory and on Redis+Postgres with the
// other backend probes.
func keyBugProbes() []bugProbe {
	other := `{"amount":999,"currency":"usd","customer":"cus_2"}`
	return []bugProbe{
		{
			// A first request refused 400 burns its key: the corrected
			// request gets 412, from the cache and from the ledger, and
			// is never charged; another key is not touched.
			bug: BugBurntKey,
			probe: func(t *testing.T, bl *bugLab) string {
				first := bl.do(t, charge("alice", "k1", `{"amount":-1,"currency":"usd"}`))
				corrected := bl.do(t, charge("alice", "k1", body1))
				if err := bl.cache.Reset(context.Background()); err != nil {
					t.Fatal(err)
				}
				fromLedger := bl.do(t, charge("alice", "k1", body1))
				fresh := bl.do(t, charge("alice", "k2", body1))
				return fmt.Sprintf("first=%d corrected=%d from ledger=%d other key=%d ledger=%d processor=%d",
					first.Code, corrected.Code, fromLedger.Code, fresh.Code, bl.ledgerCount(t, "k1"), len(bl.Processor().Charges("k1")))
			},
			fixed: "first=400 corrected=201 from ledger=201 other key=201 ledger=1 processor=1",
			buggy: "first=400 corrected=412 from ledger=412 other key=201 ledger=0 processor=0",
		},
		{
			// Keys equal on their first 32 characters collide: the second
			// is served the first's charge, or 422 with another body; a
			// key that differs within them is charged.
			bug: BugKeyTruncate,
			probe: func(t *testing.T, bl *bugLab) string {
				prefix := strings.Repeat("p", KeyTruncateLen)
				a := bl.do(t, charge("alice", prefix+"-a", body1))
				b := bl.do(t, charge("alice", prefix+"-b", body1))
				c := bl.do(t, charge("alice", prefix+"-c", other))
				d := bl.do(t, charge("alice", "q"+prefix[1:]+"-a", body1))
				return fmt.Sprintf("a=%d b=%d replayed=%q c=%d d=%d ledger a=%d b=%d",
					a.Code, b.Code, b.Header().Get("Idempotent-Replayed"), c.Code, d.Code,
					bl.ledgerCount(t, prefix+"-a"), bl.ledgerCount(t, prefix+"-b"))
			},
			fixed: `a=201 b=201 replayed="" c=201 d=201 ledger a=1 b=1`,
			buggy: `a=201 b=201 replayed="true" c=422 d=201 ledger a=1 b=0`,
		},
		{
			// The server mints its own key: a retry with the client's key
			// charges again, a retry with the minted key is replayed, and
			// a keyless charge is taken.
			bug: BugServerMintedKey,
			probe: func(t *testing.T, bl *bugLab) string {
				first := bl.do(t, charge("alice", "k1", body1))
				key := first.Header().Get("Idempotency-Key")
				own := bl.do(t, charge("alice", "k1", body1))
				mk := key
				if mk == "" {
					mk = "k1"
				}
				withMinted := bl.do(t, charge("alice", mk, body1))
				keyless := bl.do(t, req{method: "POST", path: "/charges", user: "alice", body: body1, noKey: true})
				return fmt.Sprintf("minted=%v own key again=%d replayed=%q minted key=%d replayed=%q keyless=%d ledger=%d processor=%d",
					minted(key), own.Code, own.Header().Get("Idempotent-Replayed"), withMinted.Code, withMinted.Header().Get("Idempotent-Replayed"),
					keyless.Code, bl.ledgerCount(t, "k1"), len(bl.Processor().Charges("k1")))
			},
			fixed: `minted=false own key again=201 replayed="true" minted key=201 replayed="true" keyless=400 ledger=1 processor=1`,
			buggy: `minted=true own key again=201 replayed="" minted key=201 replayed="true" keyless=201 ledger=2 processor=2`,
		},
		{
			// k0 to k100 charged in turn: k1, with 99 keys after it, is
			// still kept; k0, with 100, is charged again.
			bug: BugRetentionByCount,
			probe: func(t *testing.T, bl *bugLab) string {
				for i := range RetentionKeys + 1 {
					wantStatus(t, "charge", bl.do(t, charge("alice", fmt.Sprintf("k%d", i), body1)), http.StatusCreated)
				}
				k1 := bl.do(t, charge("alice", "k1", body1))
				k0 := bl.do(t, charge("alice", "k0", body1))
				return fmt.Sprintf("k1 replayed=%q k0 replayed=%q ledger k0=%d processor k0=%d",
					k1.Header().Get("Idempotent-Replayed"), k0.Header().Get("Idempotent-Replayed"),
					bl.ledgerCount(t, "k0"), len(bl.Processor().Charges("k0")))
			},
			fixed: `k1 replayed="true" k0 replayed="true" ledger k0=1 processor k0=1`,
			buggy: `k1 replayed="true" k0 replayed="" ledger k0=2 processor k0=2`,
		},
		{
			// k2 comes in while k1 is being charged: the one whose
			// in-flight record was overwritten completes under the
			// other's key, so its retry charges again.
			bug: BugSharedRecord,
			// a second: k2 must be sent while k1 is charging, and a long
			// race suite on Redis+Postgres once held the poll back past
			// a charge of 200ms
			latency: time.Second,
			probe: func(t *testing.T, bl *bugLab) string {
				var wg sync.WaitGroup
				wg.Go(func() { bl.do(t, charge("alice", "k1", body1)) })
				// k2 is sent once k1 is in flight: it holds the shared
				// record (the bug) or its own (the correct lab).
				for start := time.Now(); time.Since(start) < 2*time.Second; time.Sleep(time.Millisecond) {
					rec, found, err := bl.ledger.LookupKey(context.Background(), sharedRecord, bl.clock.Now())
					if err == nil && found && rec.Owner == cacheKey(KeyID{User: "alice", Key: "k1"}) {
						break
					}
					if bl.keyRecorded(t, "k1") {
						break
					}
				}
				wg.Go(func() { bl.do(t, charge("alice", "k2", body1)) })
				wg.Wait()
				replayed := 0
				for _, k := range []string{"k1", "k2"} {
					if bl.do(t, charge("alice", k, body1)).Header().Get("Idempotent-Replayed") == "true" {
						replayed++
					}
				}
				return fmt.Sprintf("retries replayed=%d ledger=%d processor=%d", replayed,
					bl.ledgerCount(t, "k1")+bl.ledgerCount(t, "k2"), len(bl.Processor().Charges("k1"))+len(bl.Processor().Charges("k2")))
			},
			fixed: `retries replayed=2 ledger=2 processor=2`,
			buggy: `retries replayed=1 ledger=3 processor=3`,
		},
		{
			// Keyless charges that opt out of deduplication: bob's is
			// served alice's charge under the bug; without the header a
			// keyless charge is refused by the correct lab.
			bug: BugKeylessShared,
			probe: func(t *testing.T, bl *bugLab) string {
				a := bl.do(t, req{method: "POST", path: "/charges", user: "alice", body: body1, noKey: true, optional: true})
				b := bl.do(t, req{method: "POST", path: "/charges", user: "bob", body: other, noKey: true, optional: true})
				plain := bl.do(t, req{method: "POST", path: "/charges", user: "bob", body: other, noKey: true})
				return fmt.Sprintf("alice=%d bob=%d replayed=%q bob got alice's charge=%v without the header=%d processor=%d",
					a.Code, b.Code, b.Header().Get("Idempotent-Replayed"), b.Body.String() == a.Body.String(), plain.Code, bl.Processor().total())
			},
			fixed: `alice=201 bob=201 replayed="" bob got alice's charge=false without the header=400 processor=2`,
			buggy: `alice=201 bob=201 replayed="true" bob got alice's charge=true without the header=201 processor=1`,
		},
		{
			// Copies sent at once race through the narrow window; a copy
			// sent 10 ms later, while the first is still charging, gets
			// 409. The charge takes 150 ms: under -race, on Redis and
			// Postgres, a loaded machine can delay the later copy by
			// tens of milliseconds, and it must still find the first in
			// flight.
			// (A second, not 150 ms: the first poll of Postgres under a long
			// race suite once came after a 150 ms charge had ended.)
			bug:     BugNarrowRace,
			latency: time.Second,
			probe: func(t *testing.T, bl *bugLab) string {
				twice := false
				for round := range 4 {
					key := fmt.Sprintf("k%d", round)
					split(charge("alice", key, body1), 8, bl.Server)
					twice = twice || len(bl.Processor().Charges(key)) > 1
				}
				var wg sync.WaitGroup
				wg.Go(func() { bl.do(t, charge("alice", "late", body1)) })
				// The later copy goes once the first has marked its key
				// in flight (10 ms at least): a sleep alone raced the
				// first's start on a loaded machine.
				time.Sleep(10 * time.Millisecond)
				markedInFlight(t, bl, KeyID{User: "alice", Key: "late"})
				late := bl.do(t, charge("alice", "late", body1))
				wg.Wait()
				return fmt.Sprintf("copies at once charged twice=%v; 10 ms later: %d processor=%d",
					twice, late.Code, len(bl.Processor().Charges("late")))
			},
			fixed: "copies at once charged twice=false; 10 ms later: 409 processor=1",
			buggy: "copies at once charged twice=true; 10 ms later: 409 processor=1",
		},
	}
}

// TestCrashStuck kills the lab in the middle of a charge and starts it
// again on the same backends (memory ones too): the key answers 409 while
// the dead request's lease runs; the correct lab's lease is the lock's
// (300 ms here), after which the retry charges once; under crash-stuck it
// is the key's retention, and the key stays stuck.
func TestCrashStuck(t *testing.T) {
	t.Parallel()
	backends := []struct {
		name string
		b    func(t *testing.T) Backends
	}{
		{"memory", func(*testing.T) Backends { return Backends{Store: "memory", Ledger: "memory"} }},
		{"redis+postgres", func(t *testing.T) Backends {
			return Backends{Store: testsvc.Redis(t), Ledger: testsvc.Postgres(t)}
		}},
	}
	for i, be := range backends {
		b := be.b(t)
		for _, withBug := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/bug=%v", be.name, withBug), func(t *testing.T) {
				t.Parallel()
				cfg := Config{ProcessorLatency: 200 * time.Millisecond, LockTTL: 300 * time.Millisecond}
				want := "after restart: 409; after the lock's lease: 201 ledger=1 processor=1"
				if withBug {
					cfg.Bugs = []string{BugCrashStuck}
					want = "after restart: 409; after the lock's lease: 409 ledger=0 processor=1"
				}
				b := b
				if be.name != "memory" {
					b.Namespace = fmt.Sprintf("crash_%d_%v", i, withBug)
				}
				if got := crashProbe(t, cfg, b); got != want {
					t.Errorf("probe = %s, want %s", got, want)
				}
			})
		}
	}
}

// crashProbe starts a lab, crashes it while a charge waits on the card
// processor, restarts it and retries the charge.
func crashProbe(t *testing.T, cfg Config, b Backends) string {
	t.Helper()
	rl, err := Start(context.Background(), cfg, b, 1, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer rl.Stop()
	post := func() (int, error) {
		r, err := http.NewRequest("POST", rl.URL+"/charges", strings.NewReader(body1))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Authorization", "Bearer alice")
		r.Header.Set("Idempotency-Key", "k1")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	cut := make(chan error, 1)
	go func() {
		_, err := post()
		cut <- err
	}()
	time.Sleep(80 * time.Millisecond) // the charge waits on the processor
	rl.Crash()
	if err := <-cut; err == nil {
		t.Errorf("the request cut by the crash got an answer")
	}
	if err := rl.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	early, err := post()
	if err != nil {
		t.Fatalf("retry after restart: %v", err)
	}
	time.Sleep(cfg.LockTTL) // the lock's lease is over
	late, err := post()
	if err != nil {
		t.Fatalf("retry after the lease: %v", err)
	}
	srv := rl.srvs[0]
	rows, err := srv.ledger.ChargesByKey(context.Background(), "k1")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("after restart: %d; after the lock's lease: %d ledger=%d processor=%d", early, late, len(rows), len(srv.Processor().Charges("k1")))
}

// markedInFlight waits, up to 10 s, until the key id has a record in
// bl's ledger that is not completed.
func markedInFlight(t *testing.T, bl *bugLab, id KeyID) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		rec, found, err := bl.ledger.LookupKey(t.Context(), id, bl.now())
		if err != nil {
			t.Fatalf("lookup %v: %v", id, err)
		}
		if found && rec.State != KeyCompleted {
			return
		}
	}
	t.Fatalf("%v was not marked in flight within 10 s", id)
}
