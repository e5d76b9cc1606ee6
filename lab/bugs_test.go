package lab

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSeededBugs runs one probe per bug on the correct lab and on the lab
// with the bug: each bug must change what the probe observes, the way the
// built-in scenarios (see doc.go) would see it.
func TestSeededBugs(t *testing.T) {
	other := `{"amount":999,"currency":"usd","customer":"cus_1"}`
	tests := []struct {
		bug     string
		latency time.Duration
		probe   func(t *testing.T, tl *testLab) string
		fixed   string // what the correct lab shows
		buggy   string // what the bug shows
	}{
		{
			bug: BugNoKey,
			probe: func(t *testing.T, tl *testLab) string {
				tl.do(t, charge("alice", "k1", body1))
				tl.do(t, charge("alice", "k1", body1))
				missing := tl.do(t, req{method: "POST", path: "/charges", body: body1, noKey: true})
				return fmt.Sprintf("charges=%d missing-key=%d", tl.Processor().total(), missing.Code)
			},
			fixed: "charges=1 missing-key=400",
			buggy: "charges=3 missing-key=201",
		},
		{
			bug:     BugCheckThenAct,
			latency: 30 * time.Millisecond,
			probe: func(t *testing.T, tl *testLab) string {
				duplicates(tl, charge("alice", "k1", body1), 10)
				return fmt.Sprintf("double charge: ledger=%v processor=%v",
					tl.ledgerCount(t, "k1") > 1, len(tl.Processor().Charges("k1")) > 1)
			},
			fixed: "double charge: ledger=false processor=false",
			buggy: "double charge: ledger=true processor=true",
		},
		{
			bug: BugNotAtomic,
			probe: func(t *testing.T, tl *testLab) string {
				first := tl.do(t, charge("alice", "k1", body1))
				retry := tl.do(t, charge("alice", "k1", body1))
				again := tl.do(t, charge("alice", "k1", body1))
				return fmt.Sprintf("%d %d %d replayed=%q ledger=%d processor=%d", first.Code, retry.Code, again.Code,
					again.Header().Get("Idempotent-Replayed"), tl.ledgerCount(t, "k1"), len(tl.Processor().Charges("k1")))
			},
			fixed: `201 201 201 replayed="true" ledger=1 processor=1`,
			buggy: `500 201 201 replayed="true" ledger=2 processor=2`,
		},
		{
			bug: BugKeyOnly,
			probe: func(t *testing.T, tl *testLab) string {
				first := tl.do(t, charge("alice", "k1", body1))
				replay := tl.do(t, charge("alice", "k1", body1))
				return fmt.Sprintf("replayed=%q same body=%v charges=%d", replay.Header().Get("Idempotent-Replayed"),
					bytes.Equal(first.Body.Bytes(), replay.Body.Bytes()), tl.Processor().total())
			},
			fixed: `replayed="true" same body=true charges=1`,
			buggy: `replayed="true" same body=false charges=1`,
		},
		{
			bug: BugGlobalKeys,
			probe: func(t *testing.T, tl *testLab) string {
				a := tl.do(t, charge("alice", "k1", body1))
				b := tl.do(t, charge("bob", "k1", body1))
				return fmt.Sprintf("bob got alice's answer=%v", bytes.Equal(a.Body.Bytes(), b.Body.Bytes()))
			},
			fixed: "bob got alice's answer=false",
			buggy: "bob got alice's answer=true",
		},
		{
			bug: BugContentDedup,
			probe: func(t *testing.T, tl *testLab) string {
				tl.do(t, charge("alice", "k1", body1))
				w := tl.do(t, charge("alice", "k2", body1))
				return fmt.Sprintf("k2: %d replayed=%q ledger=%d", w.Code, w.Header().Get("Idempotent-Replayed"), tl.ledgerCount(t, "k2"))
			},
			fixed: `k2: 201 replayed="" ledger=1`,
			buggy: `k2: 201 replayed="true" ledger=0`,
		},
		{
			bug: BugNoFingerprint,
			probe: func(t *testing.T, tl *testLab) string {
				tl.do(t, charge("alice", "k1", body1))
				w := tl.do(t, charge("alice", "k1", other))
				return fmt.Sprintf("other payload: %d charges=%d", w.Code, tl.Processor().total())
			},
			fixed: "other payload: 422 charges=1",
			buggy: "other payload: 201 charges=1",
		},
		{
			bug: BugNoUniqueIndex,
			probe: func(t *testing.T, tl *testLab) string {
				// The lab's 10ms between check and insert is a window a
				// loaded machine can close for 10 copies released at once
				// (it did, once, in the long suite): 200ms cannot be.
				tl.raceWindow = 200 * time.Millisecond
				duplicates(tl, req{method: "POST", path: "/posts/p1/like", body: `{"op_id":"o1"}`}, 10)
				// A sequential retry is still deduplicated: the bug is the race.
				tl.do(t, req{method: "POST", path: "/posts/p2/like", body: `{"op_id":"o1"}`})
				seq := tl.do(t, req{method: "POST", path: "/posts/p2/like", body: `{"op_id":"o1"}`})
				got := tl.do(t, req{method: "GET", path: "/posts/p1"})
				return fmt.Sprintf("concurrent counted twice=%v sequential=%s", !strings.Contains(got.Body.String(), `"likes":1}`), strings.TrimSpace(seq.Body.String()))
			},
			fixed: `concurrent counted twice=false sequential={"id":"p2","likes":1}`,
			buggy: `concurrent counted twice=true sequential={"id":"p2","likes":1}`,
		},
		{
			bug: BugShortTTL,
			probe: func(t *testing.T, tl *testLab) string {
				tl.do(t, charge("alice", "k1", body1))
				tl.clock.Advance(500 * time.Millisecond)
				early := tl.do(t, charge("alice", "k1", body1))
				tl.clock.Advance(2 * time.Second)
				late := tl.do(t, charge("alice", "k1", body1))
				return fmt.Sprintf("early replayed=%q late replayed=%q ledger=%d processor=%d",
					early.Header().Get("Idempotent-Replayed"), late.Header().Get("Idempotent-Replayed"),
					tl.ledgerCount(t, "k1"), len(tl.Processor().Charges("k1")))
			},
			fixed: `early replayed="true" late replayed="true" ledger=1 processor=1`,
			buggy: `early replayed="true" late replayed="" ledger=2 processor=2`,
		},
		{
			bug: BugBlindDebit,
			probe: func(t *testing.T, tl *testLab) string {
				tl.do(t, req{method: "PUT", path: "/accounts/a1", body: `{"balance":100}`})
				d := req{method: "POST", path: "/accounts/a1/debit", body: `{"amount":10,"expected_version":0,"op_id":"o1"}`}
				first, retry := tl.do(t, d), tl.do(t, d)
				acct := tl.do(t, req{method: "GET", path: "/accounts/a1"})
				return fmt.Sprintf("%d %d %s", first.Code, retry.Code, strings.TrimSpace(acct.Body.String()))
			},
			fixed: `200 409 {"id":"a1","balance":90,"version":1}`,
			buggy: `200 200 {"id":"a1","balance":80,"version":2}`,
		},
		{
			bug: BugRawFingerprint,
			probe: func(t *testing.T, tl *testLab) string {
				tl.do(t, charge("alice", "k1", body1))
				reordered := tl.do(t, charge("alice", "k1", `{"customer": "cus_1", "currency": "usd", "amount": 100}`))
				return fmt.Sprintf("reordered: %d charges=%d", reordered.Code, tl.Processor().total())
			},
			fixed: "reordered: 201 charges=1",
			buggy: "reordered: 422 charges=1",
		},
		{
			bug: BugLongKey500,
			probe: func(t *testing.T, tl *testLab) string {
				long := tl.do(t, charge("alice", strings.Repeat("k", 500), body1))
				limit := tl.do(t, charge("alice", strings.Repeat("k", 255), body1))
				return fmt.Sprintf("500 chars: %d, 255 chars: %d", long.Code, limit.Code)
			},
			fixed: "500 chars: 400, 255 chars: 201",
			buggy: "500 chars: 500, 255 chars: 201",
		},
		{
			bug: BugNoCacheSkips,
			probe: func(t *testing.T, tl *testLab) string {
				r := charge("alice", "k1", body1)
				r.noCache = true
				first := tl.do(t, r)
				retry := tl.do(t, charge("alice", "k1", body1))
				tl.clock.Advance(time.Hour) // far past the lock's lease
				late := tl.do(t, charge("alice", "k1", body1))
				plain := tl.do(t, charge("alice", "k2", body1))
				return fmt.Sprintf("no-cache: %d retry: %d an hour later: %d without the header: %d charges=%d",
					first.Code, retry.Code, late.Code, plain.Code, tl.Processor().total())
			},
			fixed: "no-cache: 201 retry: 201 an hour later: 201 without the header: 201 charges=2",
			buggy: "no-cache: 200 retry: 409 an hour later: 409 without the header: 201 charges=1",
		},
		{
			bug: BugMismatch400,
			probe: func(t *testing.T, tl *testLab) string {
				tl.do(t, charge("alice", "k1", body1))
				same := tl.do(t, charge("alice", "k1", body1))
				w := tl.do(t, charge("alice", "k1", other))
				return fmt.Sprintf("same: %d other payload: %d charges=%d", same.Code, w.Code, tl.Processor().total())
			},
			fixed: "same: 201 other payload: 422 charges=1",
			buggy: "same: 201 other payload: 400 charges=1",
		},
		{
			bug: BugCacheErrors,
			probe: func(t *testing.T, tl *testLab) string {
				failing := `{"amount":100,"currency":"usd","customer":"` + FailCustomer + `"}`
				first := tl.do(t, charge("alice", "k1", failing))
				retry := tl.do(t, charge("alice", "k1", failing))
				fixed := tl.do(t, charge("alice", "k1", body1))
				return fmt.Sprintf("%d %d replayed=%q then another card: %d charges=%d", first.Code, retry.Code,
					retry.Header().Get("Idempotent-Replayed"), fixed.Code, tl.Processor().total())
			},
			fixed: `502 502 replayed="" then another card: 201 charges=1`,
			buggy: `502 502 replayed="true" then another card: 422 charges=0`,
		},
		{
			bug: BugQuerySkipsKey,
			probe: func(t *testing.T, tl *testLab) string {
				tl.do(t, charge("alice", "k1", body1))
				q := tl.do(t, req{method: "POST", path: "/charges?source=web", user: "alice", key: "k1", body: body1})
				return fmt.Sprintf("with a query: %d replayed=%q ledger=%d", q.Code, q.Header().Get("Idempotent-Replayed"), tl.ledgerCount(t, "k1"))
			},
			fixed: `with a query: 201 replayed="true" ledger=1`,
			buggy: `with a query: 201 replayed="" ledger=2`,
		},
		{
			bug: BugReplayOtherBody,
			probe: func(t *testing.T, tl *testLab) string {
				first := tl.do(t, charge("alice", "k1", body1))
				replay := tl.do(t, charge("alice", "k1", body1))
				a, b := decodeJSON(t, first), decodeJSON(t, replay)
				return fmt.Sprintf("replayed=%q same body=%v same id=%v charges=%d", replay.Header().Get("Idempotent-Replayed"),
					bytes.Equal(first.Body.Bytes(), replay.Body.Bytes()), a["id"] == b["id"], tl.Processor().total())
			},
			fixed: `replayed="true" same body=true same id=true charges=1`,
			buggy: `replayed="true" same body=false same id=true charges=1`,
		},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.bug] = true
		t.Run(tt.bug, func(t *testing.T) {
			t.Parallel()
			for _, withBug := range []bool{false, true} {
				cfg := Config{ProcessorLatency: tt.latency}
				want := tt.fixed
				if withBug {
					cfg.Bugs = []string{tt.bug}
					want = tt.buggy
				}
				tl := newTestLab(t, cfg)
				if got := tt.probe(t, tl); got != want {
					t.Errorf("bug %s enabled=%v: probe = %s, want %s", tt.bug, withBug, got, want)
				}
			}
		})
	}
	for _, p := range append(backendBugProbes(), keyBugProbes()...) { // run by TestSeededBugsMemory and TestSeededBugsRedisPostgres
		covered[p.bug] = true
	}
	covered[BugCrashStuck] = true                 // TestCrashStuck
	covered[BugWebhookIDAfterEffect] = true       // TestWebhookReceivers
	covered[BugWebhook500OnRedelivery] = true     // TestWebhookReceivers
	covered[BugWebhookEffectBeforeVerify] = true  // TestWebhookReceivers
	covered[BugWebhookDedupeBySignature] = true   // TestWebhookReceivers
	covered[BugWebhookIgnoresOrder] = true        // TestCustomerEventsOrder
	covered[BugWebhookDedupeBeforeVerify] = true  // TestWebhookReceivers
	covered[BugConsumerDedupByDeliveryTag] = true // TestConsumers
	covered[BugConsumerDedupAfterEffect] = true   // queues' TestStreamConsumers: copies at once on a real Redis
	covered[BugConsumerAckBeforeEffect] = true    // queues' TestStreamConsumerCut: an acknowledgement's answer cut
	covered[BugConsumerPoisonRetried] = true      // queues' TestConsumerBattery: audit's Q04, a poison message then valid ones
	for _, b := range Bugs() {
		if !covered[b.Name] {
			t.Errorf("bug %s has no probe", b.Name)
		}
	}
}

// TestNaiveEndpointsIgnoreBugs: the naive endpoints behave the same with
// every bug on.
func TestNaiveEndpointsIgnoreBugs(t *testing.T) {
	var names []string
	for _, b := range Bugs() {
		names = append(names, b.Name)
	}
	tl := newTestLab(t, Config{Bugs: names})
	for range 2 {
		wantStatus(t, "naive charge", tl.do(t, req{method: "POST", path: "/naive/charges", key: "k1", body: body1}), http.StatusCreated)
	}
	if n := tl.ledgerCount(t, "k1"); n != 2 {
		t.Errorf("naive ledger rows = %d, want 2", n)
	}
}
