package lab

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"
)

func (s *Server) handleChargesCreate() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.bugs[BugNoKey] || (s.bugs[BugQuerySkipsKey] && r.URL.RawQuery != "") {
			s.chargeNaive(w, r)
			return
		}
		key, err := idempotencyKey(r.Header)
		keyless := errors.Is(err, errKeyMissing) && s.keyOptional(r)
		if err != nil && !keyless {
			if errors.Is(err, errKeyLong) && s.bugs[BugLongKey500] {
				s.log.Warn("seeded bug: a long key overflows the key column", "bug", BugLongKey500)
				problem(w, http.StatusInternalServerError, "internal error",
					"insert idempotency key: value too long for type character varying(255)")
				return
			}
			problem(w, http.StatusBadRequest, "invalid idempotency key", err.Error())
			return
		}
		user := principal(r)
		req, fp, err := decodeCharge(w, r, s.bugs[BugRawFingerprint])
		if err != nil {
			if s.bugs[BugBurntKey] && !keyless && storableText("the bearer token", user) == nil {
				s.burn(context.WithoutCancel(r.Context()), s.newChargeOp(user, key, chargeRequest{}, ""))
			}
			problem(w, http.StatusBadRequest, "invalid charge", err.Error())
			return
		}
		if err := storableText("the bearer token", user); err != nil {
			problem(w, http.StatusBadRequest, "invalid authorization", err.Error())
			return
		}
		// From here on the work finishes even if the client goes away: a
		// timed-out request still completes, as it would in production.
		ctx := context.WithoutCancel(r.Context())
		if keyless && !s.bugs[BugServerMintedKey] {
			s.chargeKeyless(ctx, w, r, user, req, fp)
			return
		}
		op := s.newChargeOp(user, key, req, fp)
		op.noCache = strings.Contains(strings.ToLower(r.Header.Get("Cache-Control")), "no-cache")
		if s.bugs[BugServerMintedKey] {
			s.mintKey(w, &op)
		}
		switch {
		case s.bugs[BugCheckThenAct]:
			s.chargeCheckThenAct(ctx, w, op)
		case s.bugs[BugNotAtomic]:
			s.chargeNotAtomic(ctx, w, op)
		case s.bugs[BugInProcessLock]:
			s.chargeInProcessLock(ctx, w, op)
		case s.bugs[BugSharedRecord]:
			s.chargeSharedRecord(ctx, w, op)
		case s.bugs[BugNarrowRace]:
			s.chargeNarrowRace(ctx, w, op)
		default:
			s.chargeProtected(ctx, w, op)
		}
	}
}

// chargeProtected is the correct flow: cache, lock, atomic key record,
// processor deduplicated by key, ledger row and response in one
// transaction.
func (s *Server) chargeProtected(ctx context.Context, w http.ResponseWriter, op chargeOp) {
	token, ok := s.cachedOrLock(ctx, w, op)
	if !ok {
		return
	}
	released := false // the lock went with the stored response (Complete)
	defer func() {
		if !released && !s.halted.Load() {
			s.unlock(ctx, op.ck, token)
		}
	}()

	now := s.now()
	lease := s.lockTTL
	skip := s.bugs[BugNoCacheSkips] && op.noCache
	if s.bugs[BugStuckKey] || skip || s.bugs[BugCrashStuck] {
		// The bug's in-flight record is written as the completed key will
		// be, with the key's retention: nothing but success clears it
		// (crash-stuck: a crash leaves it for that long).
		lease = s.keyTTL
	}
	rec, created, err := s.ledger.BeginKey(ctx, KeyRecord{
		ID: op.id, Fingerprint: op.fp, State: KeyInFlight, Owner: token, ExpiresAt: now.Add(lease),
	}, now)
	if err != nil {
		s.unavailable(w, "begin key", err)
		return
	}
	if !created {
		if rec.State != KeyCompleted {
			inFlight(w)
			return
		}
		if rec.Response != nil && rec.Fingerprint == op.fp {
			s.cachePut(ctx, op, *rec.Response)
		}
		s.replay(ctx, w, op, rec.Fingerprint, rec.Response)
		return
	}
	if skip {
		// The no-cache-skips bug: the handler is skipped, the claim on the
		// key is left in flight, and the client gets an empty 200.
		s.log.Warn("seeded bug: Cache-Control: no-cache skips the charge and leaves its key in flight", "key", op.key, "bug", BugNoCacheSkips)
		w.WriteHeader(http.StatusOK)
		return
	}
	released = s.execute(ctx, w, op, token)
}

// lockOrGetter is a cache that looks up a key and, on a miss, takes its
// lock in one roundtrip (the Redis store's script).
type lockOrGetter interface {
	LockOrGet(ctx context.Context, key, token string, ttl time.Duration) (e Entry, cached, locked bool, err error)
}

// completer is a cache that stores a response and releases the lock in
// one roundtrip (the Redis store's script).
type completer interface {
	Complete(ctx context.Context, key, token string, e Entry, ttl time.Duration) error
}

// cachedOrLock replays op's response when the cache holds it, or takes
// the lock on op's key. It returns the lock's token and true when the
// caller goes on (and releases the lock), false when it has answered.
func (s *Server) cachedOrLock(ctx context.Context, w http.ResponseWriter, op chargeOp) (string, bool) {
	if lg, ok := s.cache.(lockOrGetter); ok {
		// The common case, a new key, pays one roundtrip here.
		token := rand.Text()
		e, cached, locked, err := lg.LockOrGet(ctx, op.ck, token, s.lockTTL)
		switch {
		case err != nil:
			s.unavailable(w, "cache lock", err)
			return "", false
		case cached:
			s.replay(ctx, w, op, e.Fingerprint, &e.Response)
			return "", false
		case !locked:
			inFlight(w)
			return "", false
		}
		return token, true
	}
	if e, ok, err := s.cache.Get(ctx, op.ck); err != nil {
		s.unavailable(w, "cache get", err)
		return "", false
	} else if ok {
		s.replay(ctx, w, op, e.Fingerprint, &e.Response)
		return "", false
	}
	token := rand.Text()
	locked, err := s.cache.Lock(ctx, op.ck, token, s.lockTTL)
	if err != nil {
		s.unavailable(w, "cache lock", err)
		return "", false
	}
	if !locked {
		inFlight(w)
		return "", false
	}
	return token, true
}

// chargeCheckThenAct is the check-then-act bug: a plain lookup, then the
// charge, then the write; nothing stops a concurrent duplicate in between.
func (s *Server) chargeCheckThenAct(ctx context.Context, w http.ResponseWriter, op chargeOp) {
	rec, found, err := s.ledger.LookupKey(ctx, op.id, s.now())
	if err != nil {
		s.unavailable(w, "lookup key", err)
		return
	}
	if found {
		if rec.State != KeyCompleted {
			inFlight(w)
			return
		}
		s.replay(ctx, w, op, rec.Fingerprint, rec.Response)
		return
	}
	s.execute(ctx, w, op, "")
}

// chargeInProcessLock is the in-process-lock bug: the in-flight lock is a
// map in this process, right for one instance of the service; the store
// and the ledger behind it are shared. Another lab on the same Redis and
// Postgres takes its own lock on the same key, both find no record in the
// ledger, and both charge.
func (s *Server) chargeInProcessLock(ctx context.Context, w http.ResponseWriter, op chargeOp) {
	if e, ok, err := s.cache.Get(ctx, op.ck); err != nil {
		s.unavailable(w, "cache get", err)
		return
	} else if ok {
		s.replay(ctx, w, op, e.Fingerprint, &e.Response)
		return
	}
	if !s.lockLocal(op.ck) {
		inFlight(w)
		return
	}
	defer s.unlockLocal(op.ck)
	// Under the process's own lock, the check-then-act flow: right for one
	// instance, a race between two.
	s.chargeCheckThenAct(ctx, w, op)
}

// lockLocal takes the in-process lock on key; it reports false if this
// process already holds it.
func (s *Server) lockLocal(key string) bool {
	s.localMu.Lock()
	defer s.localMu.Unlock()
	if s.localLocks[key] {
		return false
	}
	s.localLocks[key] = true
	return true
}

func (s *Server) unlockLocal(key string) {
	s.localMu.Lock()
	defer s.localMu.Unlock()
	delete(s.localLocks, key)
}

// chargeNotAtomic is the not-atomic bug: locked against concurrent
// duplicates, but the key is written after the ledger row, in a separate
// step, and a crash in between loses it.
func (s *Server) chargeNotAtomic(ctx context.Context, w http.ResponseWriter, op chargeOp) {
	token, ok := s.cachedOrLock(ctx, w, op)
	if !ok {
		return
	}
	defer s.unlock(ctx, op.ck, token)
	rec, found, err := s.ledger.LookupKey(ctx, op.id, s.now())
	if err != nil {
		s.unavailable(w, "lookup key", err)
		return
	}
	if found && rec.State == KeyCompleted {
		s.replay(ctx, w, op, rec.Fingerprint, rec.Response)
		return
	}
	ch, resp, _, ok := s.charge(ctx, w, op)
	if !ok {
		return
	}
	if err := s.ledger.InsertCharge(ctx, ch); err != nil && !s.recordedOrVoid(ctx, op, ch, "insert charge", err) {
		s.unavailable(w, "insert charge", err)
		return
	}
	if n := s.crashes.Add(1); (n-1)%s.crashEvery == 0 {
		s.log.Warn("seeded crash between charge and key write", "charge", ch.ID, "bug", BugNotAtomic)
		problem(w, http.StatusInternalServerError, "internal error", "the server failed after charging")
		return
	}
	if err := s.ledger.PutKey(ctx, s.completedRecord(op, ch.ID, "", resp)); err != nil {
		s.unavailable(w, "put key", err)
		return
	}
	s.cachePut(ctx, op, resp)
	writeResponse(w, resp, false)
}

// charge makes the real charge at the processor and builds the ledger row
// and the response. On failure it has answered and returns ok=false; the
// caller releases what it holds. failed is the answer it gave when the
// processor declined the charge (nil for other failures).
func (s *Server) charge(ctx context.Context, w http.ResponseWriter, op chargeOp) (ch Charge, resp Response, failed *Response, ok bool) {
	id, err := s.ledger.NextChargeID(ctx)
	if err != nil {
		s.unavailable(w, "next charge id", err)
		return Charge{}, Response{}, nil, false
	}
	if _, err := s.proc.Charge(ctx, ProcessorRequest{
		DedupKey:       op.dedupKey(id),
		IdempotencyKey: op.key,
		Amount:         op.req.Amount,
		Currency:       op.req.Currency,
		Customer:       op.req.Customer,
		FailFirst:      op.flaky,
	}); err != nil {
		s.log.Warn("processor failed", "err", err)
		if s.halted.Load() {
			return Charge{}, Response{}, nil, false
		}
		p := problemDetails{Type: "about:blank", Title: "card processor failed", Status: http.StatusBadGateway, Detail: err.Error()}
		writeProblem(w, p)
		return Charge{}, Response{}, &Response{Status: p.Status, Body: problemBody(p)}, false
	}
	if s.halted.Load() {
		// The process died during the charge: nothing more is written.
		return Charge{}, Response{}, nil, false
	}
	ch = s.newCharge(id, op.key, op.req)
	body, err := marshal(chargeView(ch, false))
	if err != nil {
		s.proc.Void(op.dedupKey(id))
		problem(w, http.StatusInternalServerError, "encoding failed", err.Error())
		return Charge{}, Response{}, nil, false
	}
	return ch, Response{Status: http.StatusCreated, Body: body}, nil, true
}

// recordedOrVoid is called when the ledger write of ch failed after the
// processor charged for it. If the row is in the ledger after all (the
// write landed and only its acknowledgement was lost), it reports true and
// the caller answers as if the write had succeeded. Otherwise it voids the
// processor charge and reports false: the caller answers 503, and a 503
// leaves no processor charge without its ledger row, whether the failure
// is transient (the ledger is down; the retry charges afresh) or permanent
// (a value the ledger refuses; every retry fails the same way and charges
// nothing). A ledger that cannot even be read is taken as not written.
func (s *Server) recordedOrVoid(ctx context.Context, op chargeOp, ch Charge, what string, err error) bool {
	if ch.IdempotencyKey != "" {
		rows, lerr := s.ledger.ChargesByKey(ctx, ch.IdempotencyKey)
		if lerr == nil && slices.ContainsFunc(rows, func(r Charge) bool { return r.ID == ch.ID }) {
			s.log.Warn("ledger write failed but its row is there", "op", what, "charge", ch.ID, "err", err)
			return true
		}
	}
	if !s.proc.Void(op.dedupKey(ch.ID)) {
		s.log.Error("could not void an unrecorded processor charge", "op", what, "charge", ch.ID)
	}
	return false
}

// execute charges for a key record owned by owner ("" when unowned) and
// stores the ledger row with the completed record in one transaction. It
// reports whether it released the cache lock held by owner, with the
// response it stored (one roundtrip, where the cache can).
func (s *Server) execute(ctx context.Context, w http.ResponseWriter, op chargeOp, owner string) (released bool) {
	ch, resp, failed, ok := s.charge(ctx, w, op)
	if !ok {
		switch {
		case s.halted.Load():
			// A crash: the key record stays as it is (in flight).
		case s.bugs[BugStuckKey]:
			s.log.Warn("seeded bug: failed charge leaves its key in flight", "key", op.key, "bug", BugStuckKey)
		case s.bugs[BugCacheErrors] && failed != nil:
			// The error is stored as the key's answer, in place of the
			// in-flight record: every retry gets it replayed.
			s.log.Warn("seeded bug: a failed charge's error is stored as the key's response", "key", op.key, "bug", BugCacheErrors)
			if err := s.ledger.PutKey(ctx, s.completedRecord(op, "", owner, *failed)); err != nil {
				s.log.Error("put key failed", "err", err)
			}
			s.cachePut(ctx, op, *failed)
		default:
			s.release(ctx, op.id, cmp.Or(owner, op.marked))
		}
		return
	}
	if s.bugs[BugChargeThen4xx] {
		s.chargeThen4xx(ctx, w, op, ch, owner)
		return
	}
	rec := s.completedRecord(op, ch.ID, owner, resp)
	if err := s.ledger.CompleteCharge(ctx, rec, ch); err != nil {
		if errors.Is(err, ErrKeyLost) {
			s.log.Warn("idempotency key lost while charging", "charge", ch.ID)
			inFlight(w)
			return
		}
		if !s.recordedOrVoid(ctx, op, ch, "complete charge", err) {
			s.release(ctx, op.id, cmp.Or(owner, op.marked))
			s.unavailable(w, "complete charge", err)
			return
		}
	}
	if s.bugs[BugRetentionByCount] {
		s.retain(ctx, op, rec)
	}
	if !s.bugs[BugKeyOnly] {
		released = s.complete(ctx, op, resp, owner)
	}
	writeResponse(w, resp, false)
	return released
}

// complete caches resp for op and, where the cache can do both in one
// roundtrip, releases the lock held by token; it reports whether it did.
func (s *Server) complete(ctx context.Context, op chargeOp, resp Response, token string) bool {
	c, ok := s.cache.(completer)
	if !ok || token == "" || s.bugs[BugRetentionByCount] {
		s.cachePut(ctx, op, resp)
		return false
	}
	if err := c.Complete(ctx, op.ck, token, Entry{Fingerprint: op.fp, Response: resp}, s.keyTTL); err != nil {
		// As with Put, the ledger is the source of truth; the deferred
		// unlock still runs.
		s.log.Error("cache complete failed", "err", err)
		return false
	}
	return true
}

// chargeThen4xx is the charge-then-4xx bug: a check that belongs before
// the charge runs after it. The charge is made and its ledger row written
// (alone, with no key record), then the key is released as if the request
// had failed with no effect, nothing is cached, and the client is told 400.
// A retry finds no key and charges again.
func (s *Server) chargeThen4xx(ctx context.Context, w http.ResponseWriter, op chargeOp, ch Charge, owner string) {
	if err := s.ledger.InsertCharge(ctx, ch); err != nil && !s.recordedOrVoid(ctx, op, ch, "insert charge", err) {
		s.release(ctx, op.id, owner)
		s.unavailable(w, "insert charge", err)
		return
	}
	s.release(ctx, op.id, owner)
	s.log.Warn("seeded bug: 400 after charging", "charge", ch.ID, "bug", BugChargeThen4xx)
	problem(w, http.StatusBadRequest, "invalid charge", "the customer has no receipt address on file")
}

func (s *Server) completedRecord(op chargeOp, chargeID, owner string, resp Response) KeyRecord {
	rec := KeyRecord{
		ID:          op.id,
		Fingerprint: op.fp,
		State:       KeyCompleted,
		Response:    &resp,
		ChargeID:    chargeID,
		Owner:       owner,
		ExpiresAt:   s.now().Add(s.keyTTL),
	}
	if s.bugs[BugKeyOnly] {
		rec.Response = nil
	}
	return rec
}

func (s *Server) newCharge(id, key string, req chargeRequest) Charge {
	return Charge{
		ID:             id,
		IdempotencyKey: key,
		Amount:         req.Amount,
		Currency:       req.Currency,
		Customer:       req.Customer,
		Status:         "succeeded",
		Created:        s.now().UTC().Truncate(time.Second),
	}
}

// replay answers with the stored response of a completed key, or 422 when
// the payload differs. A key stored without its response (the key-only
// bug) gets a freshly built body; under the replay-mismatch-status bug the
// payload always differs; the mismatch-400 bug answers 400 instead of 422;
// the replay-other-body bug re-encodes a stored charge.
func (s *Server) replay(ctx context.Context, w http.ResponseWriter, op chargeOp, fp string, resp *Response) {
	if fp == burntFingerprint && resp != nil {
		// A key the burnt-key bug burnt: its 412, whatever is sent.
		writeResponse(w, *resp, false)
		return
	}
	mismatch := (fp != op.fp || s.bugs[BugReplayMismatchStatus]) && !op.anyPayload
	if mismatch && !s.bugs[BugNoFingerprint] {
		if s.bugs[BugMismatch400] {
			problem(w, http.StatusBadRequest, "invalid request", "this Idempotency-Key has already been used")
			return
		}
		problem(w, http.StatusUnprocessableEntity, "idempotency key reused with a different payload",
			"this Idempotency-Key was first used with another request body")
		return
	}
	if resp != nil && s.bugs[BugReplayOtherBody] {
		resp = reencoded(*resp, op.key)
	}
	if s.bugs[BugRetentionByCount] {
		s.recent.touch(op.ck)
	}
	if resp == nil {
		id, err := s.ledger.NextChargeID(ctx)
		if err != nil {
			s.unavailable(w, "next charge id", err)
			return
		}
		body, err := marshal(chargeView(s.newCharge(id, op.key, op.req), false))
		if err != nil {
			problem(w, http.StatusInternalServerError, "encoding failed", err.Error())
			return
		}
		resp = &Response{Status: http.StatusCreated, Body: body}
	}
	writeResponse(w, *resp, true)
}

func (s *Server) cachePut(ctx context.Context, op chargeOp, resp Response) {
	if s.bugs[BugRetentionByCount] {
		return // the bug's keys live in the ledger alone, counted
	}
	// The ledger is the source of truth: a failed cache write only costs a
	// later cache miss.
	if err := s.cache.Put(ctx, op.ck, Entry{Fingerprint: op.fp, Response: resp}, s.keyTTL); err != nil {
		s.log.Error("cache put failed", "err", err)
	}
}

func (s *Server) unlock(ctx context.Context, key, token string) {
	if err := s.cache.Unlock(ctx, key, token); err != nil {
		s.log.Error("cache unlock failed; the lock expires with its TTL", "err", err)
	}
}

func (s *Server) release(ctx context.Context, id KeyID, owner string) {
	if owner == "" {
		return
	}
	if err := s.ledger.ReleaseKey(ctx, id, owner); err != nil {
		s.log.Error("release key failed; the key is usable again when its lease expires", "err", err)
	}
}

// chargeNaive charges on every call and records the client's key, if any.
func (s *Server) chargeNaive(w http.ResponseWriter, r *http.Request) {
	req, fp, err := decodeCharge(w, r, false)
	if err != nil {
		problem(w, http.StatusBadRequest, "invalid charge", err.Error())
		return
	}
	key := unquoteKey(r.Header.Get("Idempotency-Key"))
	if err := storableText("the Idempotency-Key header", key); err != nil {
		problem(w, http.StatusBadRequest, "invalid idempotency key", err.Error())
		return
	}
	s.chargeOnce(context.WithoutCancel(r.Context()), w, chargeOp{key: key, fp: fp, req: req})
}

// chargeOnce charges op with no key record: the naive endpoint, and a
// keyless charge that opted out of deduplication.
func (s *Server) chargeOnce(ctx context.Context, w http.ResponseWriter, op chargeOp) {
	ch, resp, _, ok := s.charge(ctx, w, op)
	if !ok {
		return
	}
	if err := s.ledger.InsertCharge(ctx, ch); err != nil && !s.recordedOrVoid(ctx, op, ch, "insert charge", err) {
		s.unavailable(w, "insert charge", err)
		return
	}
	writeResponse(w, resp, false)
}

func (s *Server) handleNaiveChargesCreate() http.HandlerFunc {
	return s.chargeNaive
}

// reencoded is the replay-other-body bug's replay: a stored 2xx JSON
// object decoded and encoded again with the client's key added, so its
// fields come out in another order and one more. Anything else is kept.
func reencoded(resp Response, key string) *Response {
	var m map[string]any
	if resp.Status/100 != 2 || json.Unmarshal(resp.Body, &m) != nil || m == nil {
		return &resp
	}
	m["idempotency_key"] = key
	body, err := json.Marshal(m)
	if err != nil {
		return &resp
	}
	return &Response{Status: resp.Status, Body: body}
}
