package lab

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/webhooks"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultProcessorLatency = 20 * time.Millisecond
	DefaultKeyTTL           = 24 * time.Hour
	DefaultLockTTL          = 30 * time.Second
	DefaultCrashEvery       = 4
	// DefaultFlakyEvery is Config.FlakyEvery under the stuck-key bug: one
	// key in 5 (20%) has its first charge fail at the processor.
	DefaultFlakyEvery = 5
	// ShortKeyTTL is the key retention under the short-ttl bug.
	ShortKeyTTL = time.Second
	// NoProcessorLatency, as Config.ProcessorLatency, makes the card
	// processor take no time per charge (0 there means
	// DefaultProcessorLatency).
	NoProcessorLatency time.Duration = -1
)

// raceWindow is the application work a check-then-act bug does between its
// check and its write (the no-unique-index like path), so concurrent
// duplicates overlap the way they do in production.
const raceWindow = 10 * time.Millisecond

// Config configures a lab Server. The zero value is a correct lab with
// default latencies and no reset endpoint.
type Config struct {
	// ProcessorLatency is how long each new charge takes at the card
	// processor: 0 means DefaultProcessorLatency; NoProcessorLatency (any
	// negative value) means none.
	ProcessorLatency time.Duration
	// StoreLatency is added to every call to the idempotency store (the
	// Cache), to model the roundtrip to a remote store: 0 means none.
	StoreLatency time.Duration
	// AllowReset enables POST /reset (clears every store).
	AllowReset bool
	// KeyTTL is how long a completed idempotency key (and its cached
	// response) is kept: 0 means DefaultKeyTTL.
	KeyTTL time.Duration
	// LockTTL is the lease of an in-flight key (lock and in-flight record):
	// 0 means DefaultLockTTL. After it, a crashed request's key is usable
	// again.
	LockTTL time.Duration
	// CrashEvery: under the not-atomic bug, the 1st, (1+N)th, (1+2N)th...
	// charge crashes between its effect and its key write: 0 means
	// DefaultCrashEvery.
	CrashEvery int
	// FlakyEvery: one protected charge key in FlakyEvery, picked by a hash
	// of the scoped key (the same keys every run), has its first charge at
	// the processor fail with ErrProcessorFailed, after the processor's
	// latency and with no charge; its later charges go through. 0 means
	// none, or DefaultFlakyEvery under the stuck-key bug; a negative value
	// means none even then. 1 makes every key's first charge fail.
	FlakyEvery int
	// Processor is the card processor the lab charges: nil means one of
	// its own, taking ProcessorLatency per charge. Labs that stand for
	// several instances of one service (see the in-process-lock bug) share
	// one, as they would share a real card processor; ProcessorLatency is
	// then the given processor's.
	Processor *Processor
	// Bugs are seeded bug names (see Bugs); unknown names make New fail.
	Bugs []string
	// RetentionKeys is how many keys the retention-by-count bug keeps:
	// 0 means RetentionKeys. Fewer make the bug show at a lower rate.
	RetentionKeys int
	// WebhookSecret signs the webhook deliveries POST /webhooks and
	// /naive/webhooks accept (Standard Webhooks: whsec_ and the base64 of
	// the key); "" means WebhookSecret.
	WebhookSecret string
	// Clock stamps charges and measures TTLs: nil means time.Now.
	Clock func() time.Time
	// Logger receives backend errors and crashes: nil discards them.
	Logger *slog.Logger
}

// Seeded bug names, for Config.Bugs.
const (
	BugNoKey         = "no-key"
	BugCheckThenAct  = "check-then-act"
	BugNotAtomic     = "not-atomic"
	BugKeyOnly       = "key-only"
	BugGlobalKeys    = "global-keys"
	BugContentDedup  = "content-dedup"
	BugNoFingerprint = "no-fingerprint"
	BugNoUniqueIndex = "no-unique-index"
	BugShortTTL      = "short-ttl"
	BugBlindDebit    = "blind-debit"
	// BugReplayMismatchStatus answers an identical retry of a completed charge
	// with 422 (payload mismatch) instead of its stored response.
	BugReplayMismatchStatus = "replay-mismatch-status"
	// BugStuckKey leaves the in-flight record of a charge the processor
	// failed in place: every retry of that key answers 409. It turns on
	// processor failures of its own (Config.FlakyEvery).
	BugStuckKey = "stuck-key"
	// BugChargeThen4xx charges and writes the ledger row, then answers 400
	// and keeps no key: every attempt charges again.
	BugChargeThen4xx = "charge-then-4xx"
	// BugInProcessLock keeps the in-flight lock in the process's memory
	// while the store and the ledger are shared: two labs on one Redis and
	// Postgres both charge concurrent duplicates of a key.
	BugInProcessLock = "in-process-lock"
	// BugRawFingerprint fingerprints the raw bytes of the body, not its
	// canonical JSON: the same JSON with its fields reordered or spaced
	// differently is taken for another payload (422).
	BugRawFingerprint = "raw-fingerprint"
	// BugLongKey500 answers a key longer than 255 characters with 500 (the
	// key column overflowed) instead of 400.
	BugLongKey500 = "long-key-500"
	// BugNoCacheSkips skips the charge of a request carrying
	// Cache-Control: no-cache after claiming its key, and never clears the
	// claim: every later request with the key answers 409.
	BugNoCacheSkips = "no-cache-skips"
	// BugMismatch400 answers the same key with another payload with 400
	// instead of 422.
	BugMismatch400 = "mismatch-400"
	// BugCacheErrors stores a failed charge's error as the key's response:
	// every retry of the key gets the error, never a new attempt.
	BugCacheErrors = "cache-errors"
	// BugQuerySkipsKey charges a request whose URL has a query string
	// without its idempotency key: every such call charges.
	BugQuerySkipsKey = "query-skips-key"
	// BugReplayOtherBody answers a replay with the charge re-encoded (its
	// idempotency key added, fields in another order) instead of the
	// stored response.
	BugReplayOtherBody = "replay-other-body"
	// BugBurntKey burns a key whose first request was refused with a 4xx
	// (an invalid body): every later request with it, a corrected one
	// too, gets 412 and is never charged.
	BugBurntKey = "burnt-key"
	// BugKeyTruncate cuts keys to KeyTruncateLen characters before the
	// lookup: two keys equal on those collide.
	BugKeyTruncate = "key-truncate"
	// BugServerMintedKey ignores the client's key and mints one of its
	// own, returned in the Idempotency-Key answer header; only a request
	// carrying a minted key is deduplicated.
	BugServerMintedKey = "server-minted-key"
	// BugRetentionByCount keeps only the last RetentionKeys keys: a
	// retry after that many other keys charges again.
	BugRetentionByCount = "retention-by-count"
	// BugSharedRecord keeps one in-flight record that every request
	// overwrites: a request completes under whichever key wrote it last.
	BugSharedRecord = "shared-record"
	// BugKeylessShared deduplicates keyless requests by their path: every
	// keyless charge, whoever sends it, gets the first one's answer.
	BugKeylessShared = "keyless-shared"
	// BugNarrowRace checks the key, yields the processor to other
	// goroutines and only then marks it in flight: copies that arrive
	// within that moment (microseconds, a store roundtrip) both charge.
	BugNarrowRace = "narrow-race"
	// BugCrashStuck gives an in-flight record the key's retention as its
	// lease: a request cut by a crash leaves its key answering 409 for
	// that long, restarts included.
	BugCrashStuck = "crash-stuck"
	// BugWebhookIDAfterEffect records a webhook event's id after applying
	// it, not with it: concurrent deliveries of one event both apply.
	BugWebhookIDAfterEffect = "webhook-id-after-effect"
	// BugWebhook500OnRedelivery answers a redelivery of an event it has
	// applied with 500: the provider never stops redelivering.
	BugWebhook500OnRedelivery = "webhook-500-on-redelivery"
	// BugWebhookEffectBeforeVerify applies a webhook event, then verifies
	// its signature: a forged delivery is refused, its charge made.
	BugWebhookEffectBeforeVerify = "webhook-effect-before-verify"
	// BugWebhookDedupeBySignature deduplicates webhook deliveries by
	// their signature header, not their event id: a redelivery, signed
	// anew, applies again.
	BugWebhookDedupeBySignature = "webhook-dedupe-by-signature"
	// BugWebhookIgnoresOrder applies a customer event whatever its order:
	// an older event delivered late overwrites a newer one.
	BugWebhookIgnoresOrder = "webhook-ignores-order"
	// BugWebhookDedupeBeforeVerify looks a delivery's event id up before
	// it verifies the signature: a forged redelivery of an applied event
	// gets the stored answer.
	BugWebhookDedupeBeforeVerify = "webhook-dedupe-before-verify"
	// BugConsumerDedupByDeliveryTag deduplicates queue messages by the
	// broker's entry id, not the message id: a republished message has a
	// new one, and charges again.
	BugConsumerDedupByDeliveryTag = "consumer-dedup-by-delivery-tag"
	// BugConsumerDedupAfterEffect looks the message id up, charges, then
	// records the id: copies handed to two consumers at once both charge.
	BugConsumerDedupAfterEffect = "consumer-dedup-after-effect"
	// BugConsumerAckBeforeEffect acknowledges a message, then charges
	// it: when the acknowledgement's answer is lost the message is left
	// uncharged, though the broker took the acknowledgement.
	BugConsumerAckBeforeEffect = "consumer-ack-before-effect"
	// BugConsumerPoisonRetried hands a message it cannot decode back to
	// the broker to try again, forever: it never settles.
	BugConsumerPoisonRetried = "consumer-poison-retried"
)

// Limits of the newer key bugs.
const (
	// KeyTruncateLen is how many characters of a key the key-truncate
	// bug keeps.
	KeyTruncateLen = 32
	// RetentionKeys is how many keys the retention-by-count bug keeps.
	RetentionKeys = 100
)

// OptionalKeyHeader, set to "true" on a protected charge without an
// Idempotency-Key, makes the key optional: the correct lab charges such a
// request on its own, as a client that opts out of deduplication wants
// (the keyless-shared bug deduplicates it by path instead). Without it a
// keyless charge is refused 400.
const OptionalKeyHeader = "Idempotency-Optional"

// BugInfo describes one seeded bug.
type BugInfo struct {
	Name        string
	Description string
}

var bugs = []BugInfo{
	{BugNoKey, "POST /charges ignores Idempotency-Key: every call charges"},
	{BugCheckThenAct, "key looked up, then charged, then stored, not atomically: concurrent duplicates both charge"},
	{BugNotAtomic, "key written after the charge, outside its transaction: a crash in between makes the retry charge again"},
	{BugKeyOnly, "key stored without its response: a replay answers with a freshly built body (new id)"},
	{BugGlobalKeys, "keys not scoped per user: another user's request with the same key gets the first user's response"},
	{BugContentDedup, "dedup by payload hash instead of key: a new key with the same payload is suppressed and replayed"},
	{BugNoFingerprint, "no payload fingerprint: the same key with another payload is replayed instead of 422"},
	{BugNoUniqueIndex, "likes: op_id checked, then inserted without a unique index: concurrent duplicates count twice"},
	{BugShortTTL, "idempotency keys expire after 1s: a late retry charges again"},
	{BugBlindDebit, "POST /accounts/{id}/debit ignores expected_version: a retried debit applies twice"},
	{BugReplayMismatchStatus, "the payload fingerprint never matches on replay: an identical retry of a completed charge gets 422 instead of its stored response"},
	{BugStuckKey, "1 key in 5 has its first charge fail at the processor (502), and the key's in-flight record is never cleared: every retry gets 409"},
	{BugChargeThen4xx, "charges and writes the ledger row, then answers 400 and releases the key: every attempt, retries included, charges again"},
	{BugInProcessLock, "the in-flight lock lives in process memory: two labs on one Redis and Postgres both charge concurrent duplicates of a key"},
	{BugRawFingerprint, "the payload fingerprint hashes the raw body bytes: the same JSON reordered or re-spaced under its key gets 422"},
	{BugLongKey500, "an Idempotency-Key longer than 255 characters overflows the key column: 500 instead of 400"},
	{BugNoCacheSkips, "a request with Cache-Control: no-cache claims its key and skips the charge (200, empty): the key stays in flight and every retry gets 409"},
	{BugMismatch400, "the same key with another payload is answered 400 (a generic bad request) instead of 422"},
	{BugCacheErrors, "a failed charge (502) is stored as the key's response: retries get the error replayed, never a new attempt"},
	{BugQuerySkipsKey, "a charge whose URL has a query string skips the idempotency layer: every call charges"},
	{BugReplayOtherBody, "a replay answers the charge re-encoded (with its idempotency key, fields reordered) instead of the stored response"},
	{BugBurntKey, "a first request refused 4xx (an invalid body) burns its key: every later request with it, corrected or not, gets 412 and is never charged"},
	{BugKeyTruncate, "keys are cut to 32 characters before the lookup: a key equal to another on those gets its record (a replay or 422), never a charge"},
	{BugServerMintedKey, "the client's key is ignored: the server mints its own (Idempotency-Key answer header) and deduplicates by it only, so a retry with the client's key charges again"},
	{BugRetentionByCount, "the store keeps only the last 100 keys: a retry after 100 other keys charges again"},
	{BugSharedRecord, "concurrent requests with different keys overwrite one shared in-flight record: a charge completes under another key, and its own retry charges again"},
	{BugKeylessShared, "keyless charges (Idempotency-Optional: true) share one record per path: every customer after the first is served the first one's charge"},
	{BugNarrowRace, "check-then-act with a window of microseconds (a yield and a store roundtrip): copies that arrive within it both charge"},
	{BugWebhookIDAfterEffect, "webhooks: the event id is looked up, the event applied, then the id recorded: concurrent deliveries of one event both charge"},
	{BugWebhook500OnRedelivery, "webhooks: a redelivery of an event already applied is answered 500, so the provider never stops redelivering (and a charge stands behind every failure answer)"},
	{BugWebhookEffectBeforeVerify, "webhooks: the event is applied, then its signature verified: a forged delivery is answered 400 with its charge made"},
	{BugWebhookDedupeBySignature, "webhooks: deliveries are deduplicated by their signature header, not their event id: a redelivery, signed anew with its own timestamp, charges again"},
	{BugWebhookIgnoresOrder, "webhooks: a customer.updated event is applied whatever its created time: an older event delivered late overwrites the newer state"},
	{BugWebhookDedupeBeforeVerify, "webhooks: the event id is looked up before the signature is verified: a forged redelivery of an applied event is answered its stored 2xx"},
	{BugConsumerDedupByDeliveryTag, "queue consumer: messages are deduplicated by the broker's entry id, not their message id: a message the producer published again (its confirm lost) charges again"},
	{BugConsumerDedupAfterEffect, "queue consumer: the message id is looked up, the charge made, then the id recorded: copies handed to two consumers at once both charge"},
	{BugConsumerAckBeforeEffect, "queue consumer: a message is acknowledged, then charged; an acknowledgement whose answer is lost (a cut connection) leaves it uncharged, though the broker took it (Redis, NATS, RabbitMQ: the lab's Kafka group commits a poll once its records are done)"},
	{BugConsumerPoisonRetried, "queue consumer: a message it cannot decode is handed back to the broker to try again, forever; it never settles (on Kafka, its partition stalls)"},
	{BugCrashStuck, "an in-flight record carries the key's 24 h retention as its lease: a request cut by a crash leaves its key answering 409, restarts included"},
}

// ErrUnknownBug is returned (wrapped) by New for a bug name it does not know.
var ErrUnknownBug = errors.New("unknown bug")

// Bugs returns the seeded bugs the lab knows, in a stable order.
func Bugs() []BugInfo {
	return append([]BugInfo(nil), bugs...)
}

// BugTable is Bugs as text: a line per bug, its name and description in
// columns, as `idemcheck lab --help` lists them.
func BugTable() string {
	width := 0
	for _, bug := range bugs {
		width = max(width, len(bug.Name))
	}
	var b strings.Builder
	for _, bug := range bugs {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, bug.Name, bug.Description)
	}
	return b.String()
}

// BugNames are the names of Bugs, in their order.
func BugNames() []string {
	names := make([]string, len(bugs))
	for i, b := range bugs {
		names[i] = b.Name
	}
	return names
}

// Server is the lab: the reference payment service. It is an http.Handler;
// see routes.go for its API.
type Server struct {
	cfg     Config
	webhook *webhooks.Scheme // verifies the webhook deliveries
	bugs    map[string]bool
	ledger  Ledger
	cache   Cache
	proc    *Processor
	log     *slog.Logger
	mux     *http.ServeMux

	keyTTL     time.Duration
	lockTTL    time.Duration
	crashEvery int64
	crashes    atomic.Int64 // not-atomic charges that reached the crash window
	raceWindow time.Duration
	flakyEvery uint64 // see Config.FlakyEvery; 0: none

	// localLocks are the in-process-lock bug's in-flight locks, by cache
	// key: held by this process only.
	localMu    sync.Mutex
	localLocks map[string]bool

	// store is the Cache New was given (cache may wrap it): a restart
	// serves from it again.
	store Cache
	// recent are the retention-by-count bug's kept keys.
	recent recentKeys
	// halted is set when the lab is crashed (Running.Crash): a request in
	// flight stops before its next write, as in a process that died.
	halted atomic.Bool
}

// New returns a lab serving from ledger (the database) and cache (the
// idempotency store in front of it). It fails on an unknown bug name.
func New(cfg Config, ledger Ledger, cache Cache) (*Server, error) {
	if ledger == nil || cache == nil {
		return nil, errors.New("lab: ledger and cache are required")
	}
	s := &Server{ledger: ledger, cache: cache, store: cache, bugs: map[string]bool{}, raceWindow: raceWindow}
	known := BugNames()
	for _, b := range cfg.Bugs {
		b = strings.TrimSpace(b)
		if !slices.Contains(known, b) {
			return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownBug, b, strings.Join(known, ", "))
		}
		s.bugs[b] = true
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.ProcessorLatency == 0 {
		cfg.ProcessorLatency = DefaultProcessorLatency
	}
	if cfg.KeyTTL <= 0 {
		cfg.KeyTTL = DefaultKeyTTL
	}
	if cfg.LockTTL <= 0 {
		cfg.LockTTL = DefaultLockTTL
	}
	if cfg.CrashEvery <= 0 {
		cfg.CrashEvery = DefaultCrashEvery
	}
	s.log = cfg.Logger
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.cfg = cfg
	s.keyTTL = cfg.KeyTTL
	if s.bugs[BugShortTTL] {
		s.keyTTL = ShortKeyTTL
	}
	s.lockTTL = cfg.LockTTL
	s.recent.limit = cmp.Or(max(cfg.RetentionKeys, 0), RetentionKeys)
	s.crashEvery = int64(cfg.CrashEvery)
	if cfg.StoreLatency > 0 {
		s.cache = slowCache{Cache: cache, latency: cfg.StoreLatency}
	}
	switch {
	case cfg.FlakyEvery > 0:
		s.flakyEvery = uint64(cfg.FlakyEvery)
	case cfg.FlakyEvery == 0 && s.bugs[BugStuckKey]:
		s.flakyEvery = DefaultFlakyEvery
	}
	s.localLocks = map[string]bool{}
	s.proc = cfg.Processor
	if s.proc == nil {
		s.proc = NewProcessor(cfg.ProcessorLatency, cfg.Clock)
	}
	var err error
	if s.webhook, err = webhooks.New("standard", cmp.Or(cfg.WebhookSecret, WebhookSecret), webhooks.Custom{}); err != nil {
		return nil, fmt.Errorf("lab: webhook secret: %w", err)
	}
	s.mux = http.NewServeMux()
	s.routes()
	return s, nil
}

// NewMemory returns a lab with an in-memory ledger and cache.
func NewMemory(cfg Config) (*Server, error) {
	clock := cfg.Clock
	if clock == nil {
		clock = time.Now
	}
	return New(cfg, NewMemoryLedger(), NewMemoryCache(clock))
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// mux.Handler finds the route but does not set path values: a matched
	// request goes through mux.ServeHTTP.
	if h, pattern := s.mux.Handler(r); pattern == "" {
		s.serveUnrouted(w, r, h)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// restarted is a new lab like s, on its backends and its card processor:
// the process started again after a crash.
func (s *Server) restarted() (*Server, error) {
	cfg := s.cfg
	cfg.Processor = s.proc
	return New(cfg, s.ledger, s.store)
}

// Processor returns the lab's card processor (to count real charges).
func (s *Server) Processor() *Processor { return s.proc }

func (s *Server) now() time.Time { return s.cfg.Clock() }
