package lab

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// FailCustomer is a customer the processor always declines with
// ErrProcessorFailed, after its latency and with no charge: a way for a
// scenario to exercise the lab's error path (502, key released).
const FailCustomer = "cus_fail"

// ErrProcessorFailed is returned by Processor.Charge when the charge failed
// with no effect.
var ErrProcessorFailed = errors.New("card processor failed")

// ProcessorRequest is one charge request sent to the processor.
type ProcessorRequest struct {
	// DedupKey is the processor's idempotency key: a second request with
	// the same DedupKey returns the first charge and charges nothing.
	DedupKey string
	// IdempotencyKey is the lab client's key, kept as metadata so the
	// processor's charges can be counted per client key ("" if none).
	IdempotencyKey string
	Amount         int64
	Currency       string
	Customer       string
	// FailFirst makes the first request with this DedupKey fail with
	// ErrProcessorFailed, after the latency and with no charge, as a real
	// processor's transient 5xx; later requests with it charge as usual.
	// The lab sets it on the keys Config.FlakyEvery picks.
	FailFirst bool
}

// ProcessorCharge is one real charge at the processor.
type ProcessorCharge struct {
	ID             string // "py_<n>"
	DedupKey       string
	IdempotencyKey string
	Amount         int64
	Currency       string
	Customer       string
	Created        time.Time
}

// Processor is a stub card processor (PSP) inside the lab. Like Stripe it
// deduplicates by the key it is given and counts every real charge. Each
// new charge takes Latency, so a client timeout overlaps real work. It is
// safe for concurrent use.
type Processor struct {
	latency time.Duration
	clock   func() time.Time

	mu      sync.Mutex
	n       int64
	gen     int // bumped by Reset
	byKey   map[string]*procCall
	charges []ProcessorCharge
	failed  map[string]bool // DedupKeys whose FailFirst request has failed
}

// procCall is one charge in flight or done; done is closed when it is.
type procCall struct {
	gen    int
	done   chan struct{}
	charge ProcessorCharge
	err    error
}

// NewProcessor returns a processor whose new charges take latency (<= 0:
// none) and are stamped with clock (nil: time.Now).
func NewProcessor(latency time.Duration, clock func() time.Time) *Processor {
	if clock == nil {
		clock = time.Now
	}
	return &Processor{latency: latency, clock: clock, byKey: map[string]*procCall{}, failed: map[string]bool{}}
}

// Charge charges the card once per DedupKey. A request with a DedupKey seen
// before returns the first charge (waiting for it if it is in flight) and
// charges nothing. The wait for the processor's latency stops if ctx is
// cancelled, with no charge: callers that must not abandon a charge pass
// context.WithoutCancel. A request for FailCustomer, or the first with
// FailFirst set for its DedupKey, fails with ErrProcessorFailed and leaves
// the key usable again.
func (p *Processor) Charge(ctx context.Context, req ProcessorRequest) (ProcessorCharge, error) {
	p.mu.Lock()
	if c, ok := p.byKey[req.DedupKey]; ok {
		p.mu.Unlock()
		select {
		case <-c.done:
			return c.charge, c.err
		case <-ctx.Done():
			return ProcessorCharge{}, fmt.Errorf("waiting for charge %q: %w", req.DedupKey, ctx.Err())
		}
	}
	c := &procCall{gen: p.gen, done: make(chan struct{})}
	p.byKey[req.DedupKey] = c
	p.mu.Unlock()

	err := p.wait(ctx)
	if err == nil && req.Customer == FailCustomer {
		err = ErrProcessorFailed
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	defer close(c.done)
	if err == nil && req.FailFirst && !p.failed[req.DedupKey] && c.gen == p.gen {
		p.failed[req.DedupKey] = true
		err = ErrProcessorFailed
	}
	if err != nil {
		c.err = err
		if p.byKey[req.DedupKey] == c {
			delete(p.byKey, req.DedupKey)
		}
		return ProcessorCharge{}, err
	}
	p.n++
	c.charge = ProcessorCharge{
		ID:             fmt.Sprintf("py_%d", p.n),
		DedupKey:       req.DedupKey,
		IdempotencyKey: req.IdempotencyKey,
		Amount:         req.Amount,
		Currency:       req.Currency,
		Customer:       req.Customer,
		Created:        p.clock(),
	}
	if c.gen == p.gen {
		p.charges = append(p.charges, c.charge)
	}
	return c.charge, nil
}

func (p *Processor) wait(ctx context.Context) error {
	if p.latency <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(p.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Void cancels the charge made under dedupKey, as a card processor voids
// an authorisation before capture: the charge is no longer counted and the
// key is forgotten, so a later request with it charges afresh. The lab
// voids a charge it could not record, so that a charge it answered 503 for
// charges nothing. It reports whether a charge was voided: an unknown key,
// a failed charge or one still in flight is left alone.
func (p *Processor) Void(dedupKey string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.byKey[dedupKey]
	if !ok {
		return false
	}
	select {
	case <-c.done:
	default:
		return false
	}
	if c.err != nil {
		return false
	}
	delete(p.byKey, dedupKey)
	if c.gen == p.gen {
		p.charges = slices.DeleteFunc(p.charges, func(pc ProcessorCharge) bool { return pc.ID == c.charge.ID })
	}
	return true
}

// Charges returns the real charges carrying client key key, in order;
// an empty (non-nil) slice if none.
func (p *Processor) Charges(key string) []ProcessorCharge {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []ProcessorCharge{}
	for _, c := range p.charges {
		if c.IdempotencyKey == key {
			out = append(out, c)
		}
	}
	return out
}

// ChargesFor returns the real charges for customer, in order; an empty
// (non-nil) slice if none.
func (p *Processor) ChargesFor(customer string) []ProcessorCharge {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []ProcessorCharge{}
	for _, c := range p.charges {
		if c.Customer == customer {
			out = append(out, c)
		}
	}
	return out
}

// Counts returns the number of real charges per client key, charges with no
// client key left out.
func (p *Processor) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for _, c := range p.charges {
		if c.IdempotencyKey != "" {
			out[c.IdempotencyKey]++
		}
	}
	return out
}

// Reset forgets every charge, dedup key and FailFirst failure. Charges in flight complete
// but are not counted.
func (p *Processor) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	p.byKey = map[string]*procCall{}
	p.charges = nil
	p.failed = map[string]bool{}
}
