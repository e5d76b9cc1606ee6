package lab

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// This file holds the backend contracts: any Ledger or Cache (memory,
// Postgres, Redis) must pass them. A backend's test calls
// runLedgerContract / runCacheContract with a fresh, empty store.

func TestMemoryLedgerContract(t *testing.T) {
	runLedgerContract(t, func(t *testing.T) Ledger { return NewMemoryLedger() })
}

func TestMemoryCacheContract(t *testing.T) {
	runCacheContract(t, func(t *testing.T) (Cache, func(time.Duration)) {
		clk := newFakeClock()
		return NewMemoryCache(clk.Now), clk.Advance
	})
}

// runLedgerContract checks the Ledger contract of backend.go against
// ledgers made by newLedger (each subtest gets a fresh, empty one).
func runLedgerContract(t *testing.T, newLedger func(t *testing.T) Ledger) {
	ctx := context.Background()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	id := KeyID{User: "alice", Key: "k1"}
	resp := &Response{Status: 201, Body: []byte(`{"id":"ch_1"}` + "\n")}

	t.Run("BeginKey", func(t *testing.T) {
		l := newLedger(t)
		rec := KeyRecord{ID: id, Fingerprint: "fp", State: KeyInFlight, Owner: "o1", ExpiresAt: now.Add(time.Minute)}
		got, created, err := l.BeginKey(ctx, rec, now)
		if err != nil || !created {
			t.Fatalf("BeginKey(new) = %v, %v, want created", created, err)
		}
		if diff := cmp.Diff(rec, got, cmpTime); diff != "" {
			t.Errorf("BeginKey(new) record (-want +got):\n%s", diff)
		}
		rec2 := rec
		rec2.Owner = "o2"
		got, created, err = l.BeginKey(ctx, rec2, now)
		if err != nil || created {
			t.Fatalf("BeginKey(live) = %v, %v, want existing", created, err)
		}
		if got.Owner != "o1" || got.State != KeyInFlight {
			t.Errorf("BeginKey(live) = owner %q state %q, want o1 in_flight", got.Owner, got.State)
		}
		// Other user, same key: another record.
		other := rec
		other.ID.User = "bob"
		if _, created, err := l.BeginKey(ctx, other, now); err != nil || !created {
			t.Errorf("BeginKey(other user) = %v, %v, want created", created, err)
		}
		// Past the lease the record is replaced.
		later := now.Add(2 * time.Minute)
		rec2.ExpiresAt = later.Add(time.Minute)
		got, created, err = l.BeginKey(ctx, rec2, later)
		if err != nil || !created || got.Owner != "o2" {
			t.Errorf("BeginKey(expired) = %q, %v, %v, want o2 created", got.Owner, created, err)
		}
	})

	t.Run("CompleteCharge", func(t *testing.T) {
		l := newLedger(t)
		if _, _, err := l.BeginKey(ctx, KeyRecord{ID: id, Fingerprint: "fp", State: KeyInFlight, Owner: "o1", ExpiresAt: now.Add(time.Minute)}, now); err != nil {
			t.Fatal(err)
		}
		chID, err := l.NextChargeID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ch := Charge{ID: chID, IdempotencyKey: "k1", User: "alice", Amount: 100, Currency: "usd", Customer: "c", Status: "succeeded", Created: now}
		done := KeyRecord{ID: id, Fingerprint: "fp", State: KeyCompleted, Response: resp, ChargeID: chID, Owner: "o1", ExpiresAt: now.Add(time.Hour)}

		lost := done
		lost.Owner = "intruder"
		if err := l.CompleteCharge(ctx, lost, ch); !errors.Is(err, ErrKeyLost) {
			t.Fatalf("CompleteCharge(other owner) = %v, want ErrKeyLost", err)
		}
		if rows, _ := l.ChargesByKey(ctx, "k1"); len(rows) != 0 {
			t.Fatalf("after a lost CompleteCharge, ChargesByKey = %d rows, want 0", len(rows))
		}
		if err := l.CompleteCharge(ctx, done, ch); err != nil {
			t.Fatalf("CompleteCharge = %v", err)
		}
		got, found, err := l.LookupKey(ctx, id, now)
		if err != nil || !found {
			t.Fatalf("LookupKey = %v, %v, want found", found, err)
		}
		if diff := cmp.Diff(done, got, cmpTime); diff != "" {
			t.Errorf("LookupKey after CompleteCharge (-want +got):\n%s", diff)
		}
		rows, err := l.ChargesByKey(ctx, "k1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]Charge{ch}, rows, cmpTime); diff != "" {
			t.Errorf("ChargesByKey (-want +got):\n%s", diff)
		}
		if _, found, _ := l.LookupKey(ctx, id, now.Add(2*time.Hour)); found {
			t.Errorf("LookupKey past ExpiresAt found the record, want absent")
		}
		// Unowned completion upserts unconditionally.
		ch2 := ch
		ch2.ID, _ = l.NextChargeID(ctx)
		if ch2.ID == ch.ID {
			t.Errorf("NextChargeID repeated %q", ch.ID)
		}
		unowned := done
		unowned.Owner, unowned.ChargeID, unowned.Response = "", ch2.ID, nil
		if err := l.CompleteCharge(ctx, unowned, ch2); err != nil {
			t.Fatalf("CompleteCharge(unowned) = %v", err)
		}
		got, _, _ = l.LookupKey(ctx, id, now)
		if got.ChargeID != ch2.ID || got.Response != nil {
			t.Errorf("after unowned CompleteCharge, record = %q %v, want %q and no response", got.ChargeID, got.Response, ch2.ID)
		}
		counts, err := l.ChargeCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]int{"k1": 2}, counts); diff != "" {
			t.Errorf("ChargeCounts (-want +got):\n%s", diff)
		}
	})

	t.Run("ReleaseKeyAndPutKey", func(t *testing.T) {
		l := newLedger(t)
		if err := l.ReleaseKey(ctx, id, "o1"); err != nil {
			t.Errorf("ReleaseKey(missing) = %v, want nil", err)
		}
		if _, _, err := l.BeginKey(ctx, KeyRecord{ID: id, State: KeyInFlight, Owner: "o1", ExpiresAt: now.Add(time.Minute)}, now); err != nil {
			t.Fatal(err)
		}
		if err := l.ReleaseKey(ctx, id, "o2"); !errors.Is(err, ErrKeyLost) {
			t.Errorf("ReleaseKey(other owner) = %v, want ErrKeyLost", err)
		}
		if err := l.ReleaseKey(ctx, id, "o1"); err != nil {
			t.Fatalf("ReleaseKey = %v", err)
		}
		if _, found, _ := l.LookupKey(ctx, id, now); found {
			t.Errorf("after ReleaseKey the record is still there")
		}
		put := KeyRecord{ID: id, Fingerprint: "fp", State: KeyCompleted, Response: resp, ExpiresAt: now.Add(time.Hour)}
		if err := l.PutKey(ctx, put); err != nil {
			t.Fatal(err)
		}
		got, found, _ := l.LookupKey(ctx, id, now)
		if !found {
			t.Fatal("PutKey record not found")
		}
		if diff := cmp.Diff(put, got, cmpTime); diff != "" {
			t.Errorf("PutKey record (-want +got):\n%s", diff)
		}
		if err := l.ReleaseKey(ctx, id, ""); !errors.Is(err, ErrKeyLost) {
			t.Errorf("ReleaseKey(completed) = %v, want ErrKeyLost", err)
		}
		if err := l.InsertCharge(ctx, Charge{ID: "ch_x", Amount: 1, Currency: "usd", Status: "succeeded", Created: now}); err != nil {
			t.Fatal(err)
		}
		counts, _ := l.ChargeCounts(ctx)
		if len(counts) != 0 {
			t.Errorf("ChargeCounts with a keyless row = %v, want empty", counts)
		}
		if rows, err := l.ChargesByKey(ctx, "none"); err != nil || rows == nil || len(rows) != 0 {
			t.Errorf("ChargesByKey(none) = %v, %v, want empty non-nil", rows, err)
		}
	})

	t.Run("ConcurrentBeginKey", func(t *testing.T) {
		l := newLedger(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		winners := 0
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, created, err := l.BeginKey(ctx, KeyRecord{ID: id, State: KeyInFlight, Owner: string(rune('a' + i)), ExpiresAt: now.Add(time.Minute)}, now)
				if err != nil {
					t.Error(err)
				}
				if created {
					mu.Lock()
					winners++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if winners != 1 {
			t.Errorf("20 concurrent BeginKey: %d created, want 1", winners)
		}
	})

	t.Run("Accounts", func(t *testing.T) {
		l := newLedger(t)
		if _, err := l.Account(ctx, "a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Account(unknown) = %v, want ErrNotFound", err)
		}
		if _, err := l.Debits(ctx, "a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Debits(unknown) = %v, want ErrNotFound", err)
		}
		v := func(n int64) *int64 { return &n }
		if _, err := l.Debit(ctx, "a", 1, nil, "x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Debit(unknown) = %v, want ErrNotFound", err)
		}
		a, err := l.PutAccount(ctx, "a", 100)
		if err != nil || a != (Account{ID: "a", Balance: 100}) {
			t.Fatalf("PutAccount = %+v, %v", a, err)
		}
		a, err = l.Debit(ctx, "a", 30, v(0), "op1")
		if err != nil || a != (Account{ID: "a", Balance: 70, Version: 1}) {
			t.Fatalf("Debit = %+v, %v, want 70 v1", a, err)
		}
		_, err = l.Debit(ctx, "a", 30, v(0), "op1")
		var stale *StaleError
		if !errors.As(err, &stale) || stale.Current != 1 || !errors.Is(err, ErrStale) {
			t.Errorf("Debit(stale) = %v, want *StaleError{1}", err)
		}
		if _, err := l.Debit(ctx, "a", 71, v(1), "op2"); !errors.Is(err, ErrInsufficientFunds) {
			t.Errorf("Debit(too much) = %v, want ErrInsufficientFunds", err)
		}
		if a, err = l.Debit(ctx, "a", 10, nil, "op3"); err != nil || a.Version != 2 || a.Balance != 60 {
			t.Errorf("Debit(blind) = %+v, %v, want 60 v2", a, err)
		}
		ds, err := l.Debits(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		want := []Debit{{OpID: "op1", Amount: 30, Version: 1}, {OpID: "op3", Amount: 10, Version: 2}}
		if diff := cmp.Diff(want, ds); diff != "" {
			t.Errorf("Debits (-want +got):\n%s", diff)
		}
		if a, err = l.Account(ctx, "a"); err != nil || a.Balance != 60 {
			t.Errorf("Account = %+v, %v", a, err)
		}
		if _, err := l.PutAccount(ctx, "a", 5); err != nil {
			t.Fatal(err)
		}
		if ds, err := l.Debits(ctx, "a"); err != nil || len(ds) != 0 || ds == nil {
			t.Errorf("Debits after PutAccount = %v, %v, want empty non-nil", ds, err)
		}
	})

	t.Run("Posts", func(t *testing.T) {
		l := newLedger(t)
		if p, err := l.Post(ctx, "p"); err != nil || p != (Post{ID: "p"}) {
			t.Errorf("Post(unknown) = %+v, %v, want 0 likes", p, err)
		}
		steps := []struct {
			op    string
			dedup bool
			want  int64
		}{
			{"o1", true, 1}, {"o1", true, 1}, {"o2", true, 2}, {"o3", false, 3}, {"o3", false, 4}, {"", false, 5},
		}
		for _, s := range steps {
			p, err := l.Like(ctx, "p", s.op, s.dedup)
			if err != nil || p.Likes != s.want {
				t.Errorf("Like(p, %q, %v) = %+v, %v, want %d likes", s.op, s.dedup, p, err, s.want)
			}
		}
		for op, want := range map[string]bool{"o1": true, "o3": true, "o9": false} {
			if got, err := l.HasLikeOp(ctx, "p", op); err != nil || got != want {
				t.Errorf("HasLikeOp(p, %q) = %v, %v, want %v", op, got, err, want)
			}
		}
		if got, _ := l.HasLikeOp(ctx, "other", "o1"); got {
			t.Errorf("HasLikeOp(other, o1) = true, want false (ops are per post)")
		}
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := l.Like(ctx, "q", "same", true); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if p, _ := l.Post(ctx, "q"); p.Likes != 1 {
			t.Errorf("20 concurrent Like(dedup) = %d likes, want 1", p.Likes)
		}
	})

	t.Run("Reset", func(t *testing.T) {
		l := newLedger(t)
		if _, _, err := l.BeginKey(ctx, KeyRecord{ID: id, State: KeyInFlight, ExpiresAt: now.Add(time.Minute)}, now); err != nil {
			t.Fatal(err)
		}
		_ = l.InsertCharge(ctx, Charge{ID: "ch_r", IdempotencyKey: "k1", Created: now})
		_, _ = l.PutAccount(ctx, "a", 1)
		_, _ = l.Like(ctx, "p", "o", true)
		if err := l.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := l.LookupKey(ctx, id, now); found {
			t.Error("after Reset a key remains")
		}
		if c, _ := l.ChargeCounts(ctx); len(c) != 0 {
			t.Errorf("after Reset ChargeCounts = %v", c)
		}
		if _, err := l.Account(ctx, "a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("after Reset Account = %v, want ErrNotFound", err)
		}
		if p, _ := l.Post(ctx, "p"); p.Likes != 0 {
			t.Errorf("after Reset likes = %d", p.Likes)
		}
		if ok, _ := l.HasLikeOp(ctx, "p", "o"); ok {
			t.Error("after Reset a like op remains")
		}
	})
}

// runCacheContract checks the Cache contract against caches made by
// newCache, which also returns a function that lets TTLs run out (advance
// a fake clock, or sleep for a real store).
func runCacheContract(t *testing.T, newCache func(t *testing.T) (Cache, func(time.Duration))) {
	ctx := context.Background()
	const ttl = 200 * time.Millisecond
	t.Run("Lock", func(t *testing.T) {
		c, advance := newCache(t)
		if ok, err := c.Lock(ctx, "k", "t1", ttl); err != nil || !ok {
			t.Fatalf("Lock(free) = %v, %v, want true", ok, err)
		}
		if ok, err := c.Lock(ctx, "k", "t2", ttl); err != nil || ok {
			t.Fatalf("Lock(held) = %v, %v, want false", ok, err)
		}
		if err := c.Unlock(ctx, "k", "t2"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := c.Lock(ctx, "k", "t2", ttl); ok {
			t.Fatal("Unlock by another token released the lock")
		}
		if err := c.Unlock(ctx, "k", "t1"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := c.Lock(ctx, "k", "t2", ttl); !ok {
			t.Fatal("Lock after Unlock = false, want true")
		}
		advance(ttl + 100*time.Millisecond)
		if ok, _ := c.Lock(ctx, "k", "t3", ttl); !ok {
			t.Fatal("Lock after the TTL = false, want true")
		}
		// Locks and entries are separate namespaces.
		if _, found, _ := c.Get(ctx, "k"); found {
			t.Error("Get(k) found an entry where only a lock exists")
		}
	})
	t.Run("GetPut", func(t *testing.T) {
		c, advance := newCache(t)
		if _, found, err := c.Get(ctx, "k"); err != nil || found {
			t.Fatalf("Get(empty) = %v, %v", found, err)
		}
		e := Entry{Fingerprint: "fp", Response: Response{Status: 201, Body: []byte("{\"a\":1}\n")}}
		if err := c.Put(ctx, "k", e, ttl); err != nil {
			t.Fatal(err)
		}
		got, found, err := c.Get(ctx, "k")
		if err != nil || !found {
			t.Fatalf("Get = %v, %v", found, err)
		}
		if diff := cmp.Diff(e, got); diff != "" {
			t.Errorf("Get (-want +got):\n%s", diff)
		}
		if ok, _ := c.Lock(ctx, "k", "t", ttl); !ok {
			t.Error("Lock(k) failed where only an entry exists")
		}
		advance(ttl + 100*time.Millisecond)
		if _, found, _ := c.Get(ctx, "k"); found {
			t.Error("Get after the TTL found the entry")
		}
	})
	t.Run("ConcurrentLock", func(t *testing.T) {
		c, _ := newCache(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		winners := 0
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := c.Lock(ctx, "k", string(rune('a'+i)), time.Minute)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					winners++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if winners != 1 {
			t.Errorf("20 concurrent Lock: %d won, want 1", winners)
		}
	})
	t.Run("Reset", func(t *testing.T) {
		c, _ := newCache(t)
		_, _ = c.Lock(ctx, "k", "t", time.Minute)
		_ = c.Put(ctx, "k", Entry{Fingerprint: "fp"}, time.Minute)
		if err := c.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := c.Get(ctx, "k"); found {
			t.Error("after Reset the entry remains")
		}
		if ok, _ := c.Lock(ctx, "k", "t2", time.Minute); !ok {
			t.Error("after Reset the lock remains")
		}
	})
}

// cmpTime compares times by instant (a database may return another
// location or monotonic reading).
var cmpTime = cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })

// fakeClock is a settable clock, safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
