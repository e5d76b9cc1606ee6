package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/theory/jsonpath"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/canon"
	"github.com/idemcheck/idemcheck/internal/h1"
	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Client is the one way idemcheck sends a request to the API under test
// and records what came of it as a history.Attempt: the load's workers
// (Run) and the audit's probes (Send) go through it, so that every
// exchange is bounded, faulted, scrubbed and recorded alike, and none is
// ever sent again behind the history's back (see NoHiddenResend).
//
//	request ──> authorize (a target's userinfo) ──> faults.Transport ──> h1 | net/http
//	                                                      │
//	attempt <── outcome, status, fingerprint, fields, headers, evidence, other answers
//
// A Client is safe for concurrent use.
type Client struct {
	rt         http.RoundTripper // faults.Transport over the base transport
	limits     bool              // the base transport applies an h1.Limit
	keep       *keeper           // credentials and secrets
	timeout    time.Duration
	timeoutErr error // the cause of a request's context when timeout expires
	maxBody    int
	start      time.Time // monotonic origin of every offset
	fields     []namedPath
	volatile   []*jsonpath.Path
	headers    []string // the answer headers kept (Attempt.Headers); nil keeps none
	bodies     bool     // keep every answer's body as evidence, not only errors'
	redactPath bool
	closeIdle  func()    // closes the idle connections of a transport the client made
	sessions   sync.Pool // *session, for Send
}

// session is what one goroutine reuses from one send to the next: the
// bounded body reader, the canonical JSON buffer and the request limit of
// the runner's HTTP/1.1 client, and what its sends came to.
type session struct {
	limit *h1.Limit // nil: a context timer bounds each request
	body  bodyReader
	canon canon.Buffer

	// retryAfter is the Retry-After of the last answer sent, 0 for none.
	retryAfter time.Duration

	sent         int   // attempts handed to the transport
	answered     int   // attempts that got an HTTP answer (a drop_ack's hidden one too)
	failed       int   // attempts without an answer the faults did not cause
	transportErr error // the first transport error not injected by a fault

	// read, when set, is handed the answer read (SendReading).
	read func(status int, h http.Header, body []byte, whole bool)
}

// ClientOptions configure NewClient.
type ClientOptions struct {
	// Targets are the base URLs requests go to: their userinfo is sent as
	// Basic authorization, and their passwords and query values are
	// secrets. Send's target indexes them.
	Targets []*url.URL
	// Requests are the requests the client will send, as templates: the
	// constant values of their credential headers are secrets, and the
	// rendered values of templated ones are learned as they are sent.
	Requests []scenarios.Request
	// Transport sends the requests; nil means the runner's HTTP/1.1
	// client over NewTransport(Conns), closed by Close.
	Transport http.RoundTripper
	Conns     int
	// RequestTimeout bounds each request, from the send to the end of the
	// answer's body; 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxBody is how much of each answer is kept; 0 means DefaultMaxBody.
	MaxBody int
	// Fields are JSONPaths of answer fields kept by name (Attempt.Fields);
	// Volatile those left out of the answer's fingerprint.
	Fields   map[string]string
	Volatile []string
	// AnswerHeaders keeps history.AnswerHeaders of every answer.
	AnswerHeaders bool
	// Bodies keeps the start of every answer's body as evidence
	// (Attempt.Body), not only of 4xx and 5xx answers.
	Bodies bool
	// RedactPath makes the targets' path segments secrets.
	RedactPath bool
	// Secrets is the run's registry, where the client registers what it
	// sends and with which it scrubs what it records; nil: its own.
	Secrets *redact.Secrets
}

// NewClient returns a client for o.
func NewClient(o ClientOptions) (*Client, error) {
	c, err := newClient(o)
	if err != nil {
		return nil, err
	}
	if o.Transport == nil {
		tr := h1.New(NewTransport(max(o.Conns, 1)), max(o.Conns, 1))
		c.closeIdle = tr.CloseIdleConnections
		o.Transport = tr
	}
	c.connect(o.Transport)
	c.start = time.Now()
	return c, nil
}

// newClient compiles o without a transport (connect sets it).
func newClient(o ClientOptions) (*Client, error) {
	if len(o.Targets) == 0 {
		return nil, errors.New("no target URL")
	}
	c := &Client{keep: newKeeper(o.Secrets, o.Targets, o.Requests, o.RedactPath), bodies: o.Bodies, redactPath: o.RedactPath}
	var err error
	if c.timeout, err = requestTimeout(Options{RequestTimeout: o.RequestTimeout}); err != nil {
		return nil, err
	}
	c.timeoutErr = &timeoutError{c.timeout}
	if c.maxBody, err = maxBody(Options{MaxBody: o.MaxBody}); err != nil {
		return nil, err
	}
	if c.fields, err = compilePaths("response.fields", o.Fields); err != nil {
		return nil, err
	}
	for i, s := range o.Volatile {
		p, err := jsonpath.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("response.volatile[%d]: %w", i, err)
		}
		c.volatile = append(c.volatile, p)
	}
	if o.AnswerHeaders {
		c.headers = history.AnswerHeaders
	}
	c.sessions.New = func() any { return &session{body: newBodyReader(c.maxBody)} }
	return c, nil
}

// connect makes the client send through base, faults applied.
func (c *Client) connect(base http.RoundTripper) {
	_, c.limits = base.(*h1.Transport)
	c.rt = &faults.Transport{Base: base, MaxBody: c.maxBody}
}

// Close closes the idle connections of the transport NewClient made.
func (c *Client) Close() {
	if c.closeIdle != nil {
		c.closeIdle()
	}
}

// Env wraps getenv for the templates of the requests the client sends:
// the values it gives to secret-looking names (API_TOKEN), and the
// passwords and query values of the URLs it gives, become secrets the
// client scrubs from what it records.
func (c *Client) Env(getenv func(string) string) func(string) string { return c.keep.env(getenv) }

// Secret makes values secrets the client scrubs from what it records (a
// second principal's credentials, say).
func (c *Client) Secret(values ...string) {
	for _, v := range values {
		c.keep.secrets.Add(v)
	}
}

// Scrub is s without the client's secrets.
func (c *Client) Scrub(s string) string { return c.keep.scrub(s) }

// Since is the offset of now from the client's start: the clock of every
// attempt it records.
func (c *Client) Since() time.Duration { return time.Since(c.start) }

// Send sends req to target (an index into ClientOptions.Targets, whose
// credentials it carries) with fault f injected (nil for none), and
// returns the attempt: Target, Fault, Copies, Start (and Intended, the
// same), End, Outcome, Status, Fingerprint, Fields, Headers, Size, Body,
// Err, Expired, the other answers of a duplicate or a drop_ack, and Bit.
// The
// caller sets Op, N, Label and Request. Send is bounded by the request
// timeout, and by ctx.
func (c *Client) Send(ctx context.Context, req *http.Request, target int, f faults.Fault) history.Attempt {
	a := history.Attempt{Target: target}
	if f != nil {
		// A request with a fault is not held by a Together: the fault
		// may never send it, or send it late.
		ctx = h1.Unheld(ctx)
		a.Fault = f.Kind()
		ctx = faults.WithFault(ctx, f)
		if d, ok := f.(faults.Duplicate); ok {
			a.Copies = max(d.Copies, 2)
		}
	}
	if c.headers != nil {
		ctx = h1.WithHeaders(ctx, c.headers...)
	}
	s := c.sessions.Get().(*session)
	defer c.sessions.Put(s)
	c.send(s, &a, req.WithContext(ctx))
	a.Intended = a.Start
	return a
}

// SendReading is Send without a fault that also hands read the answer's
// status, headers and body (unscrubbed), when one was read, before the
// body's buffer is reused: for a value taken from the answer (an OpenAPI
// link's), which the attempt keeps only as bounded, scrubbed evidence.
// whole is false when the body was longer than ClientOptions.MaxBody:
// body is then its start.
func (c *Client) SendReading(ctx context.Context, req *http.Request, target int, read func(status int, h http.Header, body []byte, whole bool)) history.Attempt {
	// every answer header is kept (no h1.WithHeaders): read may take its
	// value from any
	a := history.Attempt{Target: target}
	s := c.sessions.Get().(*session)
	defer c.sessions.Put(s)
	s.read = read
	defer func() { s.read = nil }()
	c.send(s, &a, req.WithContext(ctx))
	a.Intended = a.Start
	return a
}

// send sends req and records what came of it in a: times, outcome, status,
// fingerprint, fields, headers, size, evidence, the other answers the
// attempt received (the copies of a duplicate, the answer a drop_ack hid),
// and whether its fault bit.
// It sets s.retryAfter from the answer. The request timeout starts here,
// at the send, and bounds the answer's body too.
func (c *Client) send(s *session, a *history.Attempt, req *http.Request) {
	c.keep.authorize(req, a.Target)
	NoHiddenResend(req)
	s.sent++
	s.retryAfter = 0
	ctx := req.Context()
	now := time.Now()
	if s.limit != nil {
		// The transport bounds the request with its connection's
		// deadline (see Run): cheaper than a context's timer.
		s.limit.Deadline = now.Add(c.timeout)
	}
	if s.limit == nil || (a.Fault != "" && !history.IsReplay(a.Fault)) {
		// A fault may wait before it sends (delay) or read answers ahead
		// (drop_ack, duplicate) where no connection's deadline reaches: a
		// context's timer bounds all of it.
		var cancel context.CancelFunc
		ctx, cancel = withTimeoutAt(ctx, now, c.timeout, c.timeoutErr)
		defer cancel()
		req = req.WithContext(ctx)
	}
	// An injected fault says what it saw: the other answers of a
	// duplicate or a drop_ack, and whether it bit (Attempt.Bit).
	var seen *faults.Answers
	if a.Fault != "" && !history.IsReplay(a.Fault) {
		seen = &faults.Answers{}
		ctx = faults.WithAnswers(ctx, seen)
		req = req.WithContext(ctx)
	}
	a.Start = now.Sub(c.start)
	resp, err := c.rt.RoundTrip(req)
	if seen != nil {
		defer func() {
			a.Answers = c.answers(s, ctx, seen.Take())
			a.Bit = seen.Bit()
			if t := seen.Released(); !t.IsZero() {
				a.Sent = t.Sub(c.start)
			}
		}()
	}
	if err != nil {
		a.End = c.since()
		err = explain(ctx, err)
		a.Expired = expired(err)
		a.Err = c.keep.scrub(err.Error())
		a.Outcome = history.Info
		if !faults.Sent(err) {
			a.Outcome = history.Fail
		}
		switch {
		case errors.Is(err, faults.ErrDroppedAck):
			s.answered++ // the target answered; the fault hid it
		case errors.Is(err, faults.ErrReset), errors.Is(err, faults.ErrTimeout):
			// injected: says nothing of the target
		default:
			s.failed++
			if s.transportErr == nil {
				s.transportErr = &scrubbed{a.Err, err}
			}
		}
		return
	}
	s.answered++
	b, err := c.readAnswer(s, ctx, resp)
	a.End = c.since()
	if c.headers != nil {
		a.Headers = c.answerHeaders(resp.Header)
	}
	if err != nil {
		err = explain(ctx, err)
		a.Outcome = history.Info
		a.Expired = expired(err)
		a.Err = c.keep.scrub(fmt.Sprintf("status %d, then reading the body: %v", resp.StatusCode, err))
		return
	}
	a.Outcome = history.OK
	a.Status = resp.StatusCode
	if s.read != nil {
		s.read(resp.StatusCode, resp.Header, b.kept, !b.truncated())
	}
	s.retryAfter = retryAfter(resp.Header, time.Now())
	if b.truncated() {
		a.Size = b.size
	}
	if a.Status >= 400 || c.bodies {
		a.Body = evidence(c.keep.scrubPrefix(b.kept, maxEvidence))
	}
	var fp uint64
	fp, a.Fields = c.judge(s, b)
	a.Fields = c.keep.scrubFields(a.Fields)
	a.Fingerprint = history.Fingerprint(fp)
}

// expired reports whether err is the request timeout's.
func expired(err error) bool {
	var te *timeoutError
	return errors.As(err, &te)
}

// answerHeaders are the kept headers of an answer, scrubbed and bounded;
// nil when it has none of them.
func (c *Client) answerHeaders(h http.Header) map[string]string {
	var out map[string]string
	for _, name := range c.headers {
		v := strings.Join(h.Values(name), ", ")
		if v == "" {
			continue
		}
		if out == nil {
			out = make(map[string]string, 2)
		}
		out[name] = evidenceN([]byte(c.keep.scrub(v)), history.MaxHeaderValue)
	}
	return out
}

// since is the offset of now from the start.
func (c *Client) since() time.Duration { return time.Since(c.start) }

// readAnswer reads resp's body with the session's bounded reader. A body a
// fault read ahead (a *faults.Body, cut to the same cap) knows the real
// size and hash of what the fault dropped.
func (c *Client) readAnswer(s *session, ctx context.Context, resp *http.Response) (body, error) {
	fb, _ := resp.Body.(*faults.Body)
	b, err := s.body.read(ctx, resp.Body)
	if fb != nil && fb.Truncated() {
		b.size, b.raw = fb.Size(), fb.Hash()
	}
	return b, err
}

// judge returns the fingerprint of a whole answer body and the fields the
// client keeps. Over the cap the body is not a whole JSON document: it is
// fingerprinted as it is, every byte of it (see Options.MaxBody), and keeps
// no fields.
func (c *Client) judge(s *session, b body) (uint64, map[string]string) {
	if b.truncated() {
		return b.raw, nil
	}
	return c.inspect(s, b.kept)
}

// answers turns the other answers a fault received into the attempt's
// record, fingerprinted like its own answer.
func (c *Client) answers(s *session, ctx context.Context, l []faults.Answer) []history.Answer {
	if len(l) == 0 {
		return nil
	}
	out := make([]history.Answer, len(l))
	for i, fa := range l {
		ha := history.Answer{Copy: fa.Copy, Hidden: fa.Hidden, End: fa.End.Sub(c.start)}
		switch {
		case fa.Err != nil && fa.Status == 0:
			err := explain(ctx, fa.Err)
			ha.Outcome, ha.Err = history.Info, c.keep.scrub(err.Error())
			if !faults.Sent(err) {
				ha.Outcome = history.Fail
			}
		case fa.Err != nil:
			ha.Outcome = history.Info
			ha.Err = c.keep.scrub(fmt.Sprintf("status %d, then reading the body: %v", fa.Status, explain(ctx, fa.Err)))
		default:
			ha.Outcome, ha.Status = history.OK, fa.Status
			b := body{kept: fa.Body.Kept(), size: fa.Body.Size(), raw: fa.Body.Hash()}
			var fp uint64
			fp, ha.Fields = c.judge(s, b)
			ha.Fields = c.keep.scrubFields(ha.Fields)
			ha.Fingerprint = history.Fingerprint(fp)
		}
		out[i] = ha
	}
	return out
}

// inspect returns the fingerprint of body and the fields the client keeps.
func (c *Client) inspect(s *session, body []byte) (uint64, map[string]string) {
	if len(c.fields) == 0 {
		return s.canon.Fingerprint(body, c.volatile), nil
	}
	doc, ok := canon.Decode(body)
	if !ok {
		return s.canon.Fingerprint(body, nil), nil
	}
	fields := map[string]string{}
	for _, f := range c.fields {
		if v, ok := s.canon.Select(f.path, doc); ok {
			fields[f.name] = v
		}
	}
	if len(fields) == 0 {
		fields = nil
	}
	return s.canon.HashDoc(doc, c.volatile), fields
}

// maxEvidence is how many bytes of an error answer's body an attempt keeps
// as evidence (history.Attempt.Body).
const maxEvidence = 2 << 10

// evidence is the start of an error answer's body, as history.Attempt.Body
// keeps it: at most maxEvidence bytes, cut on a character boundary, with
// invalid UTF-8 replaced by U+FFFD, tabs and line breaks by spaces and other
// control characters by U+FFFD, so it prints safely on a terminal and in a
// report.
func evidence(b []byte) string { return evidenceN(b, maxEvidence) }

// evidenceN is evidence of at most maxEvidence bytes.
func evidenceN(b []byte, maxEvidence int) string {
	b = bytes.TrimSpace(b)
	var sb strings.Builder
	sb.Grow(min(len(b), maxEvidence))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size < utf8.UTFMax && !utf8.FullRune(b) && len(b) < utf8.UTFMax {
			break // a character cut off at the end of what was kept
		}
		b = b[size:]
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			r = ' '
		case unicode.IsControl(r):
			r = utf8.RuneError
		}
		if sb.Len()+utf8.RuneLen(r) > maxEvidence {
			break
		}
		sb.WriteRune(r) // RuneError for invalid UTF-8 too
	}
	return sb.String()
}

// NoHiddenResend keeps net/http from resending a request on its own. The
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
func NoHiddenResend(req *http.Request) {
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
