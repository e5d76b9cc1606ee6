package lab

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
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
}

func copyRecord(r KeyRecord) KeyRecord {
	if r.Response != nil {
		resp := Response{Status: r.Response.Status, Body: slices.Clone(r.Response.Body)}
		r.Response = &resp
	}
	return r
}

// BeginKey implements Payments.
func (l *MemoryLedger) BeginKey(ctx context.Context, rec KeyRecord, now time.Time) (KeyRecord, bool, error) {
	if err := ctx.Err(); err != nil {
		return KeyRecord{}, false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.keys[rec.ID]; ok && old.ExpiresAt.After(now) {
		return copyRecord(old), false, nil
	}
	rec = copyRecord(rec)
	l.keys[rec.ID] = rec
	return copyRecord(rec), true, nil
}

// LookupKey implements Payments.
func (l *MemoryLedger) LookupKey(ctx context.Context, id KeyID, now time.Time) (KeyRecord, bool, error) {
	if err := ctx.Err(); err != nil {
		return KeyRecord{}, false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rec, ok := l.keys[id]
	if !ok || !rec.ExpiresAt.After(now) {
		return KeyRecord{}, false, nil
	}
	return copyRecord(rec), true, nil
}

// PutKey implements Payments.
func (l *MemoryLedger) PutKey(ctx context.Context, rec KeyRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys[rec.ID] = copyRecord(rec)
	return nil
}

// ReleaseKey implements Payments.
func (l *MemoryLedger) ReleaseKey(ctx context.Context, id KeyID, owner string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rec, ok := l.keys[id]
	if !ok {
		return nil
	}
	if rec.State != KeyInFlight || rec.Owner != owner {
		return ErrKeyLost
	}
	delete(l.keys, id)
	return nil
}

// CompleteCharge implements Payments.
func (l *MemoryLedger) CompleteCharge(ctx context.Context, rec KeyRecord, ch Charge) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.keys[rec.ID]; ok && rec.Owner != "" && old.Owner != rec.Owner {
		return ErrKeyLost
	}
	l.keys[rec.ID] = copyRecord(rec)
	l.charges = append(l.charges, ch)
	return nil
}

// InsertCharge implements Payments.
func (l *MemoryLedger) InsertCharge(ctx context.Context, ch Charge) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.charges = append(l.charges, ch)
	return nil
}

// NextChargeID implements Payments.
func (l *MemoryLedger) NextChargeID(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nextID++
	return fmt.Sprintf("ch_%d", l.nextID), nil
}

// ChargesByKey implements Payments.
func (l *MemoryLedger) ChargesByKey(ctx context.Context, key string) ([]Charge, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []Charge{}
	for _, ch := range l.charges {
		if ch.IdempotencyKey == key {
			out = append(out, ch)
		}
	}
	return out, nil
}

// ChargeCounts implements Payments.
func (l *MemoryLedger) ChargeCounts(ctx context.Context) (map[string]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, ch := range l.charges {
		if ch.IdempotencyKey != "" {
			out[ch.IdempotencyKey]++
		}
	}
	return out, nil
}

// PutAccount implements Accounts.
func (l *MemoryLedger) PutAccount(ctx context.Context, id string, balance int64) (Account, error) {
	if err := ctx.Err(); err != nil {
		return Account{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	a := Account{ID: id, Balance: balance}
	l.accounts[id] = a
	delete(l.debits, id)
	return a, nil
}

// Account implements Accounts.
func (l *MemoryLedger) Account(ctx context.Context, id string) (Account, error) {
	if err := ctx.Err(); err != nil {
		return Account{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.accounts[id]
	if !ok {
		return Account{}, ErrNotFound
	}
	return a, nil
}

// Debit implements Accounts.
func (l *MemoryLedger) Debit(ctx context.Context, id string, amount int64, expectedVersion *int64, opID string) (Account, error) {
	if err := ctx.Err(); err != nil {
		return Account{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
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
}

// Debits implements Accounts.
func (l *MemoryLedger) Debits(ctx context.Context, id string) ([]Debit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.accounts[id]; !ok {
		return nil, ErrNotFound
	}
	return append([]Debit{}, l.debits[id]...), nil
}

// Like implements Posts.
func (l *MemoryLedger) Like(ctx context.Context, post, opID string, dedup bool) (Post, error) {
	if err := ctx.Err(); err != nil {
		return Post{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
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
}

// HasLikeOp implements Posts.
func (l *MemoryLedger) HasLikeOp(ctx context.Context, post, opID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.likeOps[likeOp{post, opID}]
	return ok, nil
}

// Post implements Posts.
func (l *MemoryLedger) Post(ctx context.Context, id string) (Post, error) {
	if err := ctx.Err(); err != nil {
		return Post{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return Post{ID: id, Likes: l.posts[id]}, nil
}

// Reset implements Ledger. Charge ids keep counting.
func (l *MemoryLedger) Reset(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	return nil
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
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := c.clock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.locks[key]; ok && l.expires.After(now) {
		return false, nil
	}
	c.locks[key] = cacheLock{token: token, expires: now.Add(ttl)}
	return true, nil
}

// Unlock implements Cache.
func (c *MemoryCache) Unlock(ctx context.Context, key, token string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.locks[key]; ok && l.token == token {
		delete(c.locks, key)
	}
	return nil
}

// Get implements Cache.
func (c *MemoryCache) Get(ctx context.Context, key string) (Entry, bool, error) {
	if err := ctx.Err(); err != nil {
		return Entry{}, false, err
	}
	now := c.clock()
	c.mu.Lock()
	defer c.mu.Unlock()
	ce, ok := c.entries[key]
	if !ok || !ce.expires.After(now) {
		return Entry{}, false, nil
	}
	e := ce.e
	e.Response.Body = slices.Clone(e.Response.Body)
	return e, true, nil
}

// Put implements Cache.
func (c *MemoryCache) Put(ctx context.Context, key string, e Entry, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := c.clock()
	c.mu.Lock()
	defer c.mu.Unlock()
	e.Response.Body = slices.Clone(e.Response.Body)
	c.entries[key] = cacheEntry{e: e, expires: now.Add(ttl)}
	return nil
}

// Reset implements Cache.
func (c *MemoryCache) Reset(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.locks)
	clear(c.entries)
	return nil
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
	sleep(ctx, c.latency)
	return c.Cache.Lock(ctx, key, token, ttl)
}

func (c slowCache) Unlock(ctx context.Context, key, token string) error {
	sleep(ctx, c.latency)
	return c.Cache.Unlock(ctx, key, token)
}

func (c slowCache) Get(ctx context.Context, key string) (Entry, bool, error) {
	sleep(ctx, c.latency)
	return c.Cache.Get(ctx, key)
}

func (c slowCache) Put(ctx context.Context, key string, e Entry, ttl time.Duration) error {
	sleep(ctx, c.latency)
	return c.Cache.Put(ctx, key, e, ttl)
}
