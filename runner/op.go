package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/canon"
	"github.com/idemcheck/idemcheck/internal/h1"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/webhooks"
)

// worker runs ops one at a time and records them. Everything it owns is
// reused from one op to the next; nothing is shared but the run.
type worker struct {
	r *run
	session
	// ctx is the run's context through a child of the worker's own, so
	// that the contexts of its requests (the request timeout) do not all
	// register with, and contend for, the run's.
	ctx    context.Context
	cancel context.CancelFunc // ends ctx; Run calls it when the load is over
	// sendCtx is ctx carrying limit, the request timeout of the request
	// in flight, when the transport applies one (run.limits); else ctx.
	sendCtx context.Context
	// protos and reqs, by target, are the static request with sendCtx
	// and the one request made of it for each attempt (reusable).
	protos, reqs []*http.Request
	rec          recorder
	pcg          rand.PCG
	rnd          *rand.Rand
	timer        *time.Timer

	// the current op's key-edited static body, kept for its retries
	// (shared, read-only, by its requests)
	keyed struct {
		op   int
		key  string
		body []byte
	}

	renderErr error // the first template error

	// handedOps and handedAttempts are what the worker recorded and
	// handed to the spiller (rec holds the rest).
	handedOps, handedAttempts int
}

func (r *run) newWorker() *worker {
	w := &worker{r: r, session: session{body: newBodyReader(r.maxBody)}}
	w.ctx, w.cancel = context.WithCancel(r.ctx)
	w.sendCtx = w.ctx
	if r.limits {
		w.limit = &h1.Limit{Cause: r.timeoutErr}
		// The runner reads one header of an answer (retryAfter), and
		// keeps those the client keeps.
		w.sendCtx = h1.WithHeaders(h1.WithLimit(w.ctx, w.limit), append([]string{"Retry-After"}, r.headers...)...)
	}
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
	op, keyErr := r.identify(r.ctx, id, &w.pcg, w.rnd)
	w.rec.ops.add(op)
	if r.opObs != nil {
		r.opObs.OpStarted(op)
	}
	v := scenarios.Vars{Key: op.Key, Seq: id, User: op.User, Rand: w.rnd, Run: r.runToken, Object: op.Object}
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
			w.rec.attempts.add(r.unsent(id, 1, "", intended, history.BeforeErrPrefix+r.keep.scrub(err.Error())))
			return
		}
		v.Vars = vars
	}
	for n := 1; ; n++ {
		v.Attempt = n
		a, rendered := w.attempt(id, v, intended)
		if r.minted != nil {
			if k := r.minted.take(&a); k != "" {
				v.Minted = k // later attempts and replays send it
			}
		}
		w.rec.attempts.add(a)
		r.recorded(a)
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
		wait := r.backoff.retryWait(id, n, w.retryAfter)
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
	return w.r.unsent(op, n, fault, intended, history.RenderErrPrefix+w.r.keep.scrub(err.Error()))
}

// attempt makes attempt v.Attempt of op and returns its record; rendered is
// false when the request could not be rendered (and was not sent).
func (w *worker) attempt(op int, v scenarios.Vars, intended time.Duration) (a history.Attempt, rendered bool) {
	r := w.r
	a = history.Attempt{Op: op, N: v.Attempt, Intended: intended, Target: r.target(op, v.Attempt)}
	f := r.plan.Pick(op, v.Attempt)
	ctx := w.sendCtx
	if f != nil {
		a.Fault = f.Kind()
		ctx = faults.WithFault(ctx, f)
		if d, ok := f.(faults.Duplicate); ok {
			a.Copies = max(d.Copies, 2)
		}
	}
	// The same Rand state for every attempt renders the same body.
	w.pcg.Seed(r.tmplSeed, uint64(op))
	if r.sender != nil {
		return w.sendOther(v, f, a)
	}
	req, err := w.build(ctx, v, a.Target)
	if err != nil {
		return w.unrendered(op, v.Attempt, a.Fault, intended, err), false
	}
	r.send(&w.session, &a, req)
	return a, true
}

// reusable returns the worker's request for target's static request,
// reset to a copy of it with the worker's sendCtx: one request a worker
// sends at a time, and nothing keeps once its attempt is recorded, so it
// need not be allocated for every attempt. A request that carries a fault
// has a context of its own and is never this one (a fault may keep or
// copy its request).
func (w *worker) reusable(st *static, target int) *http.Request {
	if w.protos == nil {
		w.protos = make([]*http.Request, len(w.r.statics))
		w.reqs = make([]*http.Request, len(w.r.statics))
	}
	if w.protos[target] == nil {
		w.protos[target] = st.proto.WithContext(w.sendCtx)
		w.reqs[target] = new(http.Request)
	}
	req := w.reqs[target]
	*req = *w.protos[target]
	return req
}

// build renders the operation's request for v, with the op's key in place.
func (w *worker) build(ctx context.Context, v scenarios.Vars, target int) (*http.Request, error) {
	r := w.r
	if r.statics != nil {
		st := r.statics[target]
		body := st.body
		key, send := r.sentKey(v)
		if r.keyField != "" && send {
			// Same body for every attempt of the op with its key: edit
			// it once.
			if w.keyed.op != v.Seq || w.keyed.key != key || w.keyed.body == nil {
				b, err := setField(st.body, r.keyField, key)
				if err != nil {
					return nil, err
				}
				w.keyed.op, w.keyed.key, w.keyed.body = v.Seq, key, b
			}
			body = w.keyed.body
		}
		var keyVal []string
		if r.keyHeader != "" && send {
			keyVal = []string{key}
		}
		if ctx == w.sendCtx {
			// No fault: the worker's own request for target, reset.
			req := w.reusable(st, target)
			st.fill(req, body, r.keyHeader, keyVal)
			return req, nil
		}
		return st.request(ctx, body, r.keyHeader, keyVal)
	}
	body, err := r.op.Body(ctx, v)
	if err != nil {
		return nil, err
	}
	return r.keyedRequest(ctx, v, body, target)
}

// keyedRequest builds the operation's request for v to target with body,
// the key the attempt sends (sentKey) put in the body field and the header
// the run keys with.
func (r *run) keyedRequest(ctx context.Context, v scenarios.Vars, body []byte, target int) (*http.Request, error) {
	var err error
	key, send := r.sentKey(v)
	if r.keyField != "" && send {
		if body, err = setField(body, r.keyField, key); err != nil {
			return nil, err
		}
	}
	req, err := r.op.BuildWithBody(ctx, r.targets[target], v, body)
	if err != nil {
		return nil, err
	}
	if r.keyHeader != "" && send {
		req.Header.Set(r.keyHeader, key)
	}
	if r.webhook != nil {
		// a redelivery carries the event's id, a new timestamp and a
		// new signature, as a provider's does: the run compresses the
		// provider's schedule (seconds to days between deliveries) but
		// keeps the signed time's order, each attempt a second later
		// than the one before, so no redelivery is signed as the first
		_, forgery := r.hook.Forges(v.Seq, v.Key)
		r.webhook.Sign(req.Header, key, webhooks.DeliveryTime(time.Now(), v.Attempt), body, forgery)
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
// answer, the run's secrets (k) scrubbed from them.
func fetch(rt http.RoundTripper, req *http.Request, br *bodyReader, k *keeper) (body, error) {
	path := k.scrub(req.URL.Path)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		err = explain(req.Context(), err)
		return body{}, &scrubbed{fmt.Sprintf("%s %s: %s", req.Method, path, k.scrub(err.Error())), err}
	}
	b, err := br.read(req.Context(), resp.Body)
	if err != nil {
		err = explain(req.Context(), err)
		return b, &scrubbed{fmt.Sprintf("%s %s: status %d, then reading the body: %s", req.Method, path, resp.StatusCode, k.scrub(err.Error())), err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return b, &StatusError{Method: req.Method, Path: path, Status: resp.StatusCode, Body: snippet(k.scrubPrefix(b.kept, 200))}
	}
	return b, nil
}

// scrubbed is an error whose message had the run's secrets scrubbed; it
// unwraps to the error it describes.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }

func (e *scrubbed) Unwrap() error { return e.err }

// StatusError is a request the runner needed a 2xx for (a setup request,
// an operation's before read) that the target answered otherwise: the
// target is there, the request is wrong or refused.
type StatusError struct {
	Method, Path string
	Status       int
	// Body is the start of the answer's body.
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: status %d: %s", e.Method, e.Path, e.Status, e.Body)
}

// capture makes the op's before read and returns the captured variables.
func (w *worker) capture(v scenarios.Vars) (map[string]string, error) {
	r := w.r
	v.Attempt = 0
	w.pcg.Seed(r.tmplSeed, uint64(v.Seq))
	ctx, cancel := withTimeout(w.ctx, r.timeout, r.timeoutErr)
	defer cancel()
	target := r.target(v.Seq, 0)
	req, err := r.before.Build(ctx, r.targets[target], v)
	if err != nil {
		return nil, err
	}
	r.keep.authorize(req, target)
	b, err := fetch(r.rt, req, &w.body, r.keep)
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
