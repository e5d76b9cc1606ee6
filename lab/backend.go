// The storage interfaces the lab's handlers use, Ledger and Cache. They are
// implemented in memory (memory.go), by Postgres (postgres*.go: the ledger,
// source of truth) and by Redis (redis.go: the in-flight lock and the
// response cache in front of the ledger); Open (open.go) picks them from
// the URLs it is given. The seeded bugs are expressed by the handlers
// calling these methods in a different (wrong) order or with different
// arguments; no backend implements a bug itself.

package lab

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors returned by backends. Backends wrap driver errors with %w; the
// handlers test these sentinels with errors.Is and answer 503 (fail closed)
// for anything else.
var (
	// ErrNotFound: the account does not exist.
	ErrNotFound = errors.New("not found")
	// ErrStale: a conditional debit's expected version is not the current
	// one. The error returned is a *StaleError carrying the current version.
	ErrStale = errors.New("stale version")
	// ErrInsufficientFunds: the debit would make the balance negative.
	ErrInsufficientFunds = errors.New("insufficient funds")
	// ErrKeyLost: CompleteCharge or ReleaseKey was called by a request
	// whose in-flight record is no longer its own (its lease expired and
	// another request took the key over). Nothing was written.
	ErrKeyLost = errors.New("idempotency key lost to another request")
)

// StaleError is returned by Debit when the expected version is stale.
// errors.Is(err, ErrStale) holds for it.
type StaleError struct {
	Current int64 // the account's current version
}

// Error implements error.
func (e *StaleError) Error() string {
	return fmt.Sprintf("stale version: current version is %d", e.Current)
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// KeyID names an idempotency key record. The protected handler scopes keys
// per user (User is the principal); the global-keys bug leaves User empty;
// the content-dedup bug puts a payload hash in Key. Backends treat both
// fields as opaque strings and the pair as the primary key.
type KeyID struct {
	User string
	Key  string
}

// KeyState is the state of an idempotency key record.
type KeyState string

const (
	// KeyInFlight: a request holds the key and is doing the work.
	KeyInFlight KeyState = "in_flight"
	// KeyCompleted: the work is done; Response (if stored) is the answer.
	KeyCompleted KeyState = "completed"
)

// Response is a stored HTTP answer, replayed byte for byte.
type Response struct {
	Status int
	Body   []byte
}

// KeyRecord is one row of the idempotency key table.
type KeyRecord struct {
	ID KeyID
	// Fingerprint is the hash of the canonical request body.
	Fingerprint string
	State       KeyState
	// Response is the stored answer of a completed key. Nil when no
	// response was stored (the key-only bug stores the key alone).
	Response *Response
	// ChargeID is the ledger row the key produced ("" while in flight).
	ChargeID string
	// Owner is a random token of the request holding an in-flight record;
	// "" means unowned (bug paths that do not lock).
	Owner string
	// ExpiresAt: a record with ExpiresAt <= now is treated as absent by
	// BeginKey and LookupKey. An in-flight record carries a short lease
	// (Config.LockTTL); a completed one the retention (Config.KeyTTL).
	ExpiresAt time.Time
}

// Charge is one ledger row (the payments table).
type Charge struct {
	ID string // "ch_<n>", from NextChargeID
	// IdempotencyKey is the client's key as sent (unscoped), "" if none.
	IdempotencyKey string
	User           string
	Amount         int64
	Currency       string
	Customer       string
	Status         string // "succeeded"
	Created        time.Time
}

// Account is a balance with a version for compare-and-set updates.
type Account struct {
	ID      string
	Balance int64
	Version int64
}

// Debit is one entry of an account's debit log.
type Debit struct {
	OpID    string
	Amount  int64
	Version int64 // the account's version after this debit
}

// Post is a like counter.
type Post struct {
	ID    string
	Likes int64
}

// Customer is a customer's state, as webhook events of type
// customer.updated set it: its name, and the version (the event's
// created) it came from.
type Customer struct {
	ID      string
	Name    string
	Version int64
}

// Customers holds the state webhook events update.
type Customers interface {
	// ApplyCustomerEvent applies event eventID, which sets customer's
	// name at version, in ONE atomic step. dedup: the event id is
	// recorded with the change, and an event already recorded changes
	// nothing (applied false). ordered: the change is made only if
	// version is newer than the customer's; otherwise it is made
	// whatever the customer's version (the naive receiver, the
	// webhook-ignores-order bug). It returns the customer after the call.
	ApplyCustomerEvent(ctx context.Context, eventID, customer string, version int64, name string, dedup, ordered bool) (applied bool, c Customer, err error)
	// Customer returns the customer; ok false for one no event set.
	Customer(ctx context.Context, id string) (c Customer, ok bool, err error)
}

// Payments stores idempotency key records and ledger rows. In Postgres it
// is the source of truth: the key row and the ledger row are written in one
// transaction by CompleteCharge.
type Payments interface {
	// BeginKey atomically inserts rec (normally State KeyInFlight with an
	// Owner and a lease in ExpiresAt) if no live record exists for rec.ID,
	// and returns (rec, true). A record whose ExpiresAt <= now counts as
	// absent and is replaced in the same atomic step. Otherwise it returns
	// the existing record and false, changing nothing. Postgres:
	// INSERT ... ON CONFLICT (user, key) DO UPDATE ... WHERE expires_at <= now
	// RETURNING, falling back to a SELECT of the existing row.
	BeginKey(ctx context.Context, rec KeyRecord, now time.Time) (KeyRecord, bool, error)
	// LookupKey returns the live record for id (ExpiresAt > now), if any.
	// A plain read with no lock (the check of check-then-act).
	LookupKey(ctx context.Context, id KeyID, now time.Time) (KeyRecord, bool, error)
	// PutKey upserts rec unconditionally, on its own (not in any charge's
	// transaction): the not-atomic bug writes its key this way, after the
	// effect.
	PutKey(ctx context.Context, rec KeyRecord) error
	// ReleaseKey deletes the record for id if it is in flight and owned by
	// owner (the work failed with no effect, so the key is usable again).
	// A missing record is not an error. A record held by another owner, or
	// completed, is left alone and ErrKeyLost is returned.
	ReleaseKey(ctx context.Context, id KeyID, owner string) error
	// CompleteCharge writes the ledger row ch and upserts the key record
	// rec (normally State KeyCompleted with the stored Response) in ONE
	// transaction: both or neither. If rec.Owner != "" and a record exists
	// for rec.ID with a different Owner, nothing is written and ErrKeyLost
	// is returned. If rec.Owner == "" the upsert is unconditional
	// (check-then-act's last write wins).
	CompleteCharge(ctx context.Context, rec KeyRecord, ch Charge) error
	// InsertCharge writes the ledger row ch alone, with no key record (the
	// naive endpoint, and the not-atomic bug's effect).
	InsertCharge(ctx context.Context, ch Charge) error
	// NextChargeID returns a new unique ledger id "ch_<n>" (Postgres: a
	// sequence). Ids are never reused, even when the charge is never
	// written.
	NextChargeID(ctx context.Context) (string, error)
	// ChargesByKey returns the ledger rows whose IdempotencyKey is key, in
	// creation order; an empty (non-nil) slice if none.
	ChargesByKey(ctx context.Context, key string) ([]Charge, error)
	// ChargeCounts returns the number of ledger rows per IdempotencyKey,
	// rows with no key left out; an empty (non-nil) map if none.
	ChargeCounts(ctx context.Context) (map[string]int, error)
}

// Accounts stores balances, versions and debit logs.
type Accounts interface {
	// PutAccount creates the account or resets it: balance, version 0 and
	// an empty debit log, atomically.
	PutAccount(ctx context.Context, id string, balance int64) (Account, error)
	// Account returns the account, or ErrNotFound.
	Account(ctx context.Context, id string) (Account, error)
	// Debit atomically checks and applies one debit: ErrNotFound if the
	// account is unknown; if expectedVersion != nil and differs from the
	// current version, a *StaleError (errors.Is ErrStale) with the current
	// version; if the balance is less than amount, ErrInsufficientFunds.
	// Otherwise balance -= amount, version += 1 and {opID, amount, new
	// version} is appended to the debit log, all in one step. Nothing is
	// applied on error. Postgres:
	// UPDATE accounts SET balance = balance - $a, version = version + 1
	// WHERE id = $id AND version = $v AND balance >= $a, plus the log row,
	// in one transaction. A nil expectedVersion skips the version check
	// (the naive endpoint and the blind-debit bug). opID is logged, never
	// deduplicated.
	Debit(ctx context.Context, id string, amount int64, expectedVersion *int64, opID string) (Account, error)
	// Debits returns the account's debit log in order (empty, non-nil, if
	// none), or ErrNotFound.
	Debits(ctx context.Context, id string) ([]Debit, error)
}

// Posts stores like counters and their like_ops.
type Posts interface {
	// Like adds one like to post (created at 0 if unknown).
	//
	// dedup=true: inserts (post, opID) into like_ops unless an op with that
	// id was already recorded for post with dedup=true, and increments
	// likes only if it inserted, in ONE atomic step (Postgres: a partial
	// unique index on like_ops(post_id, op_id) WHERE dedup, INSERT ... ON
	// CONFLICT DO NOTHING, then UPDATE if a row was inserted, in one
	// transaction).
	//
	// dedup=false: records (post, opID) in like_ops with no uniqueness (if
	// opID != "") and increments likes unconditionally, atomically. The
	// naive endpoint and the no-unique-index bug (which checks HasLikeOp
	// first, in a separate step) use it.
	//
	// It returns the post after the call.
	Like(ctx context.Context, post, opID string, dedup bool) (Post, error)
	// HasLikeOp reports whether any like_ops row (dedup or not) exists for
	// (post, opID). A plain read.
	HasLikeOp(ctx context.Context, post, opID string) (bool, error)
	// Post returns the post; an unknown post reads as 0 likes, no error.
	Post(ctx context.Context, id string) (Post, error)
}

// Ledger is the lab's database: payments, accounts and posts. The memory
// ledger and the Postgres ledger implement it.
type Ledger interface {
	Payments
	Accounts
	Posts
	Customers
	// Reset deletes everything (keys, charges, accounts, debits, posts,
	// like_ops). Charge ids may keep counting.
	Reset(ctx context.Context) error
}

// Entry is a cached response with the fingerprint of the request that
// produced it.
type Entry struct {
	Fingerprint string
	Response    Response
}

// Cache is the idempotency store in front of the ledger: an in-flight lock
// and a response cache, both with a TTL. The memory cache and Redis
// implement it. Keys are opaque strings built by the handlers; locks and
// entries live in separate namespaces (the same key names both a lock and an
// entry); a Redis implementation adds its own prefixes.
type Cache interface {
	// Lock takes the lock key for token if it is free or expired, for ttl,
	// atomically (Redis: SET key token NX PX ttl). It reports whether the
	// lock was taken.
	Lock(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	// Unlock releases the lock if it is still held by token (Redis: a
	// compare-and-delete script); otherwise it does nothing.
	Unlock(ctx context.Context, key, token string) error
	// Get returns the cached entry for key, if present and not expired.
	Get(ctx context.Context, key string) (Entry, bool, error)
	// Put stores e for key for ttl, replacing any entry.
	Put(ctx context.Context, key string, e Entry, ttl time.Duration) error
	// Reset deletes every lock and entry of this cache.
	Reset(ctx context.Context) error
}
