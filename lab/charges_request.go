package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
)

// chargeRequest is the body of POST /charges.
type chargeRequest struct {
	Amount   int64
	Currency string
	Customer string
}

// decodeCharge reads and validates a charge body and returns it with the
// fingerprint of its canonical JSON, or of its raw bytes when raw is set
// (the raw-fingerprint bug).
func decodeCharge(w http.ResponseWriter, r *http.Request, raw bool) (chargeRequest, string, error) {
	body, err := readBody(w, r)
	if err != nil {
		return chargeRequest{}, "", err
	}
	return decodeChargeBody(body, raw)
}

// decodeChargeBody validates a charge body (decodeCharge), from a request
// or a message.
func decodeChargeBody(body []byte, raw bool) (chargeRequest, string, error) {
	if err := storableBody(body); err != nil {
		return chargeRequest{}, "", err
	}
	canon, v, err := canonical(body)
	if err != nil {
		return chargeRequest{}, "", err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return chargeRequest{}, "", errors.New("the body must be a JSON object")
	}
	var req chargeRequest
	n, ok := obj["amount"].(json.Number)
	if !ok {
		return chargeRequest{}, "", errors.New("amount must be a number")
	}
	req.Amount, err = n.Int64()
	if err != nil || req.Amount <= 0 {
		return chargeRequest{}, "", fmt.Errorf("amount must be a positive integer, got %s", n)
	}
	req.Currency, ok = obj["currency"].(string)
	if !ok || !isCurrency(req.Currency) {
		return chargeRequest{}, "", errors.New("currency must be a 3-letter code")
	}
	if c, present := obj["customer"]; present {
		if req.Customer, ok = c.(string); !ok {
			return chargeRequest{}, "", errors.New("customer must be a string")
		}
		if err := storableText("customer", req.Customer); err != nil {
			return chargeRequest{}, "", err
		}
	}
	if raw {
		return req, fingerprint("POST /charges", body), nil
	}
	return req, fingerprint("POST /charges", canon), nil
}

func isCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// chargeOp is one protected charge request, after validation.
type chargeOp struct {
	key string // the client's key, as sent (unquoted)
	id  KeyID  // the key record it is deduplicated under
	ck  string // the cache key of id
	fp  string // payload fingerprint
	req chargeRequest
	// forward: the processor is called with id as its dedup key. Bug paths
	// that lose the application's dedup call it with a fresh key instead,
	// so the processor does not hide the mistake from either oracle.
	forward bool
	// flaky: the processor fails this key's first charge (Config.FlakyEvery).
	flaky bool
	// noCache: the request carried Cache-Control: no-cache (read only by
	// the no-cache-skips bug).
	noCache bool
	// marked is the owner of the in-flight record a bug wrote without a
	// lock (narrow-race): a failed charge releases it as a correct one
	// would, so that the bug is only its race.
	marked string
	// anyPayload: a replay answers whatever the payload (the
	// keyless-shared bug's record stands for every keyless request).
	anyPayload bool
}

func (s *Server) newChargeOp(user, key string, req chargeRequest, fp string) chargeOp {
	op := chargeOp{key: key, id: KeyID{User: user, Key: key}, fp: fp, req: req, forward: true}
	if s.bugs[BugGlobalKeys] {
		op.id.User = ""
	}
	if s.bugs[BugContentDedup] {
		op.id.Key = "payload:" + fp
	}
	if s.bugs[BugKeyTruncate] {
		op.id.Key = truncate(op.id.Key, KeyTruncateLen)
	}
	if s.bugs[BugCheckThenAct] || s.bugs[BugNotAtomic] || s.bugs[BugShortTTL] ||
		s.bugs[BugChargeThen4xx] || s.bugs[BugInProcessLock] || s.bugs[BugRetentionByCount] ||
		s.bugs[BugSharedRecord] || s.bugs[BugNarrowRace] {
		op.forward = false
	}
	if s.flakyEvery > 0 {
		h := fnv.New64a()
		h.Write([]byte(op.id.User + "\x00" + op.id.Key))
		op.flaky = h.Sum64()%s.flakyEvery == 0
	}
	op.ck = cacheKey(op.id)
	return op
}

// cacheKey names id in the cache. The user is escaped so it cannot hold
// the separator.
func cacheKey(id KeyID) string { return url.QueryEscape(id.User) + "|" + id.Key }

func (op chargeOp) dedupKey(chargeID string) string {
	if op.forward {
		return op.id.User + ":" + op.id.Key
	}
	return "lab:" + chargeID
}
