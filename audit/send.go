package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/canon"
	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/scenarios"
)

// maxAnswer is how much of an answer body is kept.
const maxAnswer = 64 << 10

// errBudget: the request cap (Config.MaxRequests) was reached.
var errBudget = errors.New("the request cap (--max-requests) was reached")

// newClient is the audit's HTTP client: faults applied from the request's
// context, redirects not followed (a 303 is an answer to judge).
func newClient(base http.RoundTripper) *http.Client {
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		base = t
	}
	return &http.Client{
		Transport:     &faults.Transport{Base: base},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// op is one logical operation of a probe: a fresh key and the body
// rendered once, sent as is by every request of the op.
type op struct {
	key  string
	seq  int
	body []byte // with the key in its body field, when the key goes there
}

// newOp draws a fresh key and renders the operation's body for it.
func (a *Auditor) newOp(ctx context.Context) (op, error) {
	o := op{key: a.newKey(), seq: int(a.seq.Add(1)) - 1}
	b, err := a.tmpl.Body(ctx, scenarios.Vars{Key: o.key, Seq: o.seq, Attempt: 1})
	if err != nil {
		return op{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if o.body, err = a.keyed(b, o.key); err != nil {
		return op{}, err
	}
	return o, nil
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
}

// exchange is a request sent and what came back.
type exchange struct {
	req     req
	method  string
	url     string // redacted
	key     string
	keySent bool
	headers map[string]string // sent, besides the key; credentials masked
	body    []byte            // sent
	status  int
	header  http.Header
	answer  []byte
	err     error
	// hidden is the answer a drop_ack hid from the client.
	hidden *exchange
	start  time.Time
	took   time.Duration
}

func (e *exchange) ok() bool       { return e.err == nil && e.status >= 200 && e.status < 300 }
func (e *exchange) is5xx() bool    { return e.err == nil && e.status >= 500 }
func (e *exchange) answered() bool { return e.err == nil && e.status != 0 }

// hung reports whether the request ran into the audit's request timeout:
// the API did not answer in time.
func (e *exchange) hung() bool {
	return e.err != nil && errors.Is(e.err, context.DeadlineExceeded) && !errors.Is(e.err, faults.ErrTimeout)
}

// inFlight reports whether the answer says the key is still in flight:
// 409, 425 Too Early or 429.
func (e *exchange) inFlight() bool {
	return e.err == nil && (e.status == http.StatusConflict || e.status == http.StatusTooEarly || e.status == http.StatusTooManyRequests)
}

// what is the answer in a few words: "201", "409", "no answer (timeout)".
func (e *exchange) what() string {
	switch {
	case e == nil:
		return "nothing"
	case e.err != nil:
		return "no answer (" + shortErr(e.err) + ")"
	}
	return strconv.Itoa(e.status)
}

func shortErr(err error) string {
	switch {
	case errors.Is(err, errBudget):
		return "request cap reached"
	case errors.Is(err, faults.ErrDroppedAck):
		return "answer dropped"
	case errors.Is(err, faults.ErrTimeout):
		return "client gave up"
	case errors.Is(err, faults.ErrReset):
		return "reset before sending"
	case errors.Is(err, context.DeadlineExceeded):
		return "request timeout"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// send sends r and returns the exchange; a transport failure is in its
// err, never returned.
func (a *Auditor) send(ctx context.Context, r req) *exchange {
	ex, hr, err := a.build(ctx, r)
	if err != nil {
		ex.err = err
		return ex
	}
	return a.do(ctx, ex, hr)
}

// build makes r's request, with ctx as its context (a timeout is added by
// do).
func (a *Auditor) build(ctx context.Context, r req) (*exchange, *http.Request, error) {
	ex := &exchange{req: r}
	v := scenarios.Vars{Key: r.op.key, Seq: r.op.seq, Attempt: 1}
	body := r.op.body
	if r.body != nil {
		body = r.body
	}
	base := a.targets[r.target%len(a.targets)]
	hr, err := a.tmpl.BuildWithBody(ctx, base, v, body)
	if err != nil {
		return ex, nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if r.path != "" {
		u, err := scenarios.Join(base, r.path)
		if err != nil {
			return ex, nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		if hr.URL, err = url.Parse(u); err != nil {
			return ex, nil, fmt.Errorf("%w: %w", ErrConfig, err)
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
				return ex, nil, fmt.Errorf("%w: %w", ErrConfig, err)
			}
			hr.Header.Set(name, val)
			a.secrets.Add(val)
		}
	}
	for name, val := range r.headers {
		hr.Header.Set(name, val)
	}
	ex.key = r.op.key
	if r.key != nil {
		ex.key = *r.key
	}
	if a.keyHdr != "" && !r.noKey {
		hr.Header.Set(a.keyHdr, ex.key)
		ex.keySent = true
	}
	if a.keyField != "" && !r.noKey {
		ex.keySent = true
	}
	ex.method = hr.Method
	ex.body = body
	ex.headers = map[string]string{}
	for name, vals := range hr.Header {
		if a.keyHdr != "" && strings.EqualFold(name, a.keyHdr) {
			continue
		}
		val := strings.Join(vals, ", ")
		if redact.SecretHeader(name) {
			a.secrets.Add(vals...)
			val = redact.Mask
		}
		ex.headers[name] = val
	}
	ex.url = redactedURL(hr.URL)
	return ex, hr, nil
}

// redactedURL keeps the audit's own query parameter and the idempotency
// key visible and masks every other query value and the password.
func redactedURL(u *url.URL) string {
	return redact.Options{Keep: []string{"idemcheck", "idempotency_key", "key"}}.URL(u)
}

// do sends a built request within the request timeout, reading at most
// maxAnswer bytes of the answer.
func (a *Auditor) do(ctx context.Context, ex *exchange, hr *http.Request) *exchange {
	if a.sent.Add(1) > int64(a.maxRequests) {
		a.sent.Add(-1)
		ex.err = errBudget
		return ex
	}
	ctx, cancel := context.WithTimeout(ctx, a.reqTimeout)
	defer cancel()
	var hidden faults.Answers
	ctx = faults.WithAnswers(ctx, &hidden)
	if ex.req.fault != nil {
		ctx = faults.WithFault(ctx, ex.req.fault)
	}
	ex.start = time.Now()
	resp, err := a.client.Do(hr.WithContext(ctx))
	if err == nil {
		ex.status = resp.StatusCode
		ex.header = resp.Header
		ex.answer, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			ex.status, ex.header = 0, nil
		}
	}
	ex.err = err
	ex.took = time.Since(ex.start)
	for _, h := range hidden.Take() {
		if h.Hidden && h.Err == nil && h.Status != 0 {
			hx := &exchange{req: ex.req, method: ex.method, url: ex.url, key: ex.key, keySent: ex.keySent,
				headers: ex.headers, body: ex.body, status: h.Status, header: http.Header{}}
			if h.Body != nil {
				hx.answer = h.Body.Kept()
			}
			ex.hidden = hx
		}
	}
	return ex
}

// together sends every request of rs at once: each is built first, then
// all are released by one barrier.
func (a *Auditor) together(ctx context.Context, rs []req) []*exchange {
	out := make([]*exchange, len(rs))
	built := make([]*http.Request, len(rs))
	for i, r := range rs {
		ex, hr, err := a.build(ctx, r)
		if err != nil {
			ex.err = err
		}
		out[i], built[i] = ex, hr
	}
	barrier := make(chan struct{})
	var wg sync.WaitGroup
	for i := range rs {
		if built[i] == nil {
			continue
		}
		wg.Go(func() {
			<-barrier
			a.do(ctx, out[i], built[i])
		})
	}
	close(barrier)
	wg.Wait()
	return out
}

// settle sends r again while its answer says the key is in flight, with a
// growing pause from first (at most maxPause), until another answer, a
// transport failure, maxTries sends or a.lease after since. It returns
// every exchange, the last one last; none when maxTries is 0.
func (a *Auditor) settle(ctx context.Context, r req, since time.Time, first time.Duration, maxTries int) []*exchange {
	var out []*exchange
	pause := max(first, time.Millisecond)
	for range maxTries {
		ex := a.send(ctx, r)
		out = append(out, ex)
		if !ex.inFlight() || time.Since(since) > a.lease || ctx.Err() != nil {
			break
		}
		if !sleep(ctx, pause) {
			break
		}
		pause = min(pause*3/2, maxPause)
	}
	return out
}

// maxPause is the longest pause between two sends of settle.
const maxPause = time.Second

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

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

// identity names the resource a 2xx answer is about: its top-level "id",
// else its Location, else its body without the volatile fields. Two
// answers for one key with different identities are two executions.
func (a *Auditor) identity(e *exchange) string {
	if e == nil {
		return ""
	}
	if ms, ok := members(e.answer); ok {
		for _, m := range ms {
			if m.name == "id" {
				return "id " + string(m.value)
			}
		}
	}
	if e.header != nil {
		if loc := e.header.Get("Location"); loc != "" {
			return "Location " + loc
		}
	}
	return fmt.Sprintf("body %016x", canon.Fingerprint(e.answer, a.volatile))
}

// replayOf reports whether e replays first: the same body (volatile
// fields, member order and spacing aside), or the same resource with the
// replay marker. An answer about the same resource with another body (a
// counter's new value, say) is not one.
func (a *Auditor) replayOf(e, first *exchange) bool {
	if a.sameBody(e, first) {
		return true
	}
	return a.identity(e) == a.identity(first) && e.header != nil && strings.EqualFold(e.header.Get("Idempotent-Replayed"), "true")
}

// sameBody reports whether two answers have the same body, volatile
// fields, member order and spacing aside.
func (a *Auditor) sameBody(x, y *exchange) bool {
	return canon.Fingerprint(x.answer, a.volatile) == canon.Fingerprint(y.answer, a.volatile)
}

// effects reads the oracle's count for keys, after the quiet period. It
// returns nil and no error without an oracle.
func (a *Auditor) effects(ctx context.Context, keys ...string) (map[string]int, error) {
	if a.oracle == nil || len(keys) == 0 {
		return nil, nil
	}
	if !sleep(ctx, a.quiet) {
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, a.reqTimeout)
	defer cancel()
	r, err := a.oracle.Observe(ctx, historyOf(slices.Compact(slices.Clone(keys))))
	if err != nil {
		return nil, err
	}
	out := maps.Clone(r.Effects)
	if out == nil {
		out = map[string]int{}
	}
	return out, nil
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
