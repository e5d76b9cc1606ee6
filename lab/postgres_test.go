package lab

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// t0 is the tests' clock origin, at microsecond precision (Postgres keeps
// timestamps to the microsecond).
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)

// pgSchemas numbers the schemas the tests create, one per ledger.
var pgSchemas atomic.Int64

// newTestPostgresLedger opens a ledger in a fresh schema of the server at
// dsn, closed when t ends.
func newTestPostgresLedger(t *testing.T, dsn string) *PostgresLedger {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := NewPostgresLedger(ctx, dsn, PostgresSchema(fmt.Sprintf("lab_test_%d", pgSchemas.Add(1))))
	if err != nil {
		t.Fatalf("NewPostgresLedger(%q) = %v", dsn, err)
	}
	t.Cleanup(l.Close)
	return l
}

// TestPostgresLedger runs the Ledger contract and the extra checks against
// a real Postgres, each subtest in its own schema of one server.
func TestPostgresLedger(t *testing.T) {
	t.Parallel()
	dsn := testsvc.Postgres(t)
	open := func(t *testing.T) Ledger { return newTestPostgresLedger(t, dsn) }
	t.Run("contract", func(t *testing.T) { runLedgerContract(t, open) })
	t.Run("extra", func(t *testing.T) {
		testenv.SkipUnlessLong(t) // a ledger per check; the memory ledger meets them in the fast suite
		runLedgerExtraChecks(t, open)
	})
	t.Run("schemas", func(t *testing.T) { checkSchemas(t, dsn) })
}

// TestMemoryLedgerExtraChecks holds the reference ledger to the extra
// checks, so that they ask nothing the memory ledger does not do.
func TestMemoryLedgerExtraChecks(t *testing.T) {
	runLedgerExtraChecks(t, func(t *testing.T) Ledger { return NewMemoryLedger() })
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func keyInFlight(user, key, owner string, expires time.Time) KeyRecord {
	return KeyRecord{ID: KeyID{User: user, Key: key}, Fingerprint: "fp-" + key, State: KeyInFlight, Owner: owner, ExpiresAt: expires}
}

func keyCompleted(rec KeyRecord, chargeID string, expires time.Time) KeyRecord {
	rec.State = KeyCompleted
	rec.ChargeID = chargeID
	rec.Response = &Response{Status: 201, Body: []byte(`{"id":"` + chargeID + `"}`)}
	rec.ExpiresAt = expires
	return rec
}

func testCharge(id, key, user string) Charge {
	return Charge{ID: id, IdempotencyKey: key, User: user, Amount: 100, Currency: "usd", Customer: "cus_1", Status: "succeeded", Created: t0}
}

func chargeIDs(t *testing.T, l Ledger, key string) []string {
	t.Helper()
	chs, err := l.ChargesByKey(testCtx(t), key)
	if err != nil {
		t.Fatalf("ChargesByKey(%q) = %v", key, err)
	}
	ids := []string{}
	for _, ch := range chs {
		ids = append(ids, ch.ID)
	}
	return ids
}

// runLedgerExtraChecks adds to runLedgerContract (contract_test.go) what
// the Postgres ledger must also get right: expiry boundaries, generations of
// a key, concurrent completions, debits and likes, and the shape of the
// no-unique-index bug. open returns a new, empty ledger.
func runLedgerExtraChecks(t *testing.T, open func(t *testing.T) Ledger) {
	t.Run("BeginKey", func(t *testing.T) {
		ctx, l := testCtx(t), open(t)
		a := keyInFlight("alice", "k1", "o1", t0.Add(time.Minute))
		got, created, err := l.BeginKey(ctx, a, t0)
		if err != nil || !created {
			t.Fatalf("BeginKey(new) = _, %v, %v, want true, nil", created, err)
		}
		if diff := cmp.Diff(a, got); diff != "" {
			t.Errorf("BeginKey(new) record (-want +got):\n%s", diff)
		}
		b := keyInFlight("alice", "k1", "o2", t0.Add(2*time.Minute))
		got, created, err = l.BeginKey(ctx, b, t0.Add(time.Second))
		if err != nil || created {
			t.Fatalf("BeginKey(live) = _, %v, %v, want false, nil", created, err)
		}
		if diff := cmp.Diff(a, got); diff != "" {
			t.Errorf("BeginKey(live) returns the existing record (-want +got):\n%s", diff)
		}
		// Scoped per user: bob's k1 is another record.
		if _, created, err := l.BeginKey(ctx, keyInFlight("bob", "k1", "o3", t0.Add(time.Minute)), t0); err != nil || !created {
			t.Errorf("BeginKey(bob k1) = _, %v, %v, want true, nil", created, err)
		}
		// Expired (ExpiresAt <= now) counts as absent and is replaced.
		got, created, err = l.BeginKey(ctx, b, t0.Add(time.Minute))
		if err != nil || !created {
			t.Fatalf("BeginKey(expired) = _, %v, %v, want true, nil", created, err)
		}
		if diff := cmp.Diff(b, got); diff != "" {
			t.Errorf("BeginKey(expired) record (-want +got):\n%s", diff)
		}
	})

	t.Run("LookupKey", func(t *testing.T) {
		ctx, l := testCtx(t), open(t)
		rec := keyCompleted(keyInFlight("alice", "k1", "o1", t0), "ch_9", t0.Add(time.Second))
		if err := l.PutKey(ctx, rec); err != nil {
			t.Fatalf("PutKey = %v", err)
		}
		tests := []struct {
			id    KeyID
			now   time.Time
			found bool
		}{
			{KeyID{"alice", "k1"}, t0, true},
			{KeyID{"alice", "k1"}, t0.Add(time.Second - time.Microsecond), true},
			{KeyID{"alice", "k1"}, t0.Add(time.Second), false}, // short TTL honoured on read
			{KeyID{"bob", "k1"}, t0, false},
			{KeyID{"alice", "k2"}, t0, false},
		}
		for _, tt := range tests {
			got, found, err := l.LookupKey(ctx, tt.id, tt.now)
			if err != nil || found != tt.found {
				t.Errorf("LookupKey(%v, +%v) = _, %v, %v, want %v, nil", tt.id, tt.now.Sub(t0), found, err, tt.found)
				continue
			}
			if found {
				if diff := cmp.Diff(rec, got); diff != "" {
					t.Errorf("LookupKey(%v) (-want +got):\n%s", tt.id, diff)
				}
			}
		}
	})

	t.Run("PutKeyOverwrites", func(t *testing.T) {
		ctx, l := testCtx(t), open(t)
		if _, _, err := l.BeginKey(ctx, keyInFlight("alice", "k1", "o1", t0.Add(time.Minute)), t0); err != nil {
			t.Fatal(err)
		}
		rec := keyCompleted(keyInFlight("alice", "k1", "", t0), "ch_1", t0.Add(time.Hour))
		rec.Response = nil // the key-only bug stores no response
		if err := l.PutKey(ctx, rec); err != nil {
			t.Fatalf("PutKey = %v", err)
		}
		got, found, err := l.LookupKey(ctx, rec.ID, t0)
		if err != nil || !found {
			t.Fatalf("LookupKey = _, %v, %v, want true, nil", found, err)
		}
		if diff := cmp.Diff(rec, got); diff != "" {
			t.Errorf("LookupKey after PutKey (-want +got):\n%s", diff)
		}
	})

	t.Run("ReleaseKey", func(t *testing.T) {
		ctx, l := testCtx(t), open(t)
		id := KeyID{"alice", "k1"}
		if _, _, err := l.BeginKey(ctx, keyInFlight("alice", "k1", "o1", t0.Add(time.Minute)), t0); err != nil {
			t.Fatal(err)
		}
		if err := l.ReleaseKey(ctx, id, "o2"); !errors.Is(err, ErrKeyLost) {
			t.Errorf("ReleaseKey(other owner) = %v, want ErrKeyLost", err)
		}
		if _, found, _ := l.LookupKey(ctx, id, t0); !found {
			t.Errorf("LookupKey after a refused ReleaseKey: found = false, want true")
		}
		if err := l.ReleaseKey(ctx, id, "o1"); err != nil {
			t.Errorf("ReleaseKey(owner) = %v, want nil", err)
		}
		if _, found, _ := l.LookupKey(ctx, id, t0); found {
			t.Errorf("LookupKey after ReleaseKey: found = true, want false")
		}
		if err := l.ReleaseKey(ctx, id, "o1"); err != nil {
			t.Errorf("ReleaseKey(missing) = %v, want nil", err)
		}
		done := keyCompleted(keyInFlight("alice", "k2", "o1", t0), "ch_1", t0.Add(time.Hour))
		if err := l.PutKey(ctx, done); err != nil {
			t.Fatal(err)
		}
		if err := l.ReleaseKey(ctx, done.ID, "o1"); !errors.Is(err, ErrKeyLost) {
			t.Errorf("ReleaseKey(completed) = %v, want ErrKeyLost", err)
		}
	})

	t.Run("CompleteCharge", func(t *testing.T) {
		ctx, l := testCtx(t), open(t)
		rec := keyInFlight("alice", "k1", "o1", t0.Add(time.Minute))
		if _, _, err := l.BeginKey(ctx, rec, t0); err != nil {
			t.Fatal(err)
		}
		// Another request's completion is refused and writes nothing.
		lost := keyCompleted(keyInFlight("alice", "k1", "o2", t0), "ch_2", t0.Add(time.Hour))
		if err := l.CompleteCharge(ctx, lost, testCharge("ch_2", "k1", "alice")); !errors.Is(err, ErrKeyLost) {
			t.Errorf("CompleteCharge(other owner) = %v, want ErrKeyLost", err)
		}
		if got := chargeIDs(t, l, "k1"); len(got) != 0 {
			t.Errorf("ChargesByKey after a refused CompleteCharge = %v, want none", got)
		}
		done := keyCompleted(rec, "ch_1", t0.Add(time.Hour))
		ch := testCharge("ch_1", "k1", "alice")
		if err := l.CompleteCharge(ctx, done, ch); err != nil {
			t.Fatalf("CompleteCharge(owner) = %v", err)
		}
		got, found, err := l.LookupKey(ctx, rec.ID, t0)
		if err != nil || !found {
			t.Fatalf("LookupKey = _, %v, %v", found, err)
		}
		if diff := cmp.Diff(done, got); diff != "" {
			t.Errorf("key record after CompleteCharge (-want +got):\n%s", diff)
		}
		chs, err := l.ChargesByKey(ctx, "k1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]Charge{ch}, chs); diff != "" {
			t.Errorf("ChargesByKey(k1) (-want +got):\n%s", diff)
		}
	})

	t.Run("CompleteChargeWithoutOwnerIsLastWriteWins", func(t *testing.T) {
		// Check-then-act: two requests that both saw no key both complete.
		ctx, l := testCtx(t), open(t)
		for _, id := range []string{"ch_1", "ch_2"} {
			rec := keyCompleted(keyInFlight("alice", "k1", "", t0), id, t0.Add(time.Hour))
			if err := l.CompleteCharge(ctx, rec, testCharge(id, "k1", "alice")); err != nil {
				t.Fatalf("CompleteCharge(%s, no owner) = %v", id, err)
			}
		}
		if diff := cmp.Diff([]string{"ch_1", "ch_2"}, chargeIDs(t, l, "k1")); diff != "" {
			t.Errorf("ChargesByKey(k1) (-want +got):\n%s", diff)
		}
		got, _, _ := l.LookupKey(ctx, KeyID{"alice", "k1"}, t0)
		if got.ChargeID != "ch_2" {
			t.Errorf("key record ChargeID = %q, want ch_2 (last write)", got.ChargeID)
		}
	})

	t.Run("ExpiredKeyChargesAgain", func(t *testing.T) {
		// A key that outlived its TTL is a new key (the short-ttl bug's
		// second charge must show in the ledger).
		ctx, l := testCtx(t), open(t)
		for i, now := range []time.Time{t0, t0.Add(2 * time.Second)} {
			owner, id := fmt.Sprintf("o%d", i), fmt.Sprintf("ch_%d", i)
			rec := keyInFlight("alice", "k1", owner, now.Add(time.Second))
			if _, created, err := l.BeginKey(ctx, rec, now); err != nil || !created {
				t.Fatalf("BeginKey #%d = _, %v, %v, want true, nil", i, created, err)
			}
			if err := l.CompleteCharge(ctx, keyCompleted(rec, id, now.Add(time.Second)), testCharge(id, "k1", "alice")); err != nil {
				t.Fatalf("CompleteCharge #%d = %v", i, err)
			}
		}
		if diff := cmp.Diff([]string{"ch_0", "ch_1"}, chargeIDs(t, l, "k1")); diff != "" {
			t.Errorf("ChargesByKey(k1) (-want +got):\n%s", diff)
		}
	})

	t.Run("ChargesAndCounts", func(t *testing.T) {
		ctx, l := testCtx(t), open(t)
		if got := chargeIDs(t, l, "nope"); got == nil || len(got) != 0 {
			t.Errorf("ChargesByKey(unknown) = %#v, want empty", got)
		}
		ids := map[string]bool{}
		for _, key := range []string{"k1", "k1", "k2", ""} {
			id, err := l.NextChargeID(ctx)
			if err != nil {
				t.Fatalf("NextChargeID = %v", err)
			}
			if ids[id] || len(id) < 4 || id[:3] != "ch_" {
				t.Fatalf("NextChargeID = %q, want a new ch_<n>", id)
			}
			ids[id] = true
			if err := l.InsertCharge(ctx, testCharge(id, key, "alice")); err != nil {
				t.Fatalf("InsertCharge = %v", err)
			}
		}
		counts, err := l.ChargeCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]int{"k1": 2, "k2": 1}, counts); diff != "" {
			t.Errorf("ChargeCounts (-want +got):\n%s", diff)
		}
	})

	t.Run("Accounts", func(t *testing.T) {
		ctx, l := testCtx(t), open(t)
		v := func(n int64) *int64 { return &n }
		if _, err := l.Account(ctx, "a1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Account(unknown) = %v, want ErrNotFound", err)
		}
		if _, err := l.Debits(ctx, "a1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Debits(unknown) = %v, want ErrNotFound", err)
		}
		if _, err := l.Debit(ctx, "a1", 10, v(0), "op0"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Debit(unknown) = %v, want ErrNotFound", err)
		}
		if got, err := l.PutAccount(ctx, "a1", 100); err != nil || got != (Account{ID: "a1", Balance: 100}) {
			t.Fatalf("PutAccount = %+v, %v", got, err)
		}
		steps := []struct {
			amount   int64
			expected *int64
			op       string
			want     Account
			wantErr  error
			stale    int64
		}{
			{10, v(0), "op1", Account{"a1", 90, 1}, nil, 0},
			{10, v(0), "op2", Account{}, ErrStale, 1},
			{200, v(1), "op3", Account{}, ErrInsufficientFunds, 0},
			{20, nil, "op4", Account{"a1", 70, 2}, nil, 0}, // blind
			{70, v(2), "op5", Account{"a1", 0, 3}, nil, 0},
		}
		for _, s := range steps {
			got, err := l.Debit(ctx, "a1", s.amount, s.expected, s.op)
			if !errors.Is(err, s.wantErr) || got != s.want {
				t.Errorf("Debit(%s) = %+v, %v, want %+v, %v", s.op, got, err, s.want, s.wantErr)
			}
			var se *StaleError
			if errors.As(err, &se) && se.Current != s.stale {
				t.Errorf("Debit(%s) stale current = %d, want %d", s.op, se.Current, s.stale)
			}
		}
		if got, err := l.Account(ctx, "a1"); err != nil || got != (Account{"a1", 0, 3}) {
			t.Errorf("Account = %+v, %v", got, err)
		}
		log, err := l.Debits(ctx, "a1")
		if err != nil {
			t.Fatal(err)
		}
		want := []Debit{{"op1", 10, 1}, {"op4", 20, 2}, {"op5", 70, 3}}
		if diff := cmp.Diff(want, log); diff != "" {
			t.Errorf("Debits (-want +got):\n%s", diff)
		}
		if _, err := l.PutAccount(ctx, "a1", 5); err != nil {
			t.Fatal(err)
		}
		if log, err := l.Debits(ctx, "a1"); err != nil || log == nil || len(log) != 0 {
			t.Errorf("Debits after reset = %#v, %v, want empty", log, err)
		}
		if got, _ := l.Account(ctx, "a1"); got != (Account{"a1", 5, 0}) {
			t.Errorf("Account after reset = %+v, want balance 5 version 0", got)
		}
	})

	t.Run("Likes", func(t *testing.T) {
		ctx, l := testCtx(t), open(t)
		if got, err := l.Post(ctx, "p1"); err != nil || got != (Post{"p1", 0}) {
			t.Errorf("Post(unknown) = %+v, %v, want 0 likes", got, err)
		}
		steps := []struct {
			op    string
			dedup bool
			want  int64
		}{
			{"op1", true, 1},
			{"op1", true, 1}, // repeat: no increment
			{"op2", true, 2},
			{"op3", false, 3},
			{"op3", false, 4}, // no dedup: counted again
			{"op3", true, 5},  // the first dedup use of op3
			{"op3", true, 5},
			{"", false, 6},
		}
		for i, s := range steps {
			got, err := l.Like(ctx, "p1", s.op, s.dedup)
			if err != nil || got != (Post{"p1", s.want}) {
				t.Errorf("step %d: Like(p1, %q, %v) = %+v, %v, want %d likes", i, s.op, s.dedup, got, err, s.want)
			}
		}
		for _, tt := range []struct {
			post, op string
			want     bool
		}{{"p1", "op1", true}, {"p1", "op3", true}, {"p1", "op9", false}, {"p2", "op1", false}} {
			if got, err := l.HasLikeOp(ctx, tt.post, tt.op); err != nil || got != tt.want {
				t.Errorf("HasLikeOp(%s, %s) = %v, %v, want %v", tt.post, tt.op, got, err, tt.want)
			}
		}
		if got, _ := l.Post(ctx, "p1"); got.Likes != 6 {
			t.Errorf("Post(p1).Likes = %d, want 6", got.Likes)
		}
	})

	t.Run("Reset", func(t *testing.T) {
		ctx, l := testCtx(t), open(t)
		first, _ := l.NextChargeID(ctx)
		rec := keyInFlight("alice", "k1", "o1", t0.Add(time.Hour))
		if _, _, err := l.BeginKey(ctx, rec, t0); err != nil {
			t.Fatal(err)
		}
		if err := l.CompleteCharge(ctx, keyCompleted(rec, first, t0.Add(time.Hour)), testCharge(first, "k1", "alice")); err != nil {
			t.Fatal(err)
		}
		if _, err := l.PutAccount(ctx, "a1", 10); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Like(ctx, "p1", "op1", true); err != nil {
			t.Fatal(err)
		}
		if err := l.Reset(ctx); err != nil {
			t.Fatalf("Reset = %v", err)
		}
		if _, found, _ := l.LookupKey(ctx, rec.ID, t0); found {
			t.Error("LookupKey after Reset: found = true, want false")
		}
		if got := chargeIDs(t, l, "k1"); len(got) != 0 {
			t.Errorf("ChargesByKey after Reset = %v, want none", got)
		}
		if _, err := l.Account(ctx, "a1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Account after Reset = %v, want ErrNotFound", err)
		}
		if ok, _ := l.HasLikeOp(ctx, "p1", "op1"); ok {
			t.Error("HasLikeOp after Reset = true, want false")
		}
		if got, _ := l.Post(ctx, "p1"); got.Likes != 0 {
			t.Errorf("Post after Reset = %d likes, want 0", got.Likes)
		}
		if next, _ := l.NextChargeID(ctx); next == first {
			t.Errorf("NextChargeID after Reset = %q, reused", next)
		}
	})

	t.Run("ConcurrentBeginKey", func(t *testing.T) {
		ctx, l := testCtx(t), open(t)
		const n = 20
		var created atomic.Int64
		owners := make([]string, n)
		concurrently(n, func(i int) {
			got, ok, err := l.BeginKey(ctx, keyInFlight("alice", "k1", fmt.Sprintf("o%d", i), t0.Add(time.Minute)), t0)
			if err != nil {
				t.Errorf("BeginKey #%d = %v", i, err)
				return
			}
			if ok {
				created.Add(1)
			}
			owners[i] = got.Owner
		})
		if got := created.Load(); got != 1 {
			t.Errorf("%d concurrent BeginKey of one key: created = %d, want 1", n, got)
		}
		for i, o := range owners {
			if o != owners[0] {
				t.Errorf("BeginKey #%d saw owner %q, #0 saw %q: want one winner", i, o, owners[0])
			}
		}
	})

	t.Run("ConcurrentCompleteCharge", func(t *testing.T) {
		// Only the owner's completion lands, however many try.
		ctx, l := testCtx(t), open(t)
		rec := keyInFlight("alice", "k1", "o0", t0.Add(time.Minute))
		if _, _, err := l.BeginKey(ctx, rec, t0); err != nil {
			t.Fatal(err)
		}
		const n = 10
		var ok atomic.Int64
		concurrently(n, func(i int) {
			r := rec
			r.Owner = fmt.Sprintf("o%d", i)
			id := fmt.Sprintf("ch_%d", i)
			switch err := l.CompleteCharge(ctx, keyCompleted(r, id, t0.Add(time.Hour)), testCharge(id, "k1", "alice")); {
			case err == nil:
				ok.Add(1)
			case !errors.Is(err, ErrKeyLost):
				t.Errorf("CompleteCharge #%d = %v, want nil or ErrKeyLost", i, err)
			}
		})
		if diff := cmp.Diff([]string{"ch_0"}, chargeIDs(t, l, "k1")); diff != "" || ok.Load() != 1 {
			t.Errorf("ChargesByKey(k1) (-want +got):\n%s; successes = %d, want 1", diff, ok.Load())
		}
	})

	t.Run("ConcurrentStaleDebit", func(t *testing.T) {
		ctx, l := testCtx(t), open(t)
		if _, err := l.PutAccount(ctx, "a1", 1000); err != nil {
			t.Fatal(err)
		}
		const n = 20
		var applied, stale atomic.Int64
		zero := int64(0)
		concurrently(n, func(i int) {
			_, err := l.Debit(ctx, "a1", 10, &zero, fmt.Sprintf("op%d", i))
			var se *StaleError
			switch {
			case err == nil:
				applied.Add(1)
			case errors.As(err, &se) && se.Current == 1:
				stale.Add(1)
			default:
				t.Errorf("Debit #%d = %v, want nil or stale at version 1", i, err)
			}
		})
		if applied.Load() != 1 || stale.Load() != n-1 {
			t.Errorf("%d concurrent Debit at version 0: applied, stale = %d, %d, want 1, %d", n, applied.Load(), stale.Load(), n-1)
		}
		if got, _ := l.Account(ctx, "a1"); got != (Account{"a1", 990, 1}) {
			t.Errorf("Account = %+v, want balance 990 version 1", got)
		}
	})

	t.Run("ConcurrentLikeDedup", func(t *testing.T) {
		ctx, l := testCtx(t), open(t)
		const n = 20
		concurrently(n, func(i int) {
			if _, err := l.Like(ctx, "p1", "op1", true); err != nil {
				t.Errorf("Like #%d = %v", i, err)
			}
		})
		if got, _ := l.Post(ctx, "p1"); got.Likes != 1 {
			t.Errorf("%d concurrent Like(op1, dedup) = %d likes, want 1", n, got.Likes)
		}
	})

	t.Run("CheckThenLikeDoubleCounts", func(t *testing.T) {
		// The no-unique-index bug's shape: HasLikeOp, then Like without
		// dedup. With every check done before any like (a barrier), each
		// duplicate counts: the bug is real on this backend.
		ctx, l := testCtx(t), open(t)
		const n = 8
		var checked sync.WaitGroup
		checked.Add(n)
		concurrently(n, func(i int) {
			seen, err := l.HasLikeOp(ctx, "p1", "op1")
			checked.Done()
			checked.Wait()
			if err != nil {
				t.Errorf("HasLikeOp #%d = %v", i, err)
				return
			}
			if !seen {
				if _, err := l.Like(ctx, "p1", "op1", false); err != nil {
					t.Errorf("Like #%d = %v", i, err)
				}
			}
		})
		if got, _ := l.Post(ctx, "p1"); got.Likes != n {
			t.Errorf("%d duplicates through check-then-like = %d likes, want %d (double counted)", n, got.Likes, n)
		}
	})

	t.Run("CustomerEvents", func(t *testing.T) {
		// ordered and deduplicated: the newest version wins whatever the
		// order, an event applies once; concurrent deliveries of the
		// events of one customer leave the newest
		ctx, l := testCtx(t), open(t)
		apply := func(ev, cus string, v int64, dedup, ordered bool) (bool, Customer) {
			t.Helper()
			applied, c, err := l.ApplyCustomerEvent(ctx, ev, cus, v, fmt.Sprintf("v%d", v), dedup, ordered)
			if err != nil {
				t.Fatalf("ApplyCustomerEvent(%s) = %v", ev, err)
			}
			return applied, c
		}
		if _, ok, err := l.Customer(ctx, "c1"); ok || err != nil {
			t.Fatalf("Customer(unknown) = %v, %v, want false, nil", ok, err)
		}
		apply("e3", "c1", 3, true, true)
		if applied, c := apply("e1", "c1", 1, true, true); !applied || c.Version != 3 || c.Name != "v3" {
			t.Errorf("an older event, ordered: applied %v, customer %+v; want recorded, v3 kept", applied, c)
		}
		if applied, _ := apply("e1", "c1", 1, true, true); applied {
			t.Errorf("an event recorded before applied again")
		}
		if _, c := apply("e0", "c1", 0, true, false); c.Version != 0 {
			t.Errorf("an older event, unordered: customer %+v, want v0 (the last wins)", c)
		}
		concurrently(8, func(i int) {
			if _, _, err := l.ApplyCustomerEvent(ctx, fmt.Sprintf("f%d", i), "c2", int64(i), "x", true, true); err != nil {
				t.Errorf("ApplyCustomerEvent #%d = %v", i, err)
			}
		})
		if c, ok, err := l.Customer(ctx, "c2"); !ok || err != nil || c.Version != 7 {
			t.Errorf("8 concurrent events: %+v %v %v, want version 7", c, ok, err)
		}
	})
}

// concurrently runs f(0..n-1) in n goroutines released together, and waits.
func concurrently(n int, f func(i int)) {
	var start, done sync.WaitGroup
	start.Add(1)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer done.Done()
			start.Wait()
			f(i)
		}()
	}
	start.Done()
	done.Wait()
}

// checkSchemas checks that two ledgers in different schemas of one database
// share nothing, and that a bad schema name is refused.
func checkSchemas(t *testing.T, dsn string) {
	ctx := testCtx(t)
	a, b := newTestPostgresLedger(t, dsn), newTestPostgresLedger(t, dsn)
	if a.schema == b.schema {
		t.Fatalf("two test ledgers share schema %q", a.schema)
	}
	if _, err := a.Like(ctx, "p1", "op1", true); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Post(ctx, "p1"); got.Likes != 0 {
		t.Errorf("Post in schema %s = %d likes after a like in %s, want 0", b.schema, got.Likes, a.schema)
	}
	// Reopening a schema finds its data (the schema is created only if missing).
	again, err := NewPostgresLedger(ctx, dsn, PostgresSchema(a.schema))
	if err != nil {
		t.Fatalf("NewPostgresLedger(existing schema) = %v", err)
	}
	defer again.Close()
	if got, _ := again.Post(ctx, "p1"); got.Likes != 1 {
		t.Errorf("Post after reopening %s = %d likes, want 1", a.schema, got.Likes)
	}
	for _, bad := range []string{"", "Lab", "a-b", "x; DROP TABLE payments"} {
		if l, err := NewPostgresLedger(ctx, dsn, PostgresSchema(bad)); err == nil {
			l.Close()
			t.Errorf("NewPostgresLedger(schema %q) = nil error, want an error", bad)
		}
	}
}

// TestPostgresPoolSize checks the pool cap: 16 by default, else the URL's
// pool_max_conns. Then it holds more
// default pools full at once than Postgres's default max_connections
// (100) allows, as parallel tests each running a lab do.
func TestPostgresPoolSize(t *testing.T) {
	t.Parallel()
	dsn := testsvc.Postgres(t)
	ctx := testCtx(t)
	tests := []struct {
		name string
		url  string
		opts []PostgresOption
		want int32
	}{
		{"default", dsn, nil, DefaultPostgresMaxConns},
		{"url", dsn + "&pool_max_conns=5", nil, 5},
	}
	for _, tt := range tests {
		l, err := NewPostgresLedger(ctx, tt.url, tt.opts...)
		if err != nil {
			t.Fatalf("%s: NewPostgresLedger = %v", tt.name, err)
		}
		if got := l.pool.Config().MaxConns; got != tt.want {
			t.Errorf("%s: pool MaxConns = %d, want %d", tt.name, got, tt.want)
		}
		l.Close()
	}

	// Full pools of 16 side by side, 8 of them (128 connections, past
	// Postgres's default 100): the long suite's.
	if !testenv.Long() {
		return
	}
	labs := 8
	var held []interface{ Release() }
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	for i := range labs {
		l := newTestPostgresLedger(t, dsn)
		for j := range DefaultPostgresMaxConns {
			c, err := l.pool.Acquire(ctx)
			if err != nil {
				t.Fatalf("lab %d, connection %d: Acquire = %v", i, j, err)
			}
			held = append(held, c)
		}
	}
}

// TestPostgresLedgerFailsClosed checks that an unreachable Postgres is an
// error from the constructor and from every method, never a sentinel the
// handlers would read as an answer.
func TestPostgresLedgerFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dsn, stop := testsvc.PostgresWithStop(t)
	l, err := NewPostgresLedger(ctx, dsn)
	if err != nil {
		t.Fatalf("NewPostgresLedger = %v", err)
	}
	defer l.Close()
	if _, err := l.PutAccount(ctx, "a1", 100); err != nil {
		t.Fatalf("PutAccount = %v", err)
	}
	stop()
	zero := int64(0)
	rec := keyInFlight("alice", "k1", "o1", t0.Add(time.Minute))
	calls := map[string]func() error{
		"BeginKey":  func() error { _, _, err := l.BeginKey(ctx, rec, t0); return err },
		"LookupKey": func() error { _, _, err := l.LookupKey(ctx, rec.ID, t0); return err },
		"CompleteCharge": func() error {
			return l.CompleteCharge(ctx, keyCompleted(rec, "ch_1", t0), testCharge("ch_1", "k1", "alice"))
		},
		"InsertCharge": func() error { return l.InsertCharge(ctx, testCharge("ch_1", "k1", "alice")) },
		"NextChargeID": func() error { _, err := l.NextChargeID(ctx); return err },
		"Account":      func() error { _, err := l.Account(ctx, "a1"); return err },
		"Debit":        func() error { _, err := l.Debit(ctx, "a1", 1, &zero, "op"); return err },
		"Like":         func() error { _, err := l.Like(ctx, "p1", "op1", true); return err },
		"Post":         func() error { _, err := l.Post(ctx, "p1"); return err },
		"ReleaseKey":   func() error { return l.ReleaseKey(ctx, rec.ID, "o1") },
	}
	for name, call := range calls {
		err := call()
		if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrKeyLost) || errors.Is(err, ErrStale) {
			t.Errorf("%s with Postgres down = %v, want a connection error", name, err)
		}
	}
	if l2, err := NewPostgresLedger(ctx, dsn); err == nil {
		l2.Close()
		t.Errorf("NewPostgresLedger(%s) with Postgres down = nil error, want an error", dsn)
	}
}
