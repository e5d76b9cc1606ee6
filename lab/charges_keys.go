// The seeded bugs of how keys are named, kept and claimed: burnt-key,
// key-truncate, server-minted-key, retention-by-count, shared-record,
// keyless-shared and narrow-race. Like every bug, each is the handler
// calling the Ledger and the Cache in a wrong way; no backend knows of it.

package lab

import (
	"container/list"
	"context"
	"crypto/rand"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
)

// keyOptional reports whether a protected charge may come without a key:
// when it says so (OptionalKeyHeader), and always under the bugs that take
// keyless requests (the server mints the key, or shares one record).
func (s *Server) keyOptional(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get(OptionalKeyHeader), "true") ||
		s.bugs[BugServerMintedKey] || s.bugs[BugKeylessShared]
}

// chargeKeyless charges a request that came without a key: on its own, as
// its client asked, or, under the keyless-shared bug, deduplicated by its
// method and path alone, whoever sends it and whatever it charges.
func (s *Server) chargeKeyless(ctx context.Context, w http.ResponseWriter, r *http.Request, user string, req chargeRequest, fp string) {
	if !s.bugs[BugKeylessShared] {
		s.chargeOnce(ctx, w, chargeOp{fp: fp, req: req})
		return
	}
	s.log.Warn("seeded bug: a keyless charge is deduplicated by its path", "bug", BugKeylessShared)
	op := s.newChargeOp("", "keyless:"+r.Method+" "+r.URL.Path, req, fp)
	op.key = "" // the ledger row carries no client key
	op.anyPayload = true
	s.chargeProtected(ctx, w, op)
}

// burntFingerprint is the fingerprint of a key record the burnt-key bug
// burnt: replay answers its stored 412, whatever the payload.
const burntFingerprint = "burnt"

// burn is the burnt-key bug: a request refused before it was processed
// leaves its key recorded as used, unless the key already has a record.
// Every later request with the key gets 412, the corrected one too.
func (s *Server) burn(ctx context.Context, op chargeOp) {
	body, err := marshal(problemDetails{Type: "about:blank", Title: "idempotency key already used",
		Status: http.StatusPreconditionFailed, Detail: "this Idempotency-Key was used by a request that failed"})
	if err != nil {
		return
	}
	resp := Response{Status: http.StatusPreconditionFailed, Body: body}
	now := s.now()
	_, created, err := s.ledger.BeginKey(ctx, KeyRecord{
		ID: op.id, Fingerprint: burntFingerprint, State: KeyCompleted, Response: &resp, ExpiresAt: now.Add(s.keyTTL),
	}, now)
	if err != nil || !created {
		return
	}
	s.log.Warn("seeded bug: a refused request burns its key", "key", op.key, "bug", BugBurntKey)
	if err := s.cache.Put(ctx, op.ck, Entry{Fingerprint: burntFingerprint, Response: resp}, s.keyTTL); err != nil {
		s.log.Error("cache put failed", "err", err)
	}
}

// mintedPrefix starts every key the server-minted-key bug mints.
const mintedPrefix = "mk_"

// mintKey is the server-minted-key bug: a key the server minted (it knows
// them by their form) is used as it is; any other key, or none, is
// replaced by a new one. The answer carries the key in its Idempotency-Key
// header. The ledger row keeps the client's key as sent, or the minted one
// when none was sent.
func (s *Server) mintKey(w http.ResponseWriter, op *chargeOp) {
	if !minted(op.id.Key) {
		op.id.Key = mintedPrefix + rand.Text()
		op.ck = cacheKey(op.id)
		if op.key == "" {
			op.key = op.id.Key
		}
	}
	w.Header().Set("Idempotency-Key", op.id.Key)
}

func minted(key string) bool {
	return strings.HasPrefix(key, mintedPrefix) && len(key) == len(mintedPrefix)+26
}

// truncate is s cut to its first n characters.
func truncate(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// recentKeys are the retention-by-count bug's keys, the most recently
// used first: limit of them (Config.RetentionKeys), in the process.
type recentKeys struct {
	limit int
	mu    sync.Mutex
	order list.List // of recentKey
	byCK  map[string]*list.Element
}

type recentKey struct {
	ck  string
	rec KeyRecord
}

// keep makes rec, under the cache key ck, the most recent key, and
// returns the record it pushes out, if any.
func (k *recentKeys) keep(ck string, rec KeyRecord) (KeyRecord, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.byCK == nil {
		k.byCK = map[string]*list.Element{}
	}
	if e, ok := k.byCK[ck]; ok {
		e.Value = recentKey{ck, rec}
		k.order.MoveToFront(e)
	} else {
		k.byCK[ck] = k.order.PushFront(recentKey{ck, rec})
	}
	if k.order.Len() <= k.limit {
		return KeyRecord{}, false
	}
	old := k.order.Remove(k.order.Back()).(recentKey)
	delete(k.byCK, old.ck)
	return old.rec, true
}

// touch makes the key under ck the most recent, if it is kept.
func (k *recentKeys) touch(ck string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.byCK[ck]; ok {
		k.order.MoveToFront(e)
	}
}

// retain is the retention-by-count bug: the completed record rec of op is
// kept among the last Config.RetentionKeys keys, and the key it pushes out is
// forgotten (its record expires now), so a retry of that key charges
// again. Its keys are never cached (cachePut).
func (s *Server) retain(ctx context.Context, op chargeOp, rec KeyRecord) {
	old, ok := s.recent.keep(op.ck, rec)
	if !ok {
		return
	}
	old.ExpiresAt = s.now()
	if err := s.ledger.PutKey(ctx, old); err != nil {
		s.log.Error("put key failed", "err", err)
	}
}

// sharedRecord is the one in-flight record of the shared-record bug.
var sharedRecord = KeyID{Key: "lab:in-flight"}

// chargeSharedRecord is the shared-record bug: the key is looked up, then
// the one in-flight record every request shares is overwritten with it
// (its Owner names the key), the charge made, and the completed record
// written under the key the shared record names by then, another
// request's when one came in meanwhile. The charge's own key is left with
// no record, so its retry charges again; the other key's retry gets this
// charge's answer.
func (s *Server) chargeSharedRecord(ctx context.Context, w http.ResponseWriter, op chargeOp) {
	if !s.lookedUp(ctx, w, op) {
		return
	}
	if err := s.ledger.PutKey(ctx, KeyRecord{ID: sharedRecord, Fingerprint: op.fp, State: KeyInFlight,
		Owner: op.ck, ExpiresAt: s.now().Add(s.lockTTL)}); err != nil {
		s.unavailable(w, "put key", err)
		return
	}
	ch, resp, _, ok := s.charge(ctx, w, op)
	if !ok {
		return
	}
	rec := s.completedRecord(op, ch.ID, "", resp)
	if slot, found, err := s.ledger.LookupKey(ctx, sharedRecord, s.now()); err == nil && found {
		if id, ok := keyOf(slot.Owner); ok && id != op.id {
			s.log.Warn("seeded bug: a charge completes under another key", "key", op.key, "under", id.Key, "bug", BugSharedRecord)
			rec.ID = id
		}
	}
	if err := s.ledger.CompleteCharge(ctx, rec, ch); err != nil && !s.recordedOrVoid(ctx, op, ch, "complete charge", err) {
		s.unavailable(w, "complete charge", err)
		return
	}
	writeResponse(w, resp, false)
}

// keyOf is the KeyID a cache key names.
func keyOf(ck string) (KeyID, bool) {
	u, k, ok := strings.Cut(ck, "|")
	if !ok {
		return KeyID{}, false
	}
	user, err := url.QueryUnescape(u)
	return KeyID{User: user, Key: k}, err == nil
}

// chargeNarrowRace is the narrow-race bug: the key is looked up, the
// goroutine yields, and only then is the key marked in flight,
// unconditionally, a roundtrip to the ledger later. A copy that arrives
// after the mark gets 409 or the replay; copies that arrive within those
// microseconds all pass the check and all charge.
func (s *Server) chargeNarrowRace(ctx context.Context, w http.ResponseWriter, op chargeOp) {
	if !s.lookedUp(ctx, w, op) {
		return
	}
	runtime.Gosched()
	op.marked = rand.Text()
	if err := s.ledger.PutKey(ctx, KeyRecord{ID: op.id, Fingerprint: op.fp, State: KeyInFlight,
		Owner: op.marked, ExpiresAt: s.now().Add(s.lockTTL)}); err != nil {
		s.unavailable(w, "put key", err)
		return
	}
	s.execute(ctx, w, op, "")
}

// lookedUp is the check of a check-then-act: a completed key is replayed,
// one in flight answered 409. It reports whether the key has no record
// (the caller goes on); otherwise it has answered.
func (s *Server) lookedUp(ctx context.Context, w http.ResponseWriter, op chargeOp) bool {
	rec, found, err := s.ledger.LookupKey(ctx, op.id, s.now())
	switch {
	case err != nil:
		s.unavailable(w, "lookup key", err)
		return false
	case !found:
		return true
	case rec.State != KeyCompleted:
		inFlight(w)
	default:
		s.replay(ctx, w, op, rec.Fingerprint, rec.Response)
	}
	return false
}
