package runner

import (
	"errors"
	"maps"
	"net/http"
	"slices"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// idempotencyHeaders are the answer headers a run keeps in
// Attempt.Headers, as evidence of how the server treated a key: a key it
// minted, a replay, when to retry, the resource made. Most answers carry
// none of them, and cost nothing to look for (see BenchmarkRunClosed64).
var idempotencyHeaders = []string{"Location", "Idempotency-Key", "Idempotent-Replayed", "Retry-After"}

// fromAnswer is operation.key.from_answer compiled: where an answer
// carries the key the server minted, and where attempts send it.
type fromAnswer struct {
	// header is the answer header holding the key (canonical); "" when
	// the key is at a JSONPath of the body, which the client keeps in
	// Attempt.Fields as history.MintedKeyField.
	header string
	// clientKey: the first attempt sends the op's own key (the scenario
	// names a header or body field for it); else it sends none.
	clientKey bool
	// sendIn is the header the key is sent in when the scenario names no
	// place: the answer's header, else Idempotency-Key.
	sendIn string
}

// newFromAnswer compiles k.FromAnswer (nil when unset) and returns the
// response fields the client keeps, the JSONPath of the key among them.
func newFromAnswer(k scenarios.KeyPlace, fields map[string]string, otherSender bool) (*fromAnswer, map[string]string, error) {
	fa := k.FromAnswer
	if fa == nil {
		return nil, fields, nil
	}
	if otherSender {
		return nil, nil, errors.New("operation.key.from_answer: only an HTTP target answers with a key")
	}
	m := &fromAnswer{clientKey: k.Header != "" || k.BodyField != "", sendIn: "Idempotency-Key"}
	switch {
	case fa.Header != "" && fa.JSON == "":
		m.header = http.CanonicalHeaderKey(fa.Header)
		m.sendIn = m.header
	case fa.JSON != "" && fa.Header == "":
		fields = maps.Clone(fields)
		if fields == nil {
			fields = map[string]string{}
		}
		fields[history.MintedKeyField] = fa.JSON
	default:
		return nil, nil, errors.New("operation.key.from_answer: set exactly one of header or json")
	}
	return m, fields, nil
}

// answerHeaders are the answer headers the run keeps: the idempotency
// ones, and the one the key comes in.
func (m *fromAnswer) answerHeaders() []string {
	if m == nil || m.header == "" || slices.Contains(idempotencyHeaders, m.header) {
		return idempotencyHeaders
	}
	return append(slices.Clip(idempotencyHeaders), m.header)
}

// take returns the key a's answer carried, "" for none, and keeps it in
// a.Fields as history.MintedKeyField (where the client put it already
// when it comes from the body).
func (m *fromAnswer) take(a *history.Attempt) string {
	if m.header == "" {
		return a.Fields[history.MintedKeyField]
	}
	k := a.Headers[m.header]
	if k != "" {
		if a.Fields == nil {
			a.Fields = make(map[string]string, 1)
		}
		a.Fields[history.MintedKeyField] = k
	}
	return k
}

// sentKey is the key an attempt of the op v sends, and whether it sends one:
// the key the latest answer minted, else the op's own when the first
// attempt carries it.
func (r *run) sentKey(v scenarios.Vars) (string, bool) {
	switch {
	case r.minted == nil:
		return v.Key, true
	case v.Minted != "":
		return v.Minted, true
	}
	return v.Key, r.minted.clientKey
}

// replayed keeps the key the answers of the replays (operation.replay)
// carried in their fields, as runOp does for the op's attempts: every
// attempt with kept headers is a rare one of its worker's log.
func (m *fromAnswer) replayed(ws []*worker) {
	if m == nil || m.header == "" {
		return
	}
	for _, w := range ws {
		for i := range w.rec.attempts.rare {
			m.take(&w.rec.attempts.rare[i])
		}
	}
}
