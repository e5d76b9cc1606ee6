// Package lab is idemcheck's built-in reference target: a small payment
// service with a naive and a protected endpoint for each seed scenario
// (charges, a compare-and-set debit, a like counter), read endpoints that
// expose its effects to the oracles, and seeded bugs that each reproduce
// one classic idempotency mistake. The protected lab must hold every
// invariant under every fault; each seeded bug must be caught.
//
// Topology:
//
//	client ──HTTP──▶ Server (routes.go)
//	                   │
//	                   ├─▶ Cache     in-flight lock (SET NX PX) and response cache, with TTLs
//	                   │             memory (NewMemoryCache) or Redis (redis.go)
//	                   │
//	                   ├─▶ Ledger    source of truth: idempotency keys, ledger rows,
//	                   │             accounts + debit log, posts + like_ops
//	                   │             memory (NewMemoryLedger) or Postgres (postgres*.go)
//	                   │
//	                   └─▶ Processor stub card processor: deduplicates by the key it
//	                                 is given, counts every real charge, takes
//	                                 Config.ProcessorLatency per new charge
//
// Open builds labs from the store and ledger URLs the lab command is
// given (Backends): memory, Redis or Postgres, under a namespace, one
// lab or several instances of one service sharing them; Start serves them
// over HTTP, on loopback ports for the lab and demo commands.
//
// The protected charge (POST /charges):
//
//	validate key and body (400) ─▶ Cache.Get ──hit──▶ replay (422 if the payload differs)
//	        │ miss
//	        ▼
//	Cache.Lock ──held──▶ 409 Retry-After: 1
//	        ▼
//	Ledger.BeginKey ──completed──▶ replay ; ──in flight──▶ 409
//	        ▼ new
//	Processor.Charge(dedup key user:key) ──fails──▶ ReleaseKey, 502
//	        ▼
//	Ledger.CompleteCharge (ledger row + key + response, one transaction)
//	        │ ──fails──▶ Processor.Void, ReleaseKey, 503
//	        ▼
//	Cache.Put, Cache.Unlock, 201 (replays: byte-identical, Idempotent-Replayed: true)
//
// Validation rejects, with 400 and before anything is charged, every string
// a ledger cannot store (a NUL byte or invalid UTF-8 in the customer, the
// key, the bearer token, an id): Postgres text holds neither, and the memory
// ledger refuses them too so that every backend answers alike.
//
// Everything after validation runs under context.WithoutCancel: a client
// that times out does not stop the charge, exactly as in production. A
// backend error answers 503 (fail closed) and charges nothing: a ledger
// write that fails after the processor charged voids that charge (unless
// the row is in the ledger after all, its acknowledgement lost), so no
// processor charge is ever left without its ledger row, and the retry
// charges afresh.
//
// Seeded bugs (Config.Bugs) change only the protected endpoints; the naive
// ones are always naive. Bug paths that lose the application's dedup also
// call the processor with a fresh dedup key, so both the ledger oracle and
// the processor oracle see the double charge. The built-in scenario and
// fault that catch each one:
//
//	no-key           charges-lost-ack, charges-timeout (drop_ack, timeout +
//	                 retries): every retry charges → exactly_once, at_most_once.
//	                 Audit C01 (missing key is accepted).
//	check-then-act   charges-timeout (a retry overlaps the original) and any
//	                 duplicate fault: both copies pass the lookup → at_most_once.
//	                 Audit C06/C10.
//	not-atomic       charges-lost-ack, charges-timeout: the 1st, 5th, 9th...
//	                 charge answers 500 after charging (Config.CrashEvery), the
//	                 retry (5xx is retried) charges again → at_most_once. Audit C12.
//	key-only         charges-replay: the replay of an acknowledged charge
//	                 answers a freshly built body (new id) → same_response.
//	global-keys      charges-cross-user: two users send one key; the second
//	                 gets the first user's response and is never charged →
//	                 exactly_once (acknowledged op with no effect).
//	content-dedup    charges-same-payload: distinct keys, identical bodies;
//	                 every key after the first is replayed, never charged →
//	                 exactly_once.
//	no-fingerprint   charges-payload-mismatch: the same key with another
//	                 payload is replayed instead of 422 → payload_mismatch.
//	no-unique-index  likes-duplicate (duplicate fault, 3 copies at once): the
//	                 copies all pass the op_id check → exact_counter.
//	short-ttl        charges-replay: the replay 1.5 s after the answer (inside
//	                 the 24 h retention the scenario declares) charges again →
//	                 at_most_once, exactly_once.
//	blind-debit      debit-cas (drop_ack, duplicate): a retried or duplicated
//	                 debit applies twice → conditional_update.
//
// The newer bugs, and what a catcher must see on the wire (their built-in
// catchers are to come):
//
//	replay-mismatch-status  an identical retry of a completed charge (same
//	                 user, key and body; from the cache or the ledger) answers
//	                 422 "idempotency key reused with a different payload"
//	                 instead of its stored 201. Nothing is charged again: the
//	                 bug is the answer (a replay of an acknowledged op differs).
//	stuck-key        one key in DefaultFlakyEvery (5), picked by a hash of
//	                 user and key, has its first processor charge fail: 502,
//	                 no charge. The key's in-flight record is never cleared
//	                 (and carries the key's 24 h retention, not the lock's
//	                 lease): every retry answers 409 Retry-After: 1, and the
//	                 key is never charged. The correct lab, on the same
//	                 failure (Config.FlakyEvery), answers 502 and releases the
//	                 key; the retry charges once (201).
//	charge-then-4xx  every protected charge is made (processor charge, ledger
//	                 row with the client's key), then answered 400 "invalid
//	                 charge"; the key is released and nothing cached, so each
//	                 retry or duplicate charges again and answers 400: N
//	                 attempts, N charges, no acknowledgement.
//	in-process-lock  the in-flight lock is a map in the process: the store's
//	                 lock is not taken and the ledger's key is only read
//	                 (LookupKey), not claimed (BeginKey). One lab holds (a
//	                 concurrent duplicate gets 409, a later one the replay).
//	                 Two labs on the same Redis and Postgres (same namespace)
//	                 each lock a key in their own memory, both miss, both
//	                 charge: each answers 201 (different ids), two ledger rows,
//	                 two processor charges (under fresh processor dedup keys;
//	                 Config.Processor lets the labs share one processor).
//
// The bugs of how keys are named, kept and claimed (charges_keys.go), and
// the built-in scenario that catches each (cmd/lab_matrix_test.go):
//
//	burnt-key        a first request refused 400 (an invalid body) burns its
//	                 key: the key is recorded as used with a stored 412, and
//	                 every later request with it, the corrected one too,
//	                 gets that 412 and is never charged. The correct lab
//	                 records nothing for a refused request: the corrected
//	                 retry charges once. charges-burnt-key (its first
//	                 attempts send an invalid body, retried corrected) →
//	                 the error_rate threshold today, processes once it lands.
//	key-truncate     keys are cut to 32 characters (KeyTruncateLen) before
//	                 the lookup: a key equal to an earlier one on those gets
//	                 the earlier key's record (a replay of its charge with
//	                 the same body, 422 with another), never a charge of its
//	                 own. charges-long-keys (keys sharing a 40-character
//	                 prefix, one body) → exactly_once (acknowledged keys
//	                 with no effect).
//	server-minted-key the client's key is ignored: the server mints its own
//	                 ("mk_" and 26 characters), answers it in the
//	                 Idempotency-Key header and deduplicates by it alone. A
//	                 retry with the client's key charges again; a retry
//	                 carrying the minted key is deduplicated. A key is
//	                 optional. The ledger row keeps the client's key as
//	                 sent (the minted one when none was sent).
//	                 charges-lost-ack (the client's key) → at_most_once;
//	                 charges-minted-key (operation.key.from_answer: retries
//	                 and replays carry the minted key) is deduplicated on
//	                 every retry it heard the key for, and charged again
//	                 where a drop_ack hid it → at_most_once.
//	retention-by-count the store keeps the last 100 keys (Config.RetentionKeys),
//	                 an LRU in the process; the key it pushes out is
//	                 expired in the ledger, and nothing is cached, so its
//	                 retry charges again. charges-replay (200 keys, each
//	                 replayed 1.5 s later) → at_most_once.
//	shared-record    every request overwrites one shared in-flight record
//	                 with its key; the charge completes under the key that
//	                 record names by then, another request's when one came
//	                 in meanwhile. Its own key is left with no record: its
//	                 retry charges again (and the other key's retry gets
//	                 this answer). charges-lost-ack (16 at once, lost
//	                 answers retried) → at_most_once.
//	keyless-shared   keyless charges are deduplicated by method and path
//	                 alone: the first one is charged, every later one, any
//	                 user's, any customer's, is served its answer. Without
//	                 the bug a keyless charge is refused 400 unless it sends
//	                 Idempotency-Optional: true, and then it is charged on
//	                 its own. charges-keyless (keyless charges of two users,
//	                 counted by customer at the processor) → exactly_once.
//	narrow-race      the key is looked up, the goroutine yields, and the
//	                 key is marked in flight, unconditionally, a store
//	                 roundtrip later: copies that arrive within those
//	                 microseconds all charge, later ones get 409 or the
//	                 replay. charges-duplicate (four copies sent at once)
//	                 → at_most_once, on some ops of a run.
//	crash-stuck      an in-flight record carries the key's 24 h retention
//	                 as its lease, not the lock's: a request cut by a crash
//	                 (Running.Crash, then Restart on the same backends)
//	                 leaves its key answering 409 for a day. The correct lab
//	                 answers 409 for the lock's lease (Config.LockTTL), then
//	                 charges the retry once. Caught by a run only with a
//	                 nemesis that kills the lab mid-request → settles.
//
// The bugs an audit check catches (idemcheck audit, docs/audit.md), and
// what the check sees:
//
//	raw-fingerprint    the payload fingerprint hashes the raw bytes: the same
//	                   JSON reordered or re-spaced under its key answers 422
//	                   → C05 (equivalent body).
//	long-key-500       a key longer than 255 characters answers 500 (the key
//	                   column overflowed) instead of 400 → C02 (key format).
//	no-cache-skips     a request carrying Cache-Control: no-cache claims its
//	                   key, skips the charge and answers an empty 200; the
//	                   claim is never cleared (it carries the key's 24 h
//	                   retention), so every later request with the key
//	                   answers 409 → C08 (409 is retryable), C13 (stuck in
//	                   flight), whose first attempts carry the header.
//	mismatch-400       the same key with another payload answers 400, not
//	                   422 → C04 (payload mismatch, medium under draft; right
//	                   under stripe). no-fingerprint (a silent replay) → C04.
//	cache-errors       a charge the processor declined (502) is stored as the
//	                   key's response: an identical retry gets the 502
//	                   replayed, another card under the key 422, never a new
//	                   attempt → C12 (error caching, --errors re-executed).
//	query-skips-key    a charge whose URL has a query string skips the
//	                   idempotency layer and charges → C16 (cross endpoint).
//	replay-other-body  a replay answers the charge re-encoded (with its
//	                   idempotency key, fields in another order), not the
//	                   stored bytes → C17 (replay fidelity); the charge id
//	                   is the same, so no other check accuses it.
//	global-keys        (above) another user's request with a used key gets
//	                   the first user's response → C15 (cross user).
//
// A customer named FailCustomer makes the processor fail, to exercise the
// error path (502, nothing recorded, the key usable again); so does
// Config.FlakyEvery, for the first charge of the keys it picks.
package lab
