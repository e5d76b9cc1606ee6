package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/canon"
	"github.com/idemcheck/idemcheck/scenarios"
)

// worker runs ops one at a time and records them. Everything it owns is
// reused from one op to the next; nothing is shared but the run.
type worker struct {
	r     *run
	rec   recorder
	pcg   rand.PCG
	rnd   *rand.Rand
	body  bodyReader
	canon canon.Buffer
	timer *time.Timer

	// the current op's key-edited static body, kept for its retries
	// (shared, read-only, by its requests)
	keyed struct {
		op   int
		body []byte
	}

	sent         int   // attempts handed to the transport
	answered     int   // attempts that got an HTTP answer
	transportErr error // the first transport error
	renderErr    error // the first template error
}

func (r *run) newWorker() *worker {
	w := &worker{r: r, body: newBodyReader(r.maxBody)}
	w.rnd = rand.New(&w.pcg)
	return w
}

// runOp runs op id, first intended at intended: the before read, the
// attempts and their retries. It records the op and its attempts and tells
// the observer.
//
// An acknowledged op of a scenario with operation.replay is handed to a
// replay goroutine (see replays) so that the worker moves on to its next
// op at once; the observer then hears of the op after its replays.
func (w *worker) runOp(id int, intended time.Duration) {
	r := w.r
	w.pcg.Seed(r.seed, uint64(id))
	op := history.Op{ID: id}
	if len(r.users) > 0 {
		op.User = r.users[id%len(r.users)]
	}
	var keyErr error
	if r.key == nil {
		op.Key = scenarios.NewKey(w.rnd)
	} else if op.Key, keyErr = r.key.Render(scenarios.Vars{Seq: id, User: op.User, Rand: w.rnd}); keyErr != nil {
		op.Key = scenarios.NewKey(w.rnd) // names the op in the history
	}
	w.rec.ops.add(op)
	v := scenarios.Vars{Key: op.Key, Seq: id, User: op.User, Rand: w.rnd}
	state := history.NotSent
	handedOff := false
	defer func() {
		if r.obs != nil && !handedOff {
			r.obs.OpDone(id, state)
		}
	}()
	if r.ctx.Err() != nil {
		return
	}
	if keyErr != nil {
		w.rec.attempts.add(w.unrendered(id, 1, "", intended, keyErr))
		return
	}
	if r.before != nil {
		vars, err := w.capture(v)
		if err != nil {
			w.rec.attempts.add(r.unsent(id, 1, "", intended, "operation.before: "+err.Error()))
			return
		}
		v.Vars = vars
	}
	for n := 1; ; n++ {
		v.Attempt = n
		a, rendered := w.attempt(id, v, intended)
		w.rec.attempts.add(a)
		switch {
		case a.Acked():
			state = history.Acked
			if r.replay != nil && r.ctx.Err() == nil {
				handedOff = true
				r.replay.start(r, id, v, a.End)
			}
			return
		case a.Outcome != history.Fail && state != history.Acked:
			state = history.Indeterminate
		}
		// A request that does not render will not render on a retry.
		if !rendered || n >= r.attempts || r.ctx.Err() != nil || !r.retryOn.match(a.Outcome, a.Status) {
			return
		}
		wait := r.backoff.wait(id, n)
		intended = a.End + wait
		if !w.sleep(wait) {
			return
		}
	}
}

// unsent returns attempt n of op as failed before it was sent, stamped
// now, with msg as its error.
func (r *run) unsent(op, n int, fault string, intended time.Duration, msg string) history.Attempt {
	now := r.since()
	return history.Attempt{
		Op: op, N: n, Fault: fault, Outcome: history.Fail,
		Intended: intended, Start: now, End: now,
		Err: msg,
	}
}

// unrendered returns attempt n of op as not sent because its request (or
// its key) could not be rendered, and keeps err if it is the worker's first
// render error.
func (w *worker) unrendered(op, n int, fault string, intended time.Duration, err error) history.Attempt {
	if w.renderErr == nil {
		w.renderErr = err
	}
	return w.r.unsent(op, n, fault, intended, "render: "+err.Error())
}

// attempt makes attempt v.Attempt of op and returns its record; rendered is
// false when the request could not be rendered (and was not sent).
func (w *worker) attempt(op int, v scenarios.Vars, intended time.Duration) (a history.Attempt, rendered bool) {
	r := w.r
	a = history.Attempt{Op: op, N: v.Attempt, Intended: intended}
	f := r.plan.Pick(op, v.Attempt)
	ctx := r.ctx
	if f != nil {
		a.Fault = f.Kind()
		ctx = faults.WithFault(ctx, f)
	}
	// The same Rand state for every attempt renders the same body.
	w.pcg.Seed(r.tmplSeed, uint64(op))
	req, err := w.build(ctx, v)
	if err != nil {
		return w.unrendered(op, v.Attempt, a.Fault, intended, err), false
	}
	w.send(&a, req)
	return a, true
}

// send sends req and records what came of it in a: times, outcome, status,
// fingerprint and fields.
func (w *worker) send(a *history.Attempt, req *http.Request) {
	r := w.r
	noHiddenResend(req)
	w.sent++
	a.Start = r.since()
	resp, err := r.rt.RoundTrip(req)
	if err != nil {
		a.End = r.since()
		a.Err = err.Error()
		a.Outcome = history.Info
		if !faults.Sent(err) {
			a.Outcome = history.Fail
		}
		if w.transportErr == nil {
			w.transportErr = err
		}
		return
	}
	w.answered++
	b, err := w.body.read(req.Context(), resp.Body)
	a.End = r.since()
	if err != nil {
		a.Outcome = history.Info
		a.Err = fmt.Sprintf("status %d, then reading the body: %v", resp.StatusCode, err)
		return
	}
	a.Outcome = history.OK
	a.Status = resp.StatusCode
	// b.size is the body's real size; history.Attempt has no field for it
	// yet.
	if b.truncated() {
		// Over the cap the body is not a whole JSON document: it is
		// fingerprinted as it is, every byte of it (see Options.MaxBody),
		// and keeps no fields.
		a.Fingerprint = history.Fingerprint(b.raw)
		return
	}
	var fp uint64
	fp, a.Fields = w.inspect(b.kept)
	a.Fingerprint = history.Fingerprint(fp)
}

// build renders the operation's request for v, with the op's key in place.
func (w *worker) build(ctx context.Context, v scenarios.Vars) (*http.Request, error) {
	r := w.r
	if st := r.static; st != nil {
		body := st.body
		if r.keyField != "" {
			// Same body for every attempt of the op: edit it once.
			if w.keyed.op != v.Seq || w.keyed.body == nil {
				b, err := setField(st.body, r.keyField, v.Key)
				if err != nil {
					return nil, err
				}
				w.keyed.op, w.keyed.body = v.Seq, b
			}
			body = w.keyed.body
		}
		var keyVal []string
		if r.keyHeader != "" {
			keyVal = []string{v.Key}
		}
		return st.request(ctx, body, r.keyHeader, keyVal)
	}
	body, err := r.op.Body(v)
	if err != nil {
		return nil, err
	}
	return r.keyedRequest(ctx, v, body)
}

// keyedRequest builds the operation's request for v with body, the op's key
// put in the body field and the header the run keys with.
func (r *run) keyedRequest(ctx context.Context, v scenarios.Vars, body []byte) (*http.Request, error) {
	var err error
	if r.keyField != "" {
		if body, err = setField(body, r.keyField, v.Key); err != nil {
			return nil, err
		}
	}
	req, err := r.op.BuildWithBody(ctx, r.base, v, body)
	if err != nil {
		return nil, err
	}
	if r.keyHeader != "" {
		req.Header.Set(r.keyHeader, v.Key)
	}
	return req, nil
}

// setField sets the top-level member field of the JSON object body to key.
// A request without a body gets {"field": key}.
func setField(body []byte, field, key string) ([]byte, error) {
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("operation.key.body_field %q: the body must be a JSON object: %w", field, err)
		}
		if m == nil {
			return nil, fmt.Errorf("operation.key.body_field %q: the body must be a JSON object, got null", field)
		}
	}
	k, err := json.Marshal(key)
	if err != nil {
		return nil, err
	}
	m[field] = k
	return json.Marshal(m)
}

// fetch sends req through rt and reads the answer with br. A transport
// error, a body that does not arrive or a non-2xx answer is an error naming
// the request, with the status and the start of the body when there was an
// answer.
func fetch(rt http.RoundTripper, req *http.Request, br *bodyReader) (body, error) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return body{}, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	b, err := br.read(req.Context(), resp.Body)
	if err != nil {
		return b, fmt.Errorf("%s %s: status %d, then reading the body: %w", req.Method, req.URL.Path, resp.StatusCode, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return b, fmt.Errorf("%s %s: status %d: %s", req.Method, req.URL.Path, resp.StatusCode, snippet(b.kept))
	}
	return b, nil
}

// inspect returns the fingerprint of body and the fields the scenario keeps.
func (w *worker) inspect(body []byte) (uint64, map[string]string) {
	r := w.r
	if len(r.fields) == 0 {
		return w.canon.Fingerprint(body, r.volatile), nil
	}
	doc, ok := canon.Decode(body)
	if !ok {
		return w.canon.Fingerprint(body, nil), nil
	}
	fields := map[string]string{}
	for _, f := range r.fields {
		if s, ok := w.canon.Select(f.path, doc); ok {
			fields[f.name] = s
		}
	}
	if len(fields) == 0 {
		fields = nil
	}
	return w.canon.HashDoc(doc, r.volatile), fields
}

// capture makes the op's before read and returns the captured variables.
func (w *worker) capture(v scenarios.Vars) (map[string]string, error) {
	r := w.r
	v.Attempt = 0
	w.pcg.Seed(r.tmplSeed, uint64(v.Seq))
	req, err := r.before.Build(r.ctx, r.base, v)
	if err != nil {
		return nil, err
	}
	b, err := fetch(r.rt, req, &w.body)
	if err != nil {
		return nil, err
	}
	if b.truncated() {
		return nil, fmt.Errorf("%s %s: the answer is %d bytes, more than the %d kept: %s", req.Method, req.URL.Path, b.size, len(b.kept), snippet(b.kept))
	}
	doc, ok := canon.Decode(b.kept)
	if !ok {
		return nil, fmt.Errorf("%s %s: the answer is not JSON: %s", req.Method, req.URL.Path, snippet(b.kept))
	}
	vars := make(map[string]string, len(r.capture))
	for _, c := range r.capture {
		s, ok := w.canon.Select(c.path, doc)
		if !ok {
			return nil, fmt.Errorf("%s %s: var %s: %s selects nothing in %s", req.Method, req.URL.Path, c.name, c.path, snippet(b.kept))
		}
		vars[c.name] = s
	}
	return vars, nil
}

// sleep waits d unless the run is cancelled first; it reports whether the
// whole wait elapsed.
func (w *worker) sleep(d time.Duration) bool {
	if d <= 0 {
		return w.r.ctx.Err() == nil
	}
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	select {
	case <-w.timer.C:
		return true
	case <-w.r.ctx.Done():
		w.timer.Stop()
		return false
	}
}

// snippet is the start of a body for an error message.
func snippet(b []byte) string {
	const n = 200
	b = bytes.TrimSpace(b)
	if len(b) > n {
		return strconv.Quote(string(b[:n])) + "..."
	}
	return strconv.Quote(string(b))
}

// noHiddenResend keeps net/http from resending a request on its own. The
// transport resends a request it deems replayable when a kept-alive
// connection breaks, and it deems a body-less POST replayable when it
// carries an Idempotency-Key or X-Idempotency-Key header (it looks them up
// by their canonical names): a send the history would never see, which
// could turn a lost answer into a second effect the checkers cannot
// explain. A request with a body and no GetBody is never resent, so
// GetBody is cleared; a body-less one keeps its body-less wire form
// (Content-Length: 0) and gets those two headers under their lower-case
// names, which HTTP treats as the same header and the transport does not
// recognise.
func noHiddenResend(req *http.Request) {
	req.GetBody = nil
	if req.Body != nil && req.Body != http.NoBody {
		return
	}
	for _, name := range []string{"Idempotency-Key", "X-Idempotency-Key"} {
		if v, ok := req.Header[name]; ok {
			delete(req.Header, name)
			req.Header[strings.ToLower(name)] = v
		}
	}
}
