package audit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/clip"
	"github.com/idemcheck/idemcheck/internal/pause"
	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/webhooks"
)

// errBudget: the request cap (Config.MaxRequests) was reached.
var errBudget = errors.New("the request cap (--max-requests) was reached")

// op is one logical operation of a probe: an op of the audit's history,
// a key and the body rendered once, sent as is by every request of the op.
type op struct {
	id   int // the history's op id
	key  string
	seq  int
	body []byte // with the key in its body field, when the key goes there
}

// newOp draws a fresh key, renders the operation's body for it and
// records the op, sent by check.
func (a *Auditor) newOp(ctx context.Context, check string) (op, error) {
	return a.newOpKey(ctx, check, a.newKey())
}

// newOpKey is newOp with the key given. The body renders as the op's first
// attempt's (attempt 0 for the calibration).
func (a *Auditor) newOpKey(ctx context.Context, check, key string) (op, error) {
	o := op{key: key, seq: int(a.seq.Add(1)) - 1}
	attempt := 1
	if check == history.CheckCalibration {
		attempt = 0
	}
	b, err := a.tmpl.Body(ctx, scenarios.Vars{Key: o.key, Seq: o.seq, Attempt: attempt})
	if err != nil {
		return op{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if o.body, err = a.keyed(b, o.key); err != nil {
		return op{}, err
	}
	o.id = a.record(check, o.key)
	return o, nil
}

// record adds an op of check under key to the history; it returns its id.
func (a *Auditor) record(check, key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	id := len(a.h.Ops)
	a.h.Ops = append(a.h.Ops, history.Op{ID: id, Key: key, Check: check})
	a.n = append(a.n, 0)
	return id
}

// keyed puts key in body when the key goes in a body field.
func (a *Auditor) keyed(body []byte, key string) ([]byte, error) {
	if a.keyField == "" {
		return body, nil
	}
	b, err := setField(body, a.keyField, key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return b, nil
}

// req is one request of a probe.
type req struct {
	label string
	op    op
	// key overrides op.key in the header (C02's shapes); noKey sends none.
	key   *string
	noKey bool
	// body overrides op.body (variants, other payloads); the key field is
	// not set again.
	body []byte
	// headers are set over the operation's (Cache-Control).
	headers map[string]string
	// as sends the second principal's headers.
	as bool
	// method and path override the operation's.
	method, path string
	fault        faults.Fault
	target       int
	// calibration renders the templates with attempt 0, as a run's setup:
	// a header that varies by attempt applies to the probes only.
	calibration bool
	// forgery makes a webhook delivery wrong on purpose (W01).
	forgery webhooks.Forgery
}

// built is a request ready to send, with what its evidence shows.
type built struct {
	r    req
	n    int // the attempt's number within its op
	http *http.Request
	sent history.Request
	err  error // the request could not be built: nothing is sent
	// mints: the request carries no key so that the API mints one
	// (Config.KeyFromAnswer); its answer gives the op its key.
	mints bool
	// read, when set, is handed the answer read (runner.Client.SendReading):
	// a link's, whose value the operation's path takes.
	read func(status int, h http.Header, body []byte, whole bool)
}

// build makes r's request, with ctx as its context (the client bounds it
// with the request timeout). It numbers the attempt within its op: copies
// built together are numbered in the order they were built.
func (a *Auditor) build(ctx context.Context, r req) *built {
	b := &built{r: r, n: a.reserve(r.op.id)}
	key, noKey := r.op.key, r.noKey
	if r.key != nil {
		key = *r.key
	} else if a.minting() && !noKey {
		// The API mints the key: the op's first request carries none,
		// the later ones the key its answer gave.
		if m, ok := a.minted(r.op.key); ok {
			key = m
		} else {
			noKey, b.mints = true, true
		}
	}
	v := scenarios.Vars{Key: key, Seq: r.op.seq, Attempt: b.n}
	if r.calibration {
		v.Attempt = 0
	}
	body := r.op.body
	if r.body != nil {
		body = r.body
	}
	if noKey && a.keyField != "" {
		// a request without a key has no key field: the op's body holds
		// its key there
		stripped, err := withoutField(body, a.keyField)
		if err != nil {
			b.err = fmt.Errorf("%w: %w", ErrConfig, err)
			return b
		}
		body = stripped
	}
	target := r.target % len(a.targets)
	base := a.targets[target]
	hr, err := a.tmpl.BuildWithBody(ctx, base, v, body)
	if err != nil {
		b.err = fmt.Errorf("%w: %w", ErrConfig, err)
		return b
	}
	if r.path != "" {
		u, err := scenarios.Join(base, r.path)
		if err == nil {
			hr.URL, err = url.Parse(u)
		}
		if err != nil {
			b.err = fmt.Errorf("%w: %w", ErrConfig, err)
			return b
		}
	}
	if r.method != "" && r.method != hr.Method {
		hr.Method = r.method
		if r.method == http.MethodGet || r.method == http.MethodHead {
			hr.Body, hr.GetBody, hr.ContentLength = nil, nil, 0
			hr.Header.Del("Content-Type")
			body = nil
		}
	}
	if r.as {
		for name, t := range a.as {
			val, err := t.Render(ctx, v)
			if err != nil {
				b.err = fmt.Errorf("%w: %w", ErrConfig, err)
				return b
			}
			hr.Header.Set(name, val)
			a.client.Secret(val)
		}
	}
	for name, val := range r.headers {
		hr.Header.Set(name, val)
	}
	if a.keyHdr != "" && !noKey {
		hr.Header.Set(a.keyHdr, key)
	}
	if a.hook != nil {
		// a delivery of the op's event, signed as its provider signs
		// one: each of the op's attempts a second after the one before
		a.hook.Sign(hr.Header, key, webhooks.DeliveryTime(time.Now(), v.Attempt), body, r.forgery)
	}
	if noKey {
		key = ""
	}
	b.sent = a.evidence(hr, a.keyHdr, key, body)
	b.sent.NoKey, b.sent.As = noKey, r.as
	b.http = hr
	return b
}

// evidence is what hr, with key and body, sends, as an attempt keeps it:
// its URL redacted, its body's start and its headers, secrets masked,
// keyHdr aside (the key is Key).
func (a *Auditor) evidence(hr *http.Request, keyHdr, key string, body []byte) history.Request {
	sent := history.Request{Method: hr.Method, URL: redactedURL(hr.URL), Key: key, Body: a.snippet(body)}
	for name, vals := range hr.Header {
		if keyHdr != "" && strings.EqualFold(name, keyHdr) {
			continue
		}
		val := strings.Join(vals, ", ")
		if redact.SecretHeader(name) {
			a.client.Secret(vals...)
			val = redact.Mask
		}
		if sent.Headers == nil {
			sent.Headers = map[string]string{}
		}
		sent.Headers[name] = a.client.Scrub(val)
	}
	return sent
}

// maxRequestBody bounds the request body an attempt keeps as evidence.
const maxRequestBody = 300

// snippet is the start of a request body, secrets scrubbed, for evidence.
func (a *Auditor) snippet(b []byte) string {
	return clip.Words(strings.TrimSpace(a.client.Scrub(strings.ToValidUTF8(string(b), "�"))), maxRequestBody)
}

// redactedURL keeps the audit's own query parameter and the idempotency
// key visible and masks every other query value and the password.
func redactedURL(u *url.URL) string {
	return redact.Options{Keep: []string{"idemcheck", "idempotency_key", "key"}}.URL(u)
}

// send sends r and records its attempt; a transport failure is in the
// attempt, never returned.
func (a *Auditor) send(ctx context.Context, r req) *history.Attempt {
	return a.sendBuilt(ctx, a.build(ctx, r))
}

// sendBuilt sends b through the runner's client, within the request cap,
// and records the attempt as the next of its op.
func (a *Auditor) sendBuilt(ctx context.Context, b *built) *history.Attempt {
	var at history.Attempt
	switch {
	case b.err != nil:
		runner.NotSent(ctx)
		now := a.client.Since()
		at = history.Attempt{Outcome: history.Fail, Intended: now, Start: now, End: now, Err: b.err.Error()}
	case a.sent.Add(1) > int64(a.maxRequests):
		a.sent.Add(-1)
		runner.NotSent(ctx)
		now := a.client.Since()
		at = history.Attempt{Outcome: history.Fail, Intended: now, Start: now, End: now, Err: errBudget.Error(), Target: b.r.target % len(a.targets)}
		if b.r.fault != nil {
			at.Fault = b.r.fault.Kind()
		}
	case b.read != nil:
		at = a.client.SendReading(ctx, b.http, b.r.target%len(a.targets), b.read)
	default:
		at = a.client.Send(ctx, b.http, b.r.target%len(a.targets), b.r.fault)
	}
	at.Label = b.r.label
	sent := b.sent
	at.Request = &sent
	at.Op, at.N = b.r.op.id, b.n
	if a.minting() {
		a.learn(b.r.op, &at, b.mints)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.h.Attempts = append(a.h.Attempts, at)
	return &at
}

// reserve numbers the next attempt of op id.
func (a *Auditor) reserve(id int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n[id]++
	return a.n[id]
}

// together sends every request of rs at once: each is built first, then
// all are released by one barrier and, over the runner's HTTP/1.1 client,
// held to their last byte until every one is written but it
// (runner.Together), so that they reach the server within microseconds.
// The attempts come back in rs's order; when every request was held, each
// records the spread of the last bytes (Attempt.Synced).
func (a *Auditor) together(ctx context.Context, rs []req) []*history.Attempt {
	out := make([]*history.Attempt, len(rs))
	bs := make([]*built, len(rs))
	for i, r := range rs {
		bs[i] = a.build(ctx, r)
	}
	at := a.client.Together(len(rs))
	gctx := at.With(ctx)
	barrier := make(chan struct{})
	var wg sync.WaitGroup
	for i := range rs {
		wg.Go(func() {
			<-barrier
			out[i] = a.sendBuilt(gctx, bs[i])
		})
	}
	close(barrier)
	held, spread := at.Release(ctx)
	wg.Wait()
	if held == len(rs) && len(rs) > 1 {
		a.synced(out, max(spread, time.Nanosecond))
	}
	return out
}

// synced records on the attempts es, and on their copies in the history,
// that they were held and their last bytes written within spread.
func (a *Auditor) synced(es []*history.Attempt, spread time.Duration) {
	type id struct{ op, n int }
	mine := map[id]bool{}
	for _, e := range es {
		e.Synced = spread
		mine[id{e.Op, e.N}] = true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := len(a.h.Attempts) - 1; i >= 0 && len(mine) > 0; i-- {
		e := &a.h.Attempts[i]
		if mine[id{e.Op, e.N}] {
			e.Synced = spread
			delete(mine, id{e.Op, e.N})
		}
	}
}

// settle sends r again while its answer says the key is in flight, with a
// growing pause from first (at most maxPause), until another answer, a
// transport failure, maxTries sends or a.lease after since. It returns
// every attempt, the last one last; none when maxTries is 0.
func (a *Auditor) settle(ctx context.Context, r req, since time.Time, first time.Duration, maxTries int) []*history.Attempt {
	var out []*history.Attempt
	gap := max(first, time.Millisecond)
	for range maxTries {
		at := a.send(ctx, r)
		out = append(out, at)
		if !busy(at) || time.Since(since) > a.lease || ctx.Err() != nil {
			break
		}
		if !pause.For(ctx, gap) {
			break
		}
		gap = min(gap*3/2, maxPause)
	}
	return out
}

// maxPause is the longest pause between two sends of settle.
const maxPause = time.Second

// settleTries is how many sends settle may make within the lease, with
// pauses growing from first to maxPause.
func (a *Auditor) settleTries(first time.Duration) int {
	n, total, pause := 1, time.Duration(0), max(first, time.Millisecond)
	for total <= a.lease && n < 64 {
		total += pause
		pause = min(pause*3/2, maxPause)
		n++
	}
	return n
}

// busy reports whether the answer says the key is still in flight: 409,
// 425 Too Early or 429.
func busy(at *history.Attempt) bool {
	return at.Outcome == history.OK && (at.Status == http.StatusConflict || at.Status == http.StatusTooEarly || at.Status == http.StatusTooManyRequests)
}

// hidden reports whether a drop_ack hid an answer of at from the client.
func hidden(at *history.Attempt) bool {
	for _, x := range at.Answers {
		if x.Hidden && x.Outcome == history.OK && x.Status != 0 {
			return true
		}
	}
	return false
}

// took is how long an attempt took.
func took(at *history.Attempt) time.Duration { return at.End - at.Start }

// effects reads the oracle's count for keys after the quiet period, and
// records it in check's reading (a count of 0 included, so that the
// judge tells a key read from one that was not). Without an oracle it
// reads nothing; a failed reading is recorded as the reading's error.
func (a *Auditor) effects(ctx context.Context, check string, keys ...string) {
	if a.oracle == nil || len(keys) == 0 {
		return
	}
	if !pause.For(ctx, a.quiet) {
		rd := a.reading(check)
		rd.Err = cmpOr(rd.Err, "interrupted before the effects were read")
		return
	}
	a.read(ctx, check, keys...)
}

// read reads the oracle's count for keys at once, into the reading named
// check (see effects).
func (a *Auditor) read(ctx context.Context, check string, keys ...string) {
	if a.oracle == nil || len(keys) == 0 {
		return
	}
	rd := a.reading(check)
	ctx, cancel := context.WithTimeout(ctx, a.reqTimeout)
	defer cancel()
	keys = slices.Compact(a.serverKeys(keys))
	r, err := a.oracle.Observe(ctx, historyOf(keys))
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		rd.Err = cmpOr(rd.Err, a.client.Scrub(err.Error()))
		return
	}
	for _, k := range keys {
		rd.Effects[k] = r.Effects[k]
	}
}

// reading is check's effects reading, made on first use; the history
// gets every reading when the audit ends (readings).
func (a *Auditor) reading(check string) *history.Reading {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.readings[check]; ok {
		return r
	}
	r := &history.Reading{Oracle: check, Kind: history.KindEffects, Effects: map[string]int{}}
	a.readings[check] = r
	a.readingOrder = append(a.readingOrder, check)
	return r
}

// readings are the effects readings taken, in the order they were first
// taken.
func (a *Auditor) readingsTaken() []history.Reading {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]history.Reading, 0, len(a.readingOrder))
	for _, c := range a.readingOrder {
		out = append(out, *a.readings[c])
	}
	return out
}

// historyOf is a history naming keys, for an oracle to read.
func historyOf(keys []string) *history.History {
	h := &history.History{}
	for i, k := range keys {
		h.Ops = append(h.Ops, history.Op{ID: i, Key: k})
	}
	return h
}

// siblingPath is another path beside p (same directory, another last
// segment), its query dropped.
func siblingPath(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	dir := path.Dir(strings.TrimSuffix(p, "/"))
	if dir == "." {
		dir = "/"
	}
	return path.Join(dir, "idemcheck-sibling")
}

// withQuery is p with the audit's own query parameter added.
func withQuery(p string) string {
	if strings.Contains(p, "?") {
		return p + "&idemcheck=1"
	}
	return p + "?idemcheck=1"
}

// label names a request of a probe (checks.Label).
func label(round int, role, detail string) string { return checks.Label(round, role, detail) }
