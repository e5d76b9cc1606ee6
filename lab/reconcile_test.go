package lab

import (
	"context"
	"net/http"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testsvc"
)

func TestProcessorVoid(t *testing.T) {
	ctx := context.Background()
	p := NewProcessor(0, nil)
	if p.Void("k") {
		t.Errorf("Void(unknown key) = true, want false")
	}
	first, err := p.Charge(ctx, ProcessorRequest{DedupKey: "k", IdempotencyKey: "c1", Amount: 1, Currency: "usd"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Charge(ctx, ProcessorRequest{DedupKey: "other", IdempotencyKey: "c2", Amount: 1, Currency: "usd"}); err != nil {
		t.Fatal(err)
	}
	if !p.Void("k") {
		t.Fatalf("Void(k) = false, want true")
	}
	if got := p.total(); got != 1 {
		t.Errorf("Total after Void = %d, want 1 (the other charge)", got)
	}
	if got := len(p.Charges("c1")); got != 0 {
		t.Errorf("Charges(c1) after Void = %d, want 0", got)
	}
	if p.Void("k") {
		t.Errorf("Void(k) twice = true, want false")
	}
	// The key is forgotten: the next charge with it is a new charge.
	again, err := p.Charge(ctx, ProcessorRequest{DedupKey: "k", IdempotencyKey: "c1", Amount: 1, Currency: "usd"})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == first.ID || p.total() != 2 {
		t.Errorf("Charge after Void = %s (total %d), want a new charge (total 2), not %s", again.ID, p.total(), first.ID)
	}
	if _, err := p.Charge(ctx, ProcessorRequest{DedupKey: "f", Customer: FailCustomer}); err == nil {
		t.Fatal("Charge(FailCustomer) = nil error")
	}
	if p.Void("f") {
		t.Errorf("Void(failed charge) = true, want false")
	}
}

// landedLedger writes the charge, then reports failure: a commit whose
// acknowledgement was lost.
type landedLedger struct{ *MemoryLedger }

func (l landedLedger) CompleteCharge(ctx context.Context, rec KeyRecord, ch Charge) error {
	if err := l.MemoryLedger.CompleteCharge(ctx, rec, ch); err != nil {
		return err
	}
	return errDown
}

// TestChargeLostAckIsNotVoided: a ledger write that landed though it
// reported an error keeps its processor charge and answers 201.
func TestChargeLostAckIsNotVoided(t *testing.T) {
	l := landedLedger{NewMemoryLedger()}
	s, err := New(Config{ProcessorLatency: NoProcessorLatency}, l, NewMemoryCache(nil))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "lost ack", serve(s, charge("a", "k1", body1), context.Background()), http.StatusCreated)
	rows, _ := l.ChargesByKey(context.Background(), "k1")
	if n := s.Processor().total(); n != 1 || len(rows) != 1 {
		t.Errorf("processor charges, ledger rows = %d, %d, want 1, 1", n, len(rows))
	}
}

// nulLedger is a Postgres ledger handed a customer it cannot store: a
// value validation did not catch. Its writes fail after the processor
// charged, for good.
type nulLedger struct{ *PostgresLedger }

func (l nulLedger) CompleteCharge(ctx context.Context, rec KeyRecord, ch Charge) error {
	ch.Customer += "\x00"
	return l.PostgresLedger.CompleteCharge(ctx, rec, ch)
}

func (l nulLedger) InsertCharge(ctx context.Context, ch Charge) error {
	ch.Customer += "\x00"
	return l.PostgresLedger.InsertCharge(ctx, ch)
}

// TestPostgresUnrecordedChargeIsVoided: on a real Postgres that refuses
// every write of a charge, each attempt answers 503 and the processor
// keeps no charge: a 503 never leaves a charge without its ledger row.
func TestPostgresUnrecordedChargeIsVoided(t *testing.T) {
	t.Parallel()
	dsn := testsvc.Postgres(t)
	paths := []struct {
		name string
		bugs []string
		r    req
	}{
		{"protected", nil, charge("alice", "k1", body1)},
		{"not-atomic", []string{BugNotAtomic}, charge("alice", "k1", body1)},
		{"check-then-act", []string{BugCheckThenAct}, charge("alice", "k1", body1)},
		{"naive", nil, req{method: "POST", path: "/naive/charges", key: "k1", body: body1}},
	}
	for _, tt := range paths {
		t.Run(tt.name, func(t *testing.T) {
			l := newTestPostgresLedger(t, dsn)
			s, err := New(Config{ProcessorLatency: NoProcessorLatency, Bugs: tt.bugs}, nulLedger{l}, NewMemoryCache(nil))
			if err != nil {
				t.Fatal(err)
			}
			for attempt := range 3 {
				wantProblem(t, tt.name, serve(s, tt.r, context.Background()), http.StatusServiceUnavailable)
				rows, err := l.ChargesByKey(context.Background(), "k1")
				if err != nil {
					t.Fatal(err)
				}
				if n := s.Processor().total(); n != 0 || len(rows) != 0 {
					t.Errorf("attempt %d: processor charges, ledger rows = %d, %d, want 0, 0", attempt, n, len(rows))
				}
			}
		})
	}
}
