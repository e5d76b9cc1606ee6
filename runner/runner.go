package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/theory/jsonpath"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/canon"
	"github.com/idemcheck/idemcheck/internal/h1"
	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/webhooks"
)

// Options are what Run and Setup need besides the scenario.
type Options struct {
	// Target is the base URL every request path is joined to.
	Target *url.URL
	// Targets, when not empty, replace Target: several replicas of one
	// service behind what would be a load balancer. Each attempt (and
	// replay, and operation.before read) goes to a target drawn from
	// (Seed, op, attempt number), so the same seed sends the same attempt
	// to the same target and a retry may land on another replica. The
	// copies of a duplicate fault all go to their attempt's target, so
	// every answer recorded for an attempt comes from Attempt.Target.
	// Setup requests go to the first target. history.Meta.Target is the
	// first target, Meta.Targets all of them (when more than one), their
	// secrets redacted.
	Targets []*url.URL
	// RequestTimeout bounds every request Run and Setup make: attempts,
	// replays, operation.before reads and setup requests, from the send
	// to the end of the answer's body. 0 means DefaultRequestTimeout. An
	// attempt over it is recorded as outcome info (fail when it never
	// left the client) with the error "no answer within 30s (request
	// timeout)", and may be retried like any info attempt (retry.on); the
	// run goes on. A shorter timeout fault still applies first.
	RequestTimeout time.Duration
	// Seed drives every key, fault placement, backoff jitter and template
	// randInt/uuid: the same seed sends the same requests.
	Seed uint64
	// KeyNonce is mixed into every generated key, so a run's keys differ
	// from those of an earlier run with the same seed against the same
	// (stateful) target, which would rightly treat them as retries. Zero
	// leaves the keys a function of the seed alone.
	KeyNonce uint64
	// Transport sends the requests. Nil means the runner's HTTP/1.1
	// client (internal/h1: keep-alive, one write per request, never a
	// resend) over a tuned *http.Transport for what it does not handle
	// (https, proxies), closed when Run returns. Run wraps it in a
	// faults.Transport.
	Transport http.RoundTripper
	// Env is what templates' env function reads. Nil reads nothing.
	Env func(string) string
	// Secrets is the run's one registry: what the run sends that is
	// secret (the targets' credentials, every value Env gives templates,
	// credential headers) is registered in it, and scrubbed with it from
	// what the history keeps. Nil: a registry of the run's own.
	Secrets *redact.Secrets
	// Observer hears progress; nil hears nothing.
	Observer Observer
	// Halt, when closed, ends the load as the end of load.duration does:
	// no op is started after it, the ops under way finish with their
	// retries and replays (load.abort_on_fail closes it on a proven
	// failure). Nil never halts.
	Halt <-chan struct{}
	// Now returns the wall clock for history.Meta's Started and Ended; nil
	// means time.Now. Offsets inside the history use the monotonic clock.
	Now func() time.Time
	// MaxBody is how many bytes of each response body are kept, for its
	// fingerprint, the fields it keeps (response.fields) and the variables
	// it captures (operation.before.vars); 0 means DefaultMaxBody. The
	// rest of a longer body is still read to its end (or until the
	// request's context ends), counted and hashed, but not kept: memory
	// stays bounded by MaxBody per worker whatever the target sends.
	//
	// A body longer than MaxBody is not normalised, as it is not a whole
	// JSON document: its fingerprint is the hash of every byte of it as
	// it is (canon.FNV1a of the whole body, the fingerprint of any body
	// that is not JSON), computed as it streams by. So it is deterministic,
	// two such answers match only when they are byte for byte the same, and
	// volatile paths do not apply; it keeps no fields, and an
	// operation.before answer that long is an error.
	MaxBody int
	// RedactPath masks the path segments of the targets wherever the run
	// shows them (Meta.Target, errors), and scrubs them from what it keeps
	// of answers, for targets that carry a credential in their path (a
	// tenant token, a webhook secret). Without it, paths are shown: they
	// usually name the API, which a report needs.
	RedactPath bool
	// Shard, when set, makes this run one shard of a run made by several
	// processes (see history.Shard): it makes the shard's ops only, with its part
	// of the workers, the rate and the ops in flight, and its history
	// numbers them from 0 (Meta.Shard says which they are).
	Shard history.Shard
	// SpillAfter, when above 0, bounds the attempts the run keeps in
	// memory: once a worker holds SpillAfter/workers of them (at least
	// 256, or SpillAfter when it is smaller), its ops
	// and attempts go to a file in SpillDir ("": the system's temporary
	// directory), made then, and the history returned has them there
	// (History.Spill, which the caller removes). A run that never reaches
	// the bound keeps its history in memory, as with 0, and touches no
	// disk. When the file cannot be made or written (a full disk), the
	// load stops at once and Run returns the history's Meta alone with a
	// *SpillError: what was sent, and where what was written is kept.
	// Replays (operation.replay) are kept in memory until the end.
	// SpillAfter is taken as MaxSpillAfter when above it.
	SpillAfter int
	SpillDir   string
	// Sender, when set, sends every attempt of the load (and its replays)
	// instead of the HTTP client: a target that is not a request/response
	// HTTP API (see Sender). Keys, fault placement, retries, pacing and
	// the history are the runner's as ever; Transport and setup requests
	// are not used.
	Sender Sender
}

// MaxSpillAfter bounds Options.SpillAfter: the ops held in memory while
// others are spilled must stay within how far ahead of its place a
// history lets an op's id be (history.Decode's 16,777,216).
const MaxSpillAfter = 8_000_000

// DefaultRequestTimeout bounds each request when Options.RequestTimeout is
// 0.
const DefaultRequestTimeout = 30 * time.Second

// Observer hears a run's progress; cmd adapts it to progress bars. Its
// methods are called from many goroutines: implementations must be safe for
// concurrent use and cheap, as OpDone is called once per op on the hot path.
type Observer interface {
	// Start is called once before the load: totalOps is load.ops (0 when
	// the load is bound by its duration only) and duration is
	// load.duration (0 when bound by ops only).
	Start(totalOps int, duration time.Duration)
	// OpDone is called when op has made its last attempt, its replays
	// (operation.replay) included; once per op.
	OpDone(op int, state history.OpState)
}

// OpObserver is an Observer that also hears of every op as it starts,
// before its first attempt: its id, key and user (a live judge needs
// the key an op's attempts were sent under). It is called from the
// workers, concurrently.
type OpObserver interface {
	OpStarted(op history.Op)
}

// AttemptObserver is an Observer that also hears of every attempt as it
// is recorded (for live counters: faults, retries, 4xx/5xx, latency). It
// is called from the workers, concurrently.
type AttemptObserver interface {
	AttemptDone(a history.Attempt)
}

// ErrTarget is wrapped by the errors of Setup and Run when the target could
// not be reached or set up: a setup request failed, or not a single attempt
// of the load got an HTTP answer.
var ErrTarget = errors.New("target unreachable")

// Run drives the scenario's load against opts.Target (or opts.Targets) and
// returns the history of every op and attempt, sorted, with its Meta
// filled.
//
// It returns when every worker has exited; no goroutine outlives it. When
// ctx is cancelled it stops scheduling ops, cancels the attempts in flight
// (recorded as info: they may have been processed), makes no more retries,
// sets Meta.Interrupted and returns the partial history with ctx.Err().
// When not a single attempt got an HTTP answer and some failed for a reason
// no fault injected, it returns the history with an error wrapping
// ErrTarget (an answer a drop_ack hid counts as an answer). The target's
// credentials (userinfo) go with every request as Basic authorization,
// and the run's secrets are scrubbed from what the history keeps of the
// answers (see secrets.go). A scenario that does not compile (a bad
// template or JSONPath, a bad fault) is an error before any request is sent.
//
// Decisions worth knowing:
//   - a failed operation.before read (transport error, non-2xx, a variable
//     not found) ends its op with a single attempt of outcome fail (the
//     operation was certainly not sent) whose Err starts with
//     "operation.before:"; it is not retried;
//   - a request that cannot be rendered (a template error) is recorded the
//     same way, outcome fail, Err starting with "render:", and not retried;
//     when no request could be rendered at all, Run returns the template
//     error;
//   - a response whose body breaks off after the status line (or is cut off
//     by the run's context) is recorded as outcome info: the client did not
//     get the answer;
//   - a body longer than Options.MaxBody is read whole but fingerprinted
//     as it is, not normalised, and keeps no fields (see Options.MaxBody);
//     Attempt.Size records its length;
//   - a 4xx or 5xx answer keeps the start of its body (at most 2 KiB,
//     valid UTF-8, control characters replaced) in Attempt.Body;
//   - every request is bounded by Options.RequestTimeout; an attempt over
//     it is recorded as info ("no answer within 30s (request timeout)")
//     and retried as retry.on says;
//   - a duplicate fault records Attempt.Copies and, in Attempt.Answers,
//     every other copy's answer (outcome, status, fingerprint and fields
//     by the same normaliser, end, error); a drop_ack records the answer
//     it hid as an Answer with Hidden set, the attempt staying info;
//   - a retried answer's Retry-After (seconds or an HTTP date) lengthens
//     the backoff's wait, up to the backoff's maximum;
//   - an op's key is operation.key.value rendered with .Seq and .User (a
//     key that does not render ends the op like a request that does not),
//     else a UUID drawn from the seed and the scenario's name;
//   - with operation.key.from_answer, an attempt after an answer that
//     carried a key (in a header, or at a JSONPath of the body) sends that
//     key, and so do the replays; the first sends the op's key only when
//     key.header or key.body_field is set. Each answer's key is kept in
//     Attempt.Fields as history.MintedKeyField; the op keeps its own key;
//   - the answers' Location, Idempotency-Key, Idempotent-Replayed and
//     Retry-After headers (and from_answer's header) are kept in
//     Attempt.Headers, as evidence; an answer with none of them keeps
//     nothing;
//   - with operation.replay, each op's first 2xx is followed by
//     replay.count replays, recorded as further attempts of the op with
//     Fault history.FaultReplay (the same request) or history.FaultMismatch (replay.body),
//     each sent replay.after after the previous answer, with no injected
//     fault and no retry. They run beside the load, not in a worker's
//     place, and Run waits for them (a duration-bound load may end up to
//     count × after later); a cancelled ctx stops them.
func Run(ctx context.Context, sc *scenarios.Scenario, opts Options) (*history.History, error) {
	r, err := compile(sc, opts)
	if err != nil {
		return nil, err
	}
	if opts.Transport == nil {
		tr := h1.New(NewTransport(r.workers()), r.workers())
		defer tr.CloseIdleConnections()
		opts.Transport = tr
	}
	// An HTTP/1.1 client of ours bounds each request with its connection's
	// deadline (an h1.Limit per worker); another transport gets a context
	// with a timer per request.
	r.connect(opts.Transport)
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	h := &history.History{Meta: history.Meta{Scenario: sc.Name, Seed: opts.Seed, KeyNonce: opts.KeyNonce, Shard: opts.Shard}}
	// A password or a query value in a URL never reaches a report.
	h.Meta.Target = r.redacted(r.targets[0])
	if len(r.targets) > 1 {
		for _, u := range r.targets {
			h.Meta.Targets = append(h.Meta.Targets, r.redacted(u))
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.ctx = ctx

	h.Meta.Stages = metaStages(sc.Load)
	if r.obs != nil {
		announceStages(r.obs, h.Meta.Stages)
		r.obs.Start(r.shard.Ops(r.load.Ops), time.Duration(r.load.Duration))
	}
	h.Meta.Started = now()
	r.Client.start = time.Now()
	if d := time.Duration(r.load.Duration); d > 0 {
		t := time.AfterFunc(d, func() { r.stop.Store(true) })
		defer t.Stop()
	}
	if opts.Halt != nil {
		go func() {
			select {
			case <-opts.Halt:
				r.stop.Store(true)
			case <-ctx.Done(): // Run returned
			}
		}()
	}
	if opts.SpillAfter > 0 {
		r.spill = newSpiller(opts.SpillDir, max(min(opts.SpillAfter, MaxSpillAfter)/r.workers(), min(opts.SpillAfter, 256)), r.shard, func() { r.stop.Store(true) })
		defer r.spill.abandon()
	}
	var ws []*worker
	if r.load.Rate > 0 {
		ws = r.open()
	} else {
		ws = r.closed()
	}
	if p := r.replay; p != nil {
		p.wg.Wait()
		r.minted.replayed(p.all)
		ws = append(ws, p.all...)
	}
	h.Meta.Ended = now()

	for _, w := range ws {
		w.cancel()
	}
	recs := make([]*recorder, len(ws))
	answered, failed := 0, 0
	sentOps, sentAttempts := 0, 0
	var transportErr, renderErr error
	for i, w := range ws {
		recs[i] = &w.rec
		answered += w.answered
		failed += w.failed
		sentOps += w.handedOps + w.rec.ops.n
		sentAttempts += w.handedAttempts + w.rec.attempts.n
		if transportErr == nil {
			transportErr = w.transportErr
		}
		if renderErr == nil {
			renderErr = w.renderErr
		}
	}
	if r.spill.started() {
		for _, rec := range recs {
			r.spill.hand(rec)
		}
		sp, err := r.spill.close(sentOps, sentAttempts)
		if err != nil {
			// The history is not whole: a run of what is in memory would
			// be a run that never was. The error counts what was sent.
			if ctx.Err() != nil {
				h.Meta.Interrupt(history.PhaseLoad)
			}
			return h, err
		}
		h.Spill = sp
	} else {
		h.Ops, h.Attempts = merge(recs)
		h.Sort()
		localize(r.shard, h)
	}

	if err := ctx.Err(); err != nil {
		h.Meta.Interrupt(history.PhaseLoad)
		return h, err
	}
	switch {
	case answered > 0:
		return h, nil
	case failed > 0:
		// Only failures the faults did not inject accuse the target: a
		// run of drop_ack at rate 1 got every answer, and hid them.
		where := h.Meta.Target
		if len(h.Meta.Targets) > 0 {
			where = strings.Join(h.Meta.Targets, ", ")
		}
		return h, fmt.Errorf("%w: not one of %d attempts got an answer from %s; first error: %w", ErrTarget, failed, where, transportErr)
	case renderErr != nil:
		return h, renderErr
	}
	return h, nil
}

// NewTransport is the HTTP transport a run uses: keep-alive with room for
// conns idle connections per host, bounded dial and TLS handshake,
// HTTP/1.1, no compression (fingerprints are of the bytes sent). Commands
// that need TLS settings or proxies set them on it.
func NewTransport(conns int) *http.Transport {
	return &http.Transport{
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConnsPerHost: max(conns, 2),
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true,
	}
}

// run is a compiled scenario plus the state shared by its workers.
type run struct {
	*Client    // sends and records every attempt
	identity   // names each op
	ctx        context.Context
	targets    []*url.URL // at least one
	targetSeed uint64     // an attempt's target is drawn from (targetSeed, op, n)
	tmplSeed   uint64     // templates' Rand draws from (tmplSeed, op)
	load       scenarios.Load

	op        *scenarios.Template
	statics   []*static // the operation per target when it has no template, else nil
	replay    *replayer // operation.replay; nil for none
	keyHeader string
	keyField  string
	// webhook signs every attempt as a provider signs a delivery
	// (operation.webhook); nil for none.
	webhook *webhooks.Scheme
	minted  *fromAnswer // operation.key.from_answer; nil for none
	before  *scenarios.Template
	capture []namedPath

	plan       *faults.Plan
	sender     Sender // nil: the HTTP client sends
	attempts   int
	retryOn    retryOn
	backoff    backoff
	obs        Observer
	attemptObs AttemptObserver // obs, when it hears attempts too
	opObs      OpObserver      // obs, when it hears ops start

	shard history.Shard // the part of the run's ops this process makes
	spill *spiller      // nil when the history is kept in memory

	stop atomic.Bool // set when the load's duration is over
	ramp Ramp        // load.stages, cut at the load's end; nil for a flat load
}

type namedPath struct {
	name string
	path *jsonpath.Path
}

func compile(sc *scenarios.Scenario, opts Options) (*run, error) {
	r := &run{
		targetSeed: faults.Hash(opts.Seed ^ 0x7a26e75eed),
		tmplSeed:   faults.Hash(opts.Seed ^ 0x7e3a1a7e5eed),
		load:       sc.Load,
		keyHeader:  sc.Operation.Key.Header,
		keyField:   sc.Operation.Key.BodyField,
		attempts:   max(sc.Retry.Attempts, 1),
		backoff:    newBackoff(sc.Retry.Backoff, faults.Hash(opts.Seed^0xb0ff)),
		obs:        opts.Observer,
		attemptObs: attemptObserver(opts.Observer),
		opObs:      opObserver(opts.Observer),
	}
	if err := opts.Shard.Check(); err != nil {
		return nil, err
	}
	r.shard = opts.Shard
	r.sender = opts.Sender
	var err error
	if r.targets, err = targets(opts); err != nil {
		return nil, err
	}
	reqs := []scenarios.Request{sc.Operation.Request}
	if b := sc.Operation.Before; b != nil {
		reqs = append(reqs, b.Request)
	}
	fields := sc.Response.Fields
	if r.minted, fields, err = newFromAnswer(sc.Operation.Key, fields, opts.Sender != nil); err != nil {
		return nil, err
	}
	if r.Client, err = newClient(ClientOptions{Targets: r.targets, Requests: reqs, RequestTimeout: opts.RequestTimeout,
		MaxBody: opts.MaxBody, Fields: fields, Volatile: sc.Response.Volatile, RedactPath: opts.RedactPath, Secrets: opts.Secrets}); err != nil {
		return nil, err
	}
	r.headers = r.minted.answerHeaders()
	env := r.keep.env(opts.Env)
	if r.retryOn, err = newRetryOn(sc.Retry.On); err != nil {
		return nil, err
	}
	if sc.Operation.Key.None {
		r.keyHeader, r.keyField = "", ""
	}
	if r.minted != nil && r.keyHeader == "" && r.keyField == "" {
		r.keyHeader = r.minted.sendIn
	}
	if err := r.stage(sc.Load); err != nil {
		return nil, err
	}
	if r.load.Ops <= 0 && r.load.Duration <= 0 {
		return nil, errors.New("load: set ops or duration (or both), or the load never ends")
	}
	if r.op, err = scenarios.NewTemplate("operation", sc.Operation.Request, http.MethodPost, env); err != nil {
		return nil, err
	}
	if r.webhook, err = sc.Operation.Webhook.Scheme(env); err != nil {
		return nil, fmt.Errorf("operation.webhook: %w", err)
	}
	for _, u := range r.targets {
		if r.webhook != nil {
			break // each attempt is signed anew: no static request
		}
		st, err := newStatic(u, sc.Operation.Request)
		if err != nil {
			return nil, fmt.Errorf("operation.path: %w", err)
		}
		if st == nil {
			r.statics = nil
			break
		}
		r.statics = append(r.statics, st)
	}
	if r.keyHeader != "" {
		r.keyHeader = http.CanonicalHeaderKey(r.keyHeader)
	}
	if r.identity, err = newIdentity(sc, opts.Seed, opts.KeyNonce, env); err != nil {
		return nil, err
	}
	if rp := sc.Operation.Replay; rp != nil {
		if r.replay, err = newReplayer(rp, env); err != nil {
			return nil, err
		}
	}
	if b := sc.Operation.Before; b != nil {
		if r.before, err = scenarios.NewTemplate("operation.before", b.Request, http.MethodGet, env); err != nil {
			return nil, err
		}
		if r.capture, err = compilePaths("operation.before.vars", b.Vars); err != nil {
			return nil, err
		}
	}
	if r.plan, err = faults.NewPlan(opts.Seed, sc.Faults); err != nil {
		return nil, err
	}
	return r, nil
}

// targets are opts.Targets, else opts.Target.
func targets(opts Options) ([]*url.URL, error) {
	if len(opts.Targets) == 0 {
		if opts.Target == nil {
			return nil, errors.New("no target URL: set target in the scenario, --target or IDEMCHECK_TARGET")
		}
		return []*url.URL{opts.Target}, nil
	}
	for i, u := range opts.Targets {
		if u == nil {
			return nil, fmt.Errorf("targets[%d]: no URL", i)
		}
	}
	return opts.Targets, nil
}

// target is the index of the target attempt n of op goes to (n = 0 for its
// operation.before read).
func (r *run) target(op, n int) int {
	if len(r.targets) == 1 {
		return 0
	}
	return int(faults.Hash(r.targetSeed, uint64(op), uint64(n)) % uint64(len(r.targets)))
}

// redacted is u as the run shows it: password and query values masked,
// and its path when the run redacts paths.
func (r *run) redacted(u *url.URL) string { return redactTarget(u, r.redactPath) }

// requestTimeout is opts.RequestTimeout, defaulted.
func requestTimeout(opts Options) (time.Duration, error) {
	switch {
	case opts.RequestTimeout < 0:
		return 0, fmt.Errorf("request timeout %v: want a positive duration, or 0 for the default %v", opts.RequestTimeout, DefaultRequestTimeout)
	case opts.RequestTimeout == 0:
		return DefaultRequestTimeout, nil
	}
	return opts.RequestTimeout, nil
}

// timeoutError is the cause of a request's context when the request
// timeout expires.
type timeoutError struct{ d time.Duration }

func (e *timeoutError) Error() string {
	return fmt.Sprintf("no answer within %v (request timeout)", e.d)
}

// Timeout reports true, like net.Error.
func (e *timeoutError) Timeout() bool { return true }

func (e *timeoutError) Unwrap() error { return context.DeadlineExceeded }

// withTimeout returns ctx bounded by the request timeout d, its cause err.
func withTimeout(ctx context.Context, d time.Duration, err error) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, err)
}

// withTimeoutAt is withTimeout for a timeout that started at now.
func withTimeoutAt(ctx context.Context, now time.Time, d time.Duration, err error) (context.Context, context.CancelFunc) {
	return context.WithDeadlineCause(ctx, now.Add(d), err)
}

// explain returns the request timeout's error in place of err when it is
// what ended the request whose context is ctx (or, through an h1.Limit,
// err itself), else err.
func explain(ctx context.Context, err error) error {
	var te *timeoutError
	if err != nil && (errors.As(context.Cause(ctx), &te) || errors.As(err, &te)) {
		return te
	}
	return err
}

// maxBody is opts.MaxBody, defaulted.
func maxBody(opts Options) (int, error) {
	switch {
	case opts.MaxBody < 0:
		return 0, fmt.Errorf("max body %d: want a positive size, or 0 for the default %d", opts.MaxBody, DefaultMaxBody)
	case opts.MaxBody == 0:
		return DefaultMaxBody, nil
	}
	return opts.MaxBody, nil
}

func compilePaths(field string, m map[string]string) ([]namedPath, error) {
	var out []namedPath
	for name, s := range m {
		p, err := jsonpath.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", field, name, err)
		}
		out = append(out, namedPath{name, p})
	}
	return out, nil
}

// workers is the most ops in flight at once.
func (r *run) workers() int {
	if r.load.Rate > 0 {
		if r.load.MaxInFlight > 0 {
			return part(r.shard, r.load.MaxInFlight)
		}
		return part(r.shard, 512)
	}
	return part(r.shard, max(r.load.Concurrency, 1))
}

// closed runs the closed model: workers take the next op number from a
// shared counter until load.ops were issued, the duration elapsed or ctx
// was cancelled. In a load in stages, worker i takes ops only in its
// turns (see stages.go).
func (r *run) closed() []*worker {
	n := r.workers()
	ws := make([]*worker, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	turns := r.newTurns()
	defer turns.end()
	for i := range ws {
		w := r.newWorker()
		ws[i] = w
		wg.Go(func() {
			for !r.stop.Load() && r.ctx.Err() == nil && turns.wait(w, i) {
				id := r.shard.Global(int(next.Add(1) - 1))
				if r.load.Ops > 0 && id >= r.load.Ops {
					turns.over()
					return
				}
				w.runOp(id, r.since())
				w.maybeSpill()
			}
		})
	}
	wg.Wait()
	return ws
}

// spawnTick is how often the open model looks for ops due but not taken
// by any worker (every worker busy), and starts workers for those overdue
// by spawnLag or more: a moment's jitter does not ratchet up the workers
// (and connections), which would slow every request.
const (
	spawnTick = time.Millisecond
	spawnLag  = 2 * time.Millisecond
)

// open runs the open model: op id is due at id / load.rate (Pacer), or
// when a load in stages has made id ops (Ramp.Due), and
// its first attempt is intended then, whenever a worker is free to send
// it, so the time it waited for one counts in its latency. Workers take
// the next op themselves, and wait for its time when they are early: no
// dispatcher stands between the schedule and the sends. While ops are due
// that no worker has taken (every worker busy: a slow or stalled target),
// more workers are started, every spawnTick, up to max_in_flight, so that
// the ops keep being sent at their times as an open model's must.
func (r *run) open() []*worker {
	var pacer interface{ Due(hit int) time.Duration } = Pacer{Rate: float64(r.load.Rate)}
	if r.ramp != nil {
		pacer = r.ramp // load.stages
	}
	limit := r.workers()
	end := time.Duration(r.load.Duration)
	var (
		ws    []*worker
		wg    sync.WaitGroup
		taken atomic.Int64 // the shard's ops taken by a worker
		idle  atomic.Int64 // workers between ops
		over  atomic.Bool  // no op is left to take
		spent atomic.Bool  // load.ops were all taken
	)
	// due is when the shard's k-th op is due; ok is false past the load's
	// end (its ops or its duration).
	due := func(k int) (time.Duration, bool) {
		id := r.shard.Global(k)
		d := pacer.Due(id)
		if r.load.Ops > 0 && id >= r.load.Ops {
			spent.Store(true)
			return d, false
		}
		if end > 0 && d >= end {
			return d, false
		}
		return d, true
	}
	spawn := func() {
		w := r.newWorker()
		ws = append(ws, w)
		idle.Add(1)
		wg.Go(func() {
			defer idle.Add(-1)
			for !r.stop.Load() && r.ctx.Err() == nil {
				k := int(taken.Add(1) - 1)
				at, ok := due(k)
				if !ok {
					over.Store(true)
					return
				}
				// An op taken is made, or recorded unsent when the run
				// is interrupted first (runOp), so that the ops taken
				// leave no gap in the run's numbering.
				w.sleep(at - r.since())
				idle.Add(-1)
				w.runOp(r.shard.Global(k), at)
				w.maybeSpill()
				idle.Add(1)
			}
		})
	}
	// Only this goroutine starts workers, and it waits for them only once
	// it starts no more.
	spawn()
	tick := time.NewTicker(spawnTick)
	defer tick.Stop()
	done := r.ctx.Done()
loop:
	for {
		select {
		case <-done:
			break loop
		case <-tick.C:
		}
		if over.Load() || r.stop.Load() {
			break
		}
		if idle.Load() > 0 {
			continue // a free worker takes the next op
		}
		// Ops due by now that no worker has taken, every worker busy:
		// a worker for each, up to the bound.
		now := r.since()
		k := int(taken.Load())
		for n := len(ws); n < limit; n++ {
			at, ok := due(k)
			if !ok || at+spawnLag > now {
				break
			}
			spawn()
			k++
		}
	}
	wg.Wait()
	if !spent.Load() {
		r.holdStages(end)
	}
	return ws
}

// keySeed derives the seed of a scenario's keys from the run's seed, its
// key nonce and the scenario's name, so two scenarios run with one seed
// against one target (the demo's naive and protected variants) never share
// a key, while the same seed and nonce still give the same keys.
func keySeed(seed, nonce uint64, scenario string) uint64 {
	h := canon.FNV1a([]byte(scenario))
	if nonce == 0 {
		return faults.Hash(seed ^ h)
	}
	return faults.Hash(seed^h, nonce)
}

func opObserver(o Observer) OpObserver {
	oo, _ := o.(OpObserver)
	return oo
}

func attemptObserver(o Observer) AttemptObserver {
	ao, _ := o.(AttemptObserver)
	return ao
}

// recorded tells the attempt observer, if any, of a recorded attempt.
func (r *run) recorded(a history.Attempt) {
	if r.attemptObs != nil {
		r.attemptObs.AttemptDone(a)
	}
}
