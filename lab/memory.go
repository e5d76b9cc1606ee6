package lab

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/internal/pause"
)

// MemoryLedger is a Ledger held in memory. Every method takes one mutex, so
// each call is atomic, which is what the Ledger contract asks of a single
// call; a sequence of calls is not.
type MemoryLedger struct {
	mu       sync.Mutex
	keys     map[KeyID]KeyRecord
	charges  []Charge
	nextID   int64
	accounts map[string]Account
	debits   map[string][]Debit
	posts    map[string]int64
	likeOps  map[likeOp]bool // value: recorded with dedup
	// customers and the customer events recorded (with dedup)
	customers map[string]Customer
	events    map[string]bool
}

type likeOp struct{ post, op string }

// NewMemoryLedger returns an empty in-memory ledger.
func NewMemoryLedger() *MemoryLedger {
	l := &MemoryLedger{}
	l.clear()
	return l
}

func (l *MemoryLedger) clear() {
	l.keys = map[KeyID]KeyRecord{}
	l.charges = nil
	l.accounts = map[string]Account{}
	l.debits = map[string][]Debit{}
	l.posts = map[string]int64{}
	l.likeOps = map[likeOp]bool{}
	l.customers = map[string]Customer{}
	l.events = map[string]bool{}
}

// ApplyCustomerEvent implements Customers.
func (l *MemoryLedger) ApplyCustomerEvent(ctx context.Context, eventID, customer string, version int64, name string, dedup, ordered bool) (bool, Customer, error) {
	type result struct {
		applied bool
		c       Customer
	}
	r, err := locked(ctx, &l.mu, func() (result, error) {
		if dedup {
			if l.events[eventID] {
				return result{false, l.customers[customer]}, nil
			}
			l.events[eventID] = true
		}
		c, ok := l.customers[customer]
		if !ordered || !ok || version > c.Version {
			c = Customer{ID: customer, Name: name, Version: version}
			l.customers[customer] = c
		}
		return result{true, c}, nil
	})
	return r.applied, r.c, err
}

// Customer implements Customers.
func (l *MemoryLedger) Customer(ctx context.Context, id string) (Customer, bool, error) {
	type result struct {
		c  Customer
		ok bool
	}
	r, err := locked(ctx, &l.mu, func() (result, error) {
		c, ok := l.customers[id]
		return result{c, ok}, nil
	})
	return r.c, r.ok, err
}

func copyRecord(r KeyRecord) KeyRecord {
	if r.Response != nil {
		resp := Response{Status: r.Response.Status, Body: slices.Clone(r.Response.Body)}
		r.Response = &resp
	}
	return r
}

// BeginKey implements Payments.
func (l *MemoryLedger) BeginKey(ctx context.Context, rec KeyRecord, now time.Time) (out KeyRecord, created bool, err error) {
	err = l.do(ctx, func() error {
		if old, ok := l.keys[rec.ID]; ok && old.ExpiresAt.After(now) {
			out = copyRecord(old)
			return nil
		}
		l.keys[rec.ID] = copyRecord(rec)
		out, created = copyRecord(rec), true
		return nil
	})
	return out, created, err
}

// LookupKey implements Payments.
func (l *MemoryLedger) LookupKey(ctx context.Context, id KeyID, now time.Time) (out KeyRecord, found bool, err error) {
	err = l.do(ctx, func() error {
		if rec, ok := l.keys[id]; ok && rec.ExpiresAt.After(now) {
			out, found = copyRecord(rec), true
		}
		return nil
	})
	return out, found, err
}

// PutKey implements Payments.
func (l *MemoryLedger) PutKey(ctx context.Context, rec KeyRecord) error {
	return l.do(ctx, func() error {
		l.keys[rec.ID] = copyRecord(rec)
		return nil
	})
}

// ReleaseKey implements Payments.
func (l *MemoryLedger) ReleaseKey(ctx context.Context, id KeyID, owner string) error {
	return l.do(ctx, func() error {
		rec, ok := l.keys[id]
		if !ok {
			return nil
		}
		if rec.State != KeyInFlight || rec.Owner != owner {
			return ErrKeyLost
		}
		delete(l.keys, id)
		return nil
	})
}

// CompleteCharge implements Payments.
func (l *MemoryLedger) CompleteCharge(ctx context.Context, rec KeyRecord, ch Charge) error {
	return l.do(ctx, func() error {
		if old, ok := l.keys[rec.ID]; ok && rec.Owner != "" && old.Owner != rec.Owner {
			return ErrKeyLost
		}
		l.keys[rec.ID] = copyRecord(rec)
		l.charges = append(l.charges, ch)
		return nil
	})
}

// InsertCharge implements Payments.
func (l *MemoryLedger) InsertCharge(ctx context.Context, ch Charge) error {
	return l.do(ctx, func() error {
		l.charges = append(l.charges, ch)
		return nil
	})
}

// NextChargeID implements Payments.
func (l *MemoryLedger) NextChargeID(ctx context.Context) (string, error) {
	return locked(ctx, &l.mu, func() (string, error) {
		l.nextID++
		return fmt.Sprintf("ch_%d", l.nextID), nil
	})
}

// ChargesByKey implements Payments.
func (l *MemoryLedger) ChargesByKey(ctx context.Context, key string) ([]Charge, error) {
	return locked(ctx, &l.mu, func() ([]Charge, error) {
		out := []Charge{}
		for _, ch := range l.charges {
			if ch.IdempotencyKey == key {
				out = append(out, ch)
			}
		}
		return out, nil
	})
}

// ChargeCounts implements Payments.
func (l *MemoryLedger) ChargeCounts(ctx context.Context) (map[string]int, error) {
	return locked(ctx, &l.mu, func() (map[string]int, error) {
		out := map[string]int{}
		for _, ch := range l.charges {
			if ch.IdempotencyKey != "" {
				out[ch.IdempotencyKey]++
			}
		}
		return out, nil
	})
}

// PutAccount implements Accounts.
func (l *MemoryLedger) PutAccount(ctx context.Context, id string, balance int64) (Account, error) {
	return locked(ctx, &l.mu, func() (Account, error) {
		a := Account{ID: id, Balance: balance}
		l.accounts[id] = a
		delete(l.debits, id)
		return a, nil
	})
}

// Account implements Accounts.
func (l *MemoryLedger) Account(ctx context.Context, id string) (Account, error) {
	return locked(ctx, &l.mu, func() (Account, error) {
		a, ok := l.accounts[id]
		if !ok {
			return Account{}, ErrNotFound
		}
		return a, nil
	})
}

// Debit implements Accounts.
func (l *MemoryLedger) Debit(ctx context.Context, id string, amount int64, expectedVersion *int64, opID string) (Account, error) {
	return locked(ctx, &l.mu, func() (Account, error) {
		a, ok := l.accounts[id]
		if !ok {
			return Account{}, ErrNotFound
		}
		if expectedVersion != nil && *expectedVersion != a.Version {
			return Account{}, &StaleError{Current: a.Version}
		}
		if a.Balance < amount {
			return Account{}, ErrInsufficientFunds
		}
		a.Balance -= amount
		a.Version++
		l.accounts[id] = a
		l.debits[id] = append(l.debits[id], Debit{OpID: opID, Amount: amount, Version: a.Version})
		return a, nil
	})
}

// Debits implements Accounts.
func (l *MemoryLedger) Debits(ctx context.Context, id string) ([]Debit, error) {
	return locked(ctx, &l.mu, func() ([]Debit, error) {
		if _, ok := l.accounts[id]; !ok {
			return nil, ErrNotFound
		}
		return append([]Debit{}, l.debits[id]...), nil
	})
}

// Like implements Posts.
func (l *MemoryLedger) Like(ctx context.Context, post, opID string, dedup bool) (Post, error) {
	return locked(ctx, &l.mu, func() (Post, error) {
		k := likeOp{post, opID}
		if dedup {
			if l.likeOps[k] {
				return Post{ID: post, Likes: l.posts[post]}, nil
			}
			l.likeOps[k] = true
		} else if opID != "" {
			if _, ok := l.likeOps[k]; !ok {
				l.likeOps[k] = false
			}
		}
		l.posts[post]++
		return Post{ID: post, Likes: l.posts[post]}, nil
	})
}

// HasLikeOp implements Posts.
func (l *MemoryLedger) HasLikeOp(ctx context.Context, post, opID string) (bool, error) {
	return locked(ctx, &l.mu, func() (bool, error) {
		_, ok := l.likeOps[likeOp{post, opID}]
		return ok, nil
	})
}

// Post implements Posts.
func (l *MemoryLedger) Post(ctx context.Context, id string) (Post, error) {
	return locked(ctx, &l.mu, func() (Post, error) {
		return Post{ID: id, Likes: l.posts[id]}, nil
	})
}

// Reset implements Ledger. Charge ids keep counting.
func (l *MemoryLedger) Reset(ctx context.Context) error {
	return l.do(ctx, func() error {
		l.clear()
		return nil
	})
}

// do runs f holding l's mutex, unless ctx has ended.
func (l *MemoryLedger) do(ctx context.Context, f func() error) error {
	_, err := locked(ctx, &l.mu, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// locked returns what f returns, run holding mu, or ctx's error without
// running f when ctx has ended: each call of a memory backend is atomic.
func locked[T any](ctx context.Context, mu *sync.Mutex, f func() (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	mu.Lock()
	defer mu.Unlock()
	return f()
}

// MemoryCache is a Cache held in memory, with expiry read from a clock.
type MemoryCache struct {
	clock   func() time.Time
	mu      sync.Mutex
	locks   map[string]cacheLock
	entries map[string]cacheEntry
}

type cacheLock struct {
	token   string
	expires time.Time
}

type cacheEntry struct {
	e       Entry
	expires time.Time
}

// NewMemoryCache returns an empty in-memory cache whose TTLs are measured
// with clock (nil: time.Now).
func NewMemoryCache(clock func() time.Time) *MemoryCache {
	if clock == nil {
		clock = time.Now
	}
	return &MemoryCache{clock: clock, locks: map[string]cacheLock{}, entries: map[string]cacheEntry{}}
}

// Lock implements Cache.
func (c *MemoryCache) Lock(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return locked(ctx, &c.mu, func() (bool, error) {
		now := c.clock()
		if l, ok := c.locks[key]; ok && l.expires.After(now) {
			return false, nil
		}
		c.locks[key] = cacheLock{token: token, expires: now.Add(ttl)}
		return true, nil
	})
}

// Unlock implements Cache.
func (c *MemoryCache) Unlock(ctx context.Context, key, token string) error {
	return c.do(ctx, func() {
		if l, ok := c.locks[key]; ok && l.token == token {
			delete(c.locks, key)
		}
	})
}

// Get implements Cache.
func (c *MemoryCache) Get(ctx context.Context, key string) (e Entry, found bool, err error) {
	err = c.do(ctx, func() {
		if ce, ok := c.entries[key]; ok && ce.expires.After(c.clock()) {
			e, found = ce.e, true
			e.Response.Body = slices.Clone(e.Response.Body)
		}
	})
	return e, found, err
}

// Put implements Cache.
func (c *MemoryCache) Put(ctx context.Context, key string, e Entry, ttl time.Duration) error {
	return c.do(ctx, func() {
		e.Response.Body = slices.Clone(e.Response.Body)
		c.entries[key] = cacheEntry{e: e, expires: c.clock().Add(ttl)}
	})
}

// Reset implements Cache.
func (c *MemoryCache) Reset(ctx context.Context) error {
	return c.do(ctx, func() {
		clear(c.locks)
		clear(c.entries)
	})
}

// do runs f holding c's mutex, unless ctx has ended.
func (c *MemoryCache) do(ctx context.Context, f func()) error {
	_, err := locked(ctx, &c.mu, func() (struct{}, error) { f(); return struct{}{}, nil })
	return err
}

// Compile-time checks.
var (
	_ Ledger = (*MemoryLedger)(nil)
	_ Cache  = (*MemoryCache)(nil)
)

// slowCache adds a fixed latency to every call of a Cache, to model the
// network roundtrip to a remote idempotency store.
type slowCache struct {
	Cache
	latency time.Duration
}

func (c slowCache) Lock(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	pause.For(ctx, c.latency)
	return c.Cache.Lock(ctx, key, token, ttl)
}

func (c slowCache) Unlock(ctx context.Context, key, token string) error {
	pause.For(ctx, c.latency)
	return c.Cache.Unlock(ctx, key, token)
}

func (c slowCache) Get(ctx context.Context, key string) (Entry, bool, error) {
	pause.For(ctx, c.latency)
	return c.Cache.Get(ctx, key)
}

func (c slowCache) Put(ctx context.Context, key string, e Entry, ttl time.Duration) error {
	pause.For(ctx, c.latency)
	return c.Cache.Put(ctx, key, e, ttl)
}
