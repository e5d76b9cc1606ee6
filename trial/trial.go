package trial

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/pause"
	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/measure"
	"github.com/idemcheck/idemcheck/oracles"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// ErrConfig is wrapped by errors in the scenario or the options that no
// request could reveal: an unusable target URL, an oracle that cannot be
// built.
var ErrConfig = errors.New("configuration error")

// TargetError is a target that could not be reached or set up before any
// load was sent.
type TargetError struct {
	// Target is the target's base URL, its secrets redacted.
	Target string
	// Loopback is true when the target is on this machine.
	Loopback bool
	// NotHTTP is true when something answered, but not in HTTP (or not in
	// the scheme the URL names).
	NotHTTP bool
	// TLS is true when an http:// target speaks TLS: the URL wants
	// https://.
	TLS bool
	Err error
}

func (e *TargetError) Error() string { return e.Err.Error() }

func (e *TargetError) Unwrap() error { return e.Err }

// Hint says what to check: the API's address, its scheme, or (on this
// machine) the built-in lab.
func (e *TargetError) Hint() string {
	switch {
	case e.TLS:
		return "the target speaks TLS: use https://"
	case e.NotHTTP:
		return "the target answered, but not in HTTP: is that the API's port, and the right scheme (http:// or https://)?"
	}
	hint := fmt.Sprintf("is the API running at %s?", e.Target)
	if u, err := url.Parse(e.Target); err == nil && e.Loopback {
		hint += fmt.Sprintf(" Start the built-in lab with 'idemcheck lab --listen %s'", u.Host)
	}
	return hint
}

// Options tune one run.
type Options struct {
	// Target overrides the scenario's target when set.
	Target string
	// Targets, when set, override the scenario's targets (and Target):
	// the run spreads its attempts over them as a load balancer would.
	Targets []string
	// Service, when set, overrides a queue scenario's service: the HTTP
	// API behind its consumer, which its oracles read.
	Service string
	// RequestTimeout, when set, overrides the scenario's
	// load.request_timeout: it bounds every request of the run (load,
	// setup, preflight, oracles).
	RequestTimeout time.Duration
	Seed           uint64
	// KeyNonce is mixed into generated keys; 0 for keys from the seed
	// alone.
	KeyNonce uint64
	// RunID names the run in every file it writes; "" draws a random one.
	RunID string
	// Transport sends every request (load, setup, oracles); nil means the
	// runner's own and http.DefaultTransport's.
	Transport http.RoundTripper
	// Getenv is what templates' env function reads.
	Getenv func(string) string
	// Secrets is the run's one registry of secrets: the targets'
	// credentials and every value the templates read from Getenv are
	// registered there (by the runner and here), and scrubbed with it
	// from the history, the readings' errors and the files the run
	// writes. Nil: a registry of the run's own.
	Secrets *redact.Secrets
	// Observer hears the load's progress; nil hears nothing.
	Observer runner.Observer
	// FailOn is "medium" when a deviation from the profile fails the run.
	FailOn string
	// RedactPath masks the targets' path segments wherever the run shows
	// them, for targets with a credential in their path.
	RedactPath bool
	// ObserveTimeout bounds the oracles' reads after the quiet period; 0
	// means ObserveTimeout.
	ObserveTimeout time.Duration
	// SpillAfter and SpillDir bound the attempts the run keeps in memory
	// (runner.Options.SpillAfter); 0 keeps them all. SpillDir is where
	// every temporary file of the run goes: the spill, the parts its
	// history is judged in, a judge's merge ("": the system's temporary
	// directory).
	SpillAfter int
	SpillDir   string
	// Checkpoint, when set, is called once with the history the load
	// made (without readings, marked interrupted) as soon as the run is
	// interrupted after its load began, from its own goroutine while the
	// state is read: a second interrupt ends the process, and what the
	// load recorded must not go with it. Observe returns only once it has
	// returned.
	Checkpoint func(*history.History)
}

// ObserveTimeout bounds the oracles' reads after a run, from the end of
// the quiet period: a long quiet never eats the oracles' time.
const ObserveTimeout = time.Minute

// InterruptedQuiet is the longest quiet period an interrupted run waits
// before its oracles read.
const InterruptedQuiet = 2 * time.Second

type abortKey struct{}

// WithAbort returns ctx carrying abort. ctx's end interrupts a run (the
// load stops, then the state is still read, so the report says what was
// done); abort's end stops that reading too, for a user who will not wait
// (a second Ctrl-C). Without it a run's reading after an interruption is
// bounded by InterruptedQuiet and ObserveTimeout alone.
func WithAbort(ctx, abort context.Context) context.Context {
	return context.WithValue(ctx, abortKey{}, abort)
}

// abortOf is the context of ctx's reading after an interruption: its
// abort context when it has one, else ctx without its cancellation.
func abortOf(ctx context.Context) context.Context {
	if a, ok := ctx.Value(abortKey{}).(context.Context); ok && a != nil {
		return a
	}
	return context.WithoutCancel(ctx)
}

// Trial is a prepared run of one scenario: its target answers, its setup
// requests were made and its oracles took their readings before the load.
type Trial struct {
	sc      *scenarios.Scenario
	opts    Options
	target  *url.URL // the first of targets
	targets []*url.URL
	oracles []oracles.Oracle
	before  map[string]error // oracles whose reading before the load failed
	ropts   runner.Options
	// queue is a queue target's publisher (operation.publish); nil for an
	// HTTP target.
	queue publisher
	// cut is a queue's consumer_cut, its proxy serving from Prepare to
	// Close; nil for none.
	cut *consumerCut
	// undrained is why the consumer had not drained the queue when
	// Observe read the oracles ("" when it had, or for an HTTP target).
	undrained string
	// The consumer battery's settings of a queue run: poisonFirst
	// publishes a poison message once the run has marked where its
	// messages start (poisonErr: why it was not confirmed);
	// readUndrained reads the oracles even when the queue did not drain
	// (the poison may be left).
	poisonFirst, readUndrained bool
	poisonErr                  error
	// calibration is what calibrate measured, nil when it sent nothing.
	calibration *history.Calibration
}

// Prepare checks the scenario's target and oracles, makes the setup
// requests (or checks that the target answers HTTP at all), and takes the
// oracles' readings before the load.
func Prepare(ctx context.Context, sc *scenarios.Scenario, o Options) (*Trial, error) {
	t, client, err := newTrial(sc, o)
	if err != nil {
		return nil, err
	}
	prepared := false
	defer func() {
		if !prepared {
			t.Close() // a queue's connections, a consumer_cut's proxy
		}
	}()
	target := t.target
	if t.queue != nil {
		// the consumer_cut's proxy first: the consumer behind it may be
		// what makes the broker's stream exist
		if err := t.startConsumerCut(ctx, brokerAddr(t.target)); err != nil {
			return nil, fmt.Errorf("%s: %w", sc.Name, err)
		}
	}
	if err := t.preflight(ctx, client); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", sc.Name, ctx.Err())
		}
		var se *runner.SetupError
		var tlsErr *tlsError
		var be *brokerError
		if errors.As(err, &se) && !errors.As(err, &tlsErr) || errors.As(err, &be) {
			return nil, fmt.Errorf("%s: %w", sc.Name, err)
		}
		if t.queue != nil && len(t.targets) > 0 {
			target = t.targets[0] // the service behind the queue did not answer
		}
		te := &TargetError{Target: t.redacted(target), Loopback: isLoopback(target.Hostname()), NotHTTP: notHTTP(err),
			Err: fmt.Errorf("%s: %w", sc.Name, err)}
		te.TLS = errors.As(err, &tlsErr)
		return nil, te
	}
	if err := t.calibrate(ctx); err != nil { // calibrate.go
		return nil, fmt.Errorf("%s: %w", sc.Name, err)
	}
	for _, or := range t.oracles {
		if err := or.Before(ctx); err != nil {
			if ctx.Err() != nil {
				// Interrupted while reading: no run starts on part of it.
				return nil, fmt.Errorf("%s: reading the state before the load: %w", sc.Name, ctx.Err())
			}
			// A run whose state before could not be read can only be
			// inconclusive: stop before its load changes the target.
			return nil, &ReadingError{Oracle: or.Name(), Err: fmt.Errorf("%s: oracle %s could not read the state before the load: %w", sc.Name, or.Name(), err)}
		}
	}
	if err := ctx.Err(); err != nil {
		// Interrupted as the readings ended: a prepared run would start
		// loads (a sharded run's manifest), so none is made.
		return nil, fmt.Errorf("%s: %w", sc.Name, err)
	}
	prepared = true
	return t, nil
}

// ReadingError is an oracle that could not read the target's state
// before the load: the run stops there, nothing of its load sent, as its
// judgement could only be inconclusive.
type ReadingError struct {
	Oracle string
	Err    error
}

func (e *ReadingError) Error() string { return e.Err.Error() }

func (e *ReadingError) Unwrap() error { return e.Err }

// Hint says what to check.
func (e *ReadingError) Hint() string {
	return "nothing of the load was sent: check the oracle's request (or its database URL) in the scenario, and that it can be read now"
}

// newTrial builds the trial of sc: its targets, oracles and the runner's
// options; it sends nothing.
func newTrial(sc *scenarios.Scenario, o Options) (*Trial, *http.Client, error) {
	overrides := o.Targets
	if len(overrides) == 0 && o.Target != "" {
		overrides = []string{o.Target}
	}
	targets, err := sc.TargetURLs(overrides)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrConfig, sc.Name, err)
	}
	if o.Secrets == nil {
		o.Secrets = &redact.Secrets{}
	}
	for _, u := range targets {
		o.Secrets.AddURL(u)
	}
	broker := targets[0] // a queue's: the broker its ops are published to
	switch {
	case !sc.IsQueue() && o.Service != "":
		return nil, nil, fmt.Errorf("%w: %s: --service names the API behind a queue's consumer, and this scenario publishes nothing (operation.publish): give the API as --target", ErrConfig, sc.Name)
	case sc.IsQueue() && len(targets) > 1:
		return nil, nil, fmt.Errorf("%w: %s: a queue scenario publishes to one broker: give one --target", ErrConfig, sc.Name)
	}
	if sc.IsQueue() {
		if targets, err = queueTargets(sc, o); err != nil {
			return nil, nil, err
		}
	}
	// The paths' literal query values too: masked in every URL printed,
	// they must be masked where a server reflects them.
	o.Secrets.Add(sc.QueryValues()...)
	env := o.Secrets.Env(o.Getenv) // what the templates read: the oracles' too
	if ds := sc.MissingEnv(o.Getenv); len(ds) > 0 {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrConfig, sc.Name, ds)
	}
	if ds := sc.BadHeaders(o.Getenv); len(ds) > 0 {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrConfig, sc.Name, ds)
	}
	if o.RunID == "" {
		o.RunID = NewRunID()
	}
	timeout := o.RequestTimeout
	if timeout <= 0 {
		timeout = time.Duration(sc.Load.RequestTimeout)
	}
	client := &http.Client{Transport: o.Transport, Timeout: timeout}
	oracleTargets := targets
	if len(oracleTargets) == 0 {
		oracleTargets = []*url.URL{broker} // a queue whose oracles read a database
	}
	ors, err := oracles.FromScenarioTargets(sc, oracleTargets, o.Transport, timeout, env)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrConfig, sc.Name, err)
	}
	target := oracleTargets[0]
	t := &Trial{sc: sc, opts: o, target: target, targets: targets, oracles: ors, before: map[string]error{},
		ropts: runner.Options{Target: target, Seed: o.Seed, KeyNonce: o.KeyNonce, Transport: o.Transport, Env: env, Secrets: o.Secrets,
			Observer: o.Observer, RequestTimeout: timeout, RedactPath: o.RedactPath, SpillAfter: o.SpillAfter, SpillDir: o.SpillDir}}
	if len(targets) > 1 {
		t.ropts.Targets = targets
	}
	if sc.IsQueue() {
		if t.queue, err = newPublisher(sc, broker, env); err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrConfig, sc.Name, err)
		}
		t.target, t.ropts.Target, t.ropts.Targets, t.ropts.Sender = broker, broker, nil, t.queue
	}
	return t, client, nil
}

// preflight runs the setup requests, or, when there are none, checks that
// the target answers HTTP at all, so an unreachable target is known before
// any load is sent.
//
// An http:// target that answers 400 (as a TLS server answers plain HTTP)
// or not in HTTP is probed with a TLS handshake: when it speaks TLS the
// error is a *tlsError, whatever the setup said, as no request of the run
// could succeed.
func (t *Trial) preflight(ctx context.Context, client *http.Client) error {
	if t.queue != nil {
		if err := t.queue.Ping(ctx); err != nil {
			return &brokerError{err}
		}
	}
	if len(t.sc.Setup) > 0 {
		err := runner.Setup(ctx, t.sc, t.ropts)
		var se *runner.StatusError
		if err != nil && (notHTTP(err) || errors.As(err, &se) && se.Status == http.StatusBadRequest) {
			if terr := t.speaksTLS(ctx, t.targets[0]); terr != nil {
				return terr
			}
		}
		return err
	}
	for _, target := range t.targets {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // it quotes the URL, query and path
			}
			if notHTTP(err) {
				if terr := t.speaksTLS(ctx, target); terr != nil {
					return terr
				}
			}
			return fmt.Errorf("target %s unreachable: %w", t.redacted(target), err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusBadRequest {
			if terr := t.speaksTLS(ctx, target); terr != nil {
				return terr
			}
		}
	}
	return nil
}

// tlsError is an http:// target that speaks TLS.
type tlsError struct{ target string }

func (e *tlsError) Error() string {
	return fmt.Sprintf("target %s speaks TLS: it answers plain HTTP with errors", e.target)
}

// speaksTLS returns a *tlsError when target is an http:// URL whose server
// completes a TLS handshake; nil otherwise (an https:// target, no TLS, or
// no answer within 5 s).
func (t *Trial) speaksTLS(ctx context.Context, target *url.URL) error {
	if target.Scheme != "http" {
		return nil
	}
	host := target.Host
	if target.Port() == "" {
		host = net.JoinHostPort(target.Hostname(), "80")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, ServerName: target.Hostname()}} // a probe: nothing is sent over it
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil
	}
	conn.Close()
	return &tlsError{target: t.redacted(target)}
}

// redacted is u as messages show it.
func (t *Trial) redacted(u *url.URL) string { return redact.Options{Path: t.opts.RedactPath}.URL(u) }

// Load sends the scenario's load and returns its history, whose Meta says
// what the run is judged against. The history is never nil: an
// interrupted or failed load returns what it recorded, with the error
// (wrapping context.Canceled when interrupted). The scenario's nemesis,
// if it declares one, runs beside the load (nemesis.go); its windows are
// in the history's Meta.Nemesis.
func (t *Trial) Load(ctx context.Context) (*history.History, error) {
	nem, err := t.nemesis(ctx) // the scenario's nemesis, if any (nemesis.go)
	var h *history.History
	if err == nil {
		opts := nem.options(t.ropts)
		watch := newAbortWatch(t.sc, t.oracles) // load.abort_on_fail (abort.go)
		if watch != nil {
			if opts.Observer != nil {
				opts.Observer = runner.Observers{opts.Observer, watch}
			} else {
				opts.Observer = watch
			}
			opts.Halt = watch.halt
			watch.run(ctx)
		}
		if t.queue != nil {
			// where this run's messages start: the drain and the
			// redeliveries count from here
			t.queue.Mark(context.WithoutCancel(ctx))
			if t.poisonFirst {
				t.poisonErr = t.poison(ctx)
			}
		}
		t.cut.begin(t.queue)
		h, err = runner.Run(ctx, t.sc, opts)
		t.cut.end(ctx, t.queue, time.Duration(t.sc.Quiet)/2)
		if watch != nil {
			watch.stop(h)
		}
	}
	windows := nem.finish(h)
	if h == nil {
		h = &history.History{Meta: history.Meta{Scenario: t.sc.Name, Target: t.redacted(t.target), Seed: t.opts.Seed, KeyNonce: t.opts.KeyNonce}}
	}
	h.Meta.RunID = t.opts.RunID
	h.Meta.Description = t.sc.Description
	h.Meta.Source = t.sc.Source
	h.Meta.Judge = JudgeOf(t.sc)
	h.Meta.Judge.FailOn = t.opts.FailOn
	h.Meta.Nemesis = windows
	h.Meta.BitRecorded = t.ropts.Sender == nil || t.queue != nil // the runner's client, and the publishers, record Attempt.Bit
	h.Meta.Calibration = t.calibration
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		h.Meta.Interrupt(history.PhaseLoad)
		err = fmt.Errorf("%s: interrupted: %w", t.sc.Name, context.Canceled)
	default:
		err = fmt.Errorf("%s: %w", t.sc.Name, err)
	}
	return h, err
}

// Observe waits the scenario's quiet period, so that work the client gave
// up on can finish, then has every oracle read the state after the run
// into h.Readings, within ObserveTimeout from the end of the quiet period.
//
// An interrupted run must still say what was done: when ctx ends before or
// during the quiet period, the rest of it is cut to InterruptedQuiet and
// the oracles read all the same. Only the abort context (WithAbort) stops
// them: the readings that did not finish then fail with its error.
//
// An interruption after the load marks h interrupted, in the phase it
// came in (history.PhaseQuiet, PhaseReading), unless the load was
// already: such a run is judged at best inconclusive, as the state read
// may not hold the load's whole effect.
func (t *Trial) Observe(ctx context.Context, h *history.History) {
	abort := abortOf(ctx)
	quiet := time.Duration(t.sc.Quiet)
	var in atomic.Value // the phase the reading is in, for the checkpoint
	in.Store(history.PhaseQuiet)
	saved := t.checkpoint(ctx, h, &in)
	phase, _ := t.opts.Observer.(interface{ Phase(string) })
	if phase != nil && quiet > 0 {
		phase.Phase(fmt.Sprintf("quiet period %s", quiet))
	}
	interruptedIn := ""
	start := time.Now()
	undrained := ""
	if t.queue != nil {
		if phase != nil {
			phase.Phase(fmt.Sprintf("waiting up to %s for the consumer to drain", quiet))
		}
		if undrained = t.drain(ctx, quiet); ctx.Err() != nil {
			interruptedIn = history.PhaseQuiet
		}
		t.undrained = undrained
	} else if !pause.For(ctx, quiet) {
		interruptedIn = history.PhaseQuiet
		rest := quiet - time.Since(start)
		pause.For(abort, min(rest, InterruptedQuiet))
	}
	in.Store(history.PhaseReading)
	budget := t.opts.ObserveTimeout
	if budget <= 0 {
		budget = ObserveTimeout
	}
	octx, cancel := context.WithTimeout(abort, budget)
	defer cancel()
	if phase != nil && len(t.oracles) > 0 {
		phase.Phase("reading the oracles")
	}
	readings := h.Readings[:0]
	for _, or := range t.oracles {
		r := history.Reading{Oracle: or.Name()}
		if err := t.before[or.Name()]; err != nil {
			r.Err = "reading before the run: " + err.Error()
		} else if undrained != "" && !t.readUndrained {
			r.Err = undrained // the consumer may still apply what is left: nothing to judge yet
		} else {
			r = *oracles.Observe(octx, or, h)
		}
		r.Err = t.opts.Secrets.Scrub(r.Err) // a server may reflect what its reading sent
		readings = append(readings, r)
	}
	if interruptedIn == "" && ctx.Err() != nil {
		interruptedIn = history.PhaseReading
	}
	saved() // h is the checkpoint's until then
	h.Readings = readings
	h.Meta.ConsumerCut = t.cut.record()
	if interruptedIn != "" {
		h.Meta.Interrupt(interruptedIn)
	}
}

// checkpoint calls Options.Checkpoint, from a goroutine of its own, with a
// copy of h marked interrupted in the phase in holds, as soon as ctx ends
// (at once when it has). wait stops it, or waits until it has returned.
func (t *Trial) checkpoint(ctx context.Context, h *history.History, in *atomic.Value) (wait func()) {
	save := t.opts.Checkpoint
	if save == nil {
		return func() {}
	}
	c := &history.History{Meta: h.Meta, Ops: h.Ops, Attempts: h.Attempts, Spill: h.Spill}
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		c.Meta.Interrupt(in.Load().(string))
		save(c)
	})
	return func() {
		if !stop() {
			<-done
		}
	}
}

// SetObserver sets who hears the trial's progress from now on (the
// phases of its reading).
func (t *Trial) SetObserver(o runner.Observer) {
	t.opts.Observer = o
	t.ropts.Observer = o
}

// Judged is a judged run: its history, what was measured and the
// judgement.
type Judged struct {
	History   *history.History
	Measures  measure.Measures
	Judgement checks.Judgement
	// Charts are what the HTML report draws of the load.
	Charts *measure.Charts
	// Err is a problem during the load, beside the judgement of what it
	// recorded: an interruption (wrapping context.Canceled) or a target
	// that failed mid-run.
	Err error
}

// Judge measures h and judges it against what its Meta says. It reads
// nothing but h: held in memory, or spilled to disk (h.Spill), when it is
// judged in parts (history.PartsOf) in the system's temporary directory.
func Judge(h *history.History) (*Judged, error) { return judgeIn(h, "") }

// judgeIn is Judge with the parts in tmp ("": the system's temporary
// directory).
func judgeIn(h *history.History, tmp string) (*Judged, error) {
	// Not cancelled by an interrupt: an interrupted run is still judged
	// on what it saw; a second interrupt ends the process, and the parts
	// on disk go with it (no path names them).
	p, err := history.PartsOf(context.Background(), h, tmp, history.DefaultPartBytes)
	if err != nil {
		return nil, fmt.Errorf("judging the history: %w", err)
	}
	defer p.Close()
	j, err := JudgeParts(context.Background(), p, h.Meta)
	if err != nil {
		return nil, err
	}
	j.History = h
	return j, nil
}

// JudgeParts measures and judges a history given in parts, one part in
// memory at a time, against meta (its own, or another judge's). It stops
// between parts when ctx ends, with ctx's error.
func JudgeParts(ctx context.Context, p *history.Parts, meta history.Meta) (*Judged, error) {
	j, m, c := checks.NewJudger(meta, p.Readings), measure.NewAcc(), measure.NewChartsAcc(p.Span)
	err := p.Each(func(h *history.History) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		j.Add(h)
		m.Add(h)
		c.Add(h)
		return nil
	})
	if err != nil {
		return nil, err
	}
	ms := m.Measures(meta)
	return &Judged{History: &history.History{Meta: meta, Readings: p.Readings}, Measures: ms,
		Judgement: j.Judgement(MeasuredOf(ms)), Charts: c.Charts()}, nil
}

// MeasuredOf is what a run's thresholds are judged on, of its measures.
func MeasuredOf(m measure.Measures) checks.Measured {
	op := m.Latency.Op
	return checks.Measured{P50: op.P50, P90: op.P90, P99: op.P99, P999: op.P999, Max: op.Max, ErrorRate: m.Load.ErrorRate}
}

// Run prepares, loads, observes and judges one scenario. The error is a
// problem that leaves nothing to judge (ErrConfig, a *TargetError, an
// interruption before the load, a history that could not be read back);
// a problem during the load is in Judged.Err, so an interrupted or failed
// run still says what it saw. A spilled history (Judged.History.Spill) is
// the caller's to remove.
func Run(ctx context.Context, sc *scenarios.Scenario, o Options) (*Judged, error) {
	t, err := Prepare(ctx, sc, o)
	if err != nil {
		return nil, err
	}
	h, loadErr := t.Load(ctx)
	if errors.Is(loadErr, history.ErrSpill) {
		t.opts.Checkpoint = nil // no history to save: it was lost
	}
	t.Observe(ctx, h)
	t.Close()
	j, err := judgeIn(h, o.SpillDir)
	if err != nil {
		h.Spill.Remove()
		return nil, err
	}
	j.Err = loadErr
	return j, nil
}

// JudgeOf is what a scenario's runs are judged against.
func JudgeOf(sc *scenarios.Scenario) history.Judge {
	j := history.Judge{Expect: string(sc.Expect), Invariants: make([]history.Invariant, len(sc.Invariants))}
	for i, inv := range sc.Invariants {
		j.Invariants[i] = history.Invariant{Check: inv.Check, Oracle: inv.Oracle}
	}
	t := sc.Thresholds
	j.Thresholds = history.Thresholds{P50: time.Duration(t.P50), P90: time.Duration(t.P90), P99: time.Duration(t.P99),
		P999: time.Duration(t.P999), Max: time.Duration(t.Max), ErrorRate: t.ErrorRate}
	j.SettleGrace = time.Duration(sc.SettleGrace)
	j.Profile = sc.Profile()
	for _, r := range sc.Operation.ExpectReject {
		j.ExpectReject = append(j.ExpectReject, history.Rejection{Attempt: r.Attempt, Status: r.Status})
	}
	j.Lease = time.Duration(sc.Lease)
	return j
}

// NewRunID returns a random run id: 16 hex digits.
func NewRunID() string {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return fmt.Sprintf("%016x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// notHTTP reports whether err says that the target answered, but not in
// HTTP. net/http gives these only as text.
func notHTTP(err error) bool {
	s := err.Error()
	return strings.Contains(s, "malformed HTTP") || strings.Contains(s, "server gave HTTP response to HTTPS client")
}
