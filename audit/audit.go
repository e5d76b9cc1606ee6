package audit

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/theory/jsonpath"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/oracles"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/webhooks"
)

// Error policies a Config can declare (--errors).
const (
	// ErrorsCached: an error answer is stored under the key, as a success
	// would be; a retry gets it replayed (Stripe).
	ErrorsCached = checks.ErrorsCached
	// ErrorsReExecuted: an error releases the key; a retry executes
	// again (Powertools).
	ErrorsReExecuted = checks.ErrorsReExecuted
)

// Defaults for zero Config fields.
const (
	DefaultMaxRequests    = 500
	DefaultLease          = 5 * time.Second
	DefaultRequestTimeout = 10 * time.Second
	// MaxRetention is the longest retention C14 waits out.
	MaxRetention = 10 * time.Second
)

// ErrConfig is wrapped by every error New returns for a configuration
// problem (a template, a JSONPath, an option).
var ErrConfig = errors.New("audit configuration")

// ErrTarget is wrapped by the error Run returns when the audited request
// itself cannot be made to succeed (unreachable target, a non-2xx answer
// to the plain request): nothing can be judged.
var ErrTarget = errors.New("audited request failed")

// Config is what an audit sends and how it judges.
type Config struct {
	// Scenario gives the operation (method, path, headers, body, key
	// placement), the volatile answer fields (response.volatile), the
	// profile and the oracles; its first effects oracle counts effects.
	// Its load, faults and invariants are not used.
	Scenario *scenarios.Scenario
	// Targets are the base URLs the operation's path is sent to (replicas
	// behind one balancer): concurrency probes spread their copies over
	// them. At least one.
	Targets []*url.URL
	// Getenv resolves {{env "NAME"}} in templates; nil reads nothing.
	Getenv func(string) string
	// Secrets is the audit's one registry of secrets (runner.Options
	// .Secrets): what it sends is registered there and scrubbed from
	// what it records; nil: its own.
	Secrets *redact.Secrets
	// As are the headers of a second principal ('Authorization: Bearer
	// {{env "OTHER_TOKEN"}}'), set over the operation's for C15; none
	// skips C15.
	As map[string]string
	// Volatile are JSONPaths of answer fields that may differ between a
	// first answer and its replay, added to the scenario's.
	Volatile []string
	// Errors is the declared error policy, ErrorsCached or
	// ErrorsReExecuted; "" judges only effects and reports what was seen.
	Errors string
	// ErrorBody is a body template the API fails on (a declined card); C12
	// is skipped without it.
	ErrorBody string
	// Retention is the declared key retention; C14 runs only when it is
	// set and at most MaxRetention.
	Retention time.Duration
	// RetentionKeys is how many fresh keys C24 sends after a key before
	// retrying it (a store that keeps keys by count forgets it); 0 skips
	// C24.
	RetentionKeys int
	// KeyFromAnswer says where the API returns the key it mints: an answer
	// header (Idempotency-Key) or a JSONPath into the answer's body
	// ($.idempotency_key). Each op's first request then carries no key,
	// and its later ones the key its answer gave. "" when the client
	// chooses the keys.
	KeyFromAnswer string
	// Lease is how long a key may answer 409 after its first request
	// ended or its client went away (C08, C13); 0 means DefaultLease.
	Lease time.Duration
	// MaxRequests caps the requests sent (oracle reads aside); 0 means
	// DefaultMaxRequests. A check whose planned requests do not fit in
	// what is left is skipped.
	MaxRequests int
	// Checks, when set, are the ids of the checks to run.
	Checks []string
	// FailOn is "medium" to make a medium finding violate the audit.
	FailOn string
	// RequestTimeout bounds each request; an answer later than it is a
	// hang. 0 means the scenario's load.request_timeout, at most
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Quiet is the wait before each effects reading; 0 means the
	// scenario's quiet.
	Quiet time.Duration
	// Transport sends the requests (through the runner's client, which
	// never resends one); nil means the runner's own.
	Transport http.RoundTripper
	// Rand draws the keys (UUID v4); nil means a source seeded from
	// crypto/rand, so every audit sends new keys.
	Rand *rand.Rand
	// Crash, when set, kills the API's process and brings it back (the
	// user's --kill-cmd, --start-cmd and --ready), returning what
	// happened as a nemesis window whose offsets count from origin and
	// whose N is round: C28 calls it while a request is in flight. Nil
	// skips C28.
	Crash func(ctx context.Context, round int, origin time.Time) history.NemesisWindow
	// Links are sent first, once each, before the calibration: requests
	// to other endpoints whose answers give the operation's path
	// parameters (an OpenAPI document's links). Each is an op of
	// history.CheckLinks in the history, and its value replaces {Param}
	// in the operation's path.
	Links []Link
}

// Link is a request whose answer gives a path parameter of the audited
// operation.
type Link struct {
	// Param is the path parameter it gives: {Param} in the path.
	Param string
	// Build makes the request (ctx its context; getenv, the audit's,
	// learns the secrets it reads), its key ("" for none) and its body,
	// the evidence of what was sent.
	Build func(ctx context.Context, getenv func(string) string) (req *http.Request, key string, body []byte, err error)
	// KeyHeader is the header Build put the key in, if any: the
	// evidence shows the key apart.
	KeyHeader string
	// Value takes the parameter's value from the answer; whole is false
	// when its body was longer than the client keeps (body is its start).
	Value func(status int, h http.Header, body []byte, whole bool) (string, error)
	// What names where the value comes from, for errors: "{id} comes
	// from POST /customers's answer (links CustomerCharges)".
	What string
}

// Auditor runs the checks of one Config. It is not safe for concurrent
// use by several Runs.
type Auditor struct {
	cfg      Config
	getenv   func(string) string
	sc       *scenarios.Scenario
	profile  history.Profile
	tmpl     *scenarios.Template
	errTmpl  *scenarios.Template
	as       map[string]*scenarios.Text
	keyHdr   string
	keyField string
	oracle   oracles.Oracle
	oracleID string
	// hook signs every request as a webhook delivery of the op's event
	// (the scenario's operation.webhook); nil for an API's endpoint.
	hook     *webhooks.Scheme
	client   *runner.Client
	targets  []*url.URL
	selected map[string]bool

	lease, reqTimeout, quiet time.Duration
	maxRequests              int

	// mintHeader or mintPath says where the API returns a key it minted
	// (Config.KeyFromAnswer); mints maps an op's own key to it.
	mintHeader, mintPath string
	mints                map[string]string
	mintsAll             map[string][]string

	mu           sync.Mutex
	rnd          *rand.Rand
	seq          atomic.Int64
	sent         atomic.Int64
	h            *history.History // what the audit sent and got
	n            []int            // attempts made per op
	readings     map[string]*history.Reading
	readingOrder []string
	// latency is the calibrated time of a plain request.
	latency time.Duration
}

// New checks cfg and compiles its templates, JSONPaths and oracle. Every
// error wraps ErrConfig.
func New(cfg Config) (*Auditor, error) {
	sc := cfg.Scenario
	if sc == nil {
		return nil, fmt.Errorf("%w: no scenario", ErrConfig)
	}
	if len(cfg.Targets) == 0 {
		return nil, fmt.Errorf("%w: no target URL", ErrConfig)
	}
	if sc.Operation.Key.None {
		return nil, fmt.Errorf("%w: the operation sends no key (key.none): there is nothing to audit", ErrConfig)
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	a := &Auditor{cfg: cfg, sc: sc, profile: sc.Profile(), targets: cfg.Targets,
		keyHdr: sc.Operation.Key.Header, keyField: sc.Operation.Key.BodyField, readings: map[string]*history.Reading{}}
	if a.keyHdr == "" && a.keyField == "" {
		a.keyHdr = "Idempotency-Key"
	}
	var err error
	if a.mintHeader, a.mintPath, err = mintedFrom(cfg.KeyFromAnswer, a.keyField); err != nil {
		return nil, err
	}
	a.mints, a.mintsAll = map[string]string{}, map[string][]string{}
	a.reqTimeout = cfg.RequestTimeout
	if a.reqTimeout == 0 {
		a.reqTimeout = min(time.Duration(sc.Load.RequestTimeout), DefaultRequestTimeout)
		if a.reqTimeout <= 0 {
			a.reqTimeout = DefaultRequestTimeout
		}
	}
	if cfg.RequestTimeout < 0 {
		return nil, fmt.Errorf("%w: durations and the request cap must not be negative", ErrConfig)
	}
	// Every request goes through the runner's client: recorded as the
	// load's attempts are, never resent behind the history's back. The
	// answers keep their "id", their idempotency headers and their
	// bodies, which the contract checks compare.
	reqs := []scenarios.Request{sc.Operation.Request}
	for name, v := range cfg.As {
		reqs = append(reqs, scenarios.Request{Headers: map[string]string{name: v}})
	}
	fields := map[string]string{checks.IDField: "$." + checks.IDField}
	if a.mintPath != "" {
		fields[mintedField] = a.mintPath
	}
	a.client, err = runner.NewClient(runner.ClientOptions{Targets: cfg.Targets, Requests: reqs, Transport: cfg.Transport, Conns: 64,
		RequestTimeout: a.reqTimeout, Fields: fields,
		Volatile: append(slices.Clone(sc.Response.Volatile), cfg.Volatile...), AnswerHeaders: true, Bodies: true, Secrets: cfg.Secrets})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	getenv = a.client.Env(getenv)
	a.getenv = getenv
	if a.hook, err = sc.Operation.Webhook.Scheme(getenv); err != nil {
		return nil, fmt.Errorf("%w: operation.webhook: %w", ErrConfig, err)
	}
	if err := a.templates(); err != nil {
		return nil, err
	}
	a.as = map[string]*scenarios.Text{}
	for name, v := range cfg.As {
		if a.as[name], err = scenarios.NewText("as."+name, v, getenv); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	for _, p := range cfg.Volatile {
		if _, err := jsonpath.Parse(p); err != nil {
			return nil, fmt.Errorf("%w: volatile %q: %w", ErrConfig, p, err)
		}
	}
	switch cfg.Errors {
	case "", ErrorsCached, ErrorsReExecuted:
	default:
		return nil, fmt.Errorf("%w: errors %q: want %s or %s", ErrConfig, cfg.Errors, ErrorsCached, ErrorsReExecuted)
	}
	if cfg.Retention < 0 || cfg.Lease < 0 || cfg.MaxRequests < 0 || cfg.RequestTimeout < 0 || cfg.Quiet < 0 || cfg.RetentionKeys < 0 {
		return nil, fmt.Errorf("%w: durations and the request cap must not be negative", ErrConfig)
	}
	known := map[string]bool{}
	for _, id := range IDs() {
		known[id] = true
	}
	if len(cfg.Checks) > 0 {
		a.selected = map[string]bool{}
		for _, id := range cfg.Checks {
			id = strings.ToUpper(strings.TrimSpace(id))
			if !known[id] {
				return nil, fmt.Errorf("%w: unknown check %q (known: %s)", ErrConfig, id, strings.Join(IDs(), ", "))
			}
			a.selected[id] = true
		}
	}
	a.lease = cmpOr(cfg.Lease, DefaultLease)
	a.maxRequests = cmpOr(cfg.MaxRequests, DefaultMaxRequests)
	a.quiet = cmpOr(cfg.Quiet, time.Duration(sc.Quiet))
	for i, o := range sc.Oracles {
		if o.Effects == nil {
			continue
		}
		// The oracle reads the state, it does not send the operation: the
		// oracles' own client over the audit's transport, bounded per
		// reading (effects).
		built, err := oracles.FromScenarioTargets(&scenarios.Scenario{Oracles: []scenarios.Oracle{o}}, cfg.Targets, cfg.Transport, 0, getenv)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		a.oracle = built[0]
		a.oracleID = describeOracle(sc.Oracles[i])
		break
	}
	a.rnd = cfg.Rand
	if a.rnd == nil {
		var seed [16]byte
		_, _ = crand.Read(seed[:])
		a.rnd = rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	}
	return a, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// describeOracle names an effects oracle for the scorecard.
func describeOracle(o scenarios.Oracle) string {
	e := o.Effects
	switch {
	case e.PerKey != nil:
		return strings.TrimSpace(cmpOr(e.PerKey.Method, http.MethodGet) + " " + e.PerKey.Path + " " + e.PerKey.Value)
	case e.Bulk != nil:
		return strings.TrimSpace(cmpOr(e.Bulk.Method, http.MethodGet) + " " + e.Bulk.Path + " " + e.Bulk.Value)
	case e.SQL != nil:
		return "sql"
	case e.Redis != nil:
		return "redis"
	}
	return o.Name
}

// HasOracle reports whether effects are counted.
func (a *Auditor) HasOracle() bool { return a.oracle != nil }

// Planned is one check as it will run: what it sends and at most how many
// requests, or why it will not run.
type Planned struct {
	ID       string
	Name     string
	Severity checks.Severity
	// Requests is the most requests the check sends.
	Requests int
	// Probes says what is sent.
	Probes string
	// Skip says why the check will not run; "" when it will.
	Skip string
}

// CalibrationRequests is how many plain requests an audit sends first, to
// measure the request's time and check that it succeeds.
const CalibrationRequests = 2

// Plan returns every check in order, with its request bound or the reason
// it is skipped. It sends nothing.
func (a *Auditor) Plan() []Planned {
	var out []Planned
	for _, d := range probes() {
		p := Planned{ID: d.id, Name: d.name, Severity: d.severity, Probes: d.probes}
		p.Skip = a.skipReason(d)
		if p.Skip == "" {
			p.Requests = d.requests(a)
		}
		out = append(out, p)
	}
	return out
}

// PlanReport is the plan as the dry run shows it (reports.WriteAuditPlan).
func (a *Auditor) PlanReport() reports.AuditPlan {
	p := reports.AuditPlan{MaxPlanned: a.MaxPlanned(), Calibration: CalibrationRequests, MaxRequests: a.MaxRequests(), Oracle: a.HasOracle()}
	for _, c := range a.Plan() {
		p.Checks = append(p.Checks, reports.AuditPlanCheck{ID: c.ID, Name: c.Name, Severity: string(c.Severity), Requests: c.Requests, Probes: c.Probes, Skip: c.Skip})
	}
	return p
}

// MaxPlanned is the most requests the audit sends: calibration and every
// check that runs.
func (a *Auditor) MaxPlanned() int {
	n := CalibrationRequests + len(a.cfg.Links)
	for _, p := range a.Plan() {
		n += p.Requests
	}
	return n
}

// Sent is how many requests the audit has sent.
func (a *Auditor) Sent() int { return int(a.sent.Load()) }

// templates compiles the operation's request, and its error body's, from
// the scenario.
func (a *Auditor) templates() error {
	var err error
	if a.tmpl, err = scenarios.NewTemplate("operation", a.sc.Operation.Request, http.MethodPost, a.getenv); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if a.cfg.ErrorBody != "" {
		r := a.sc.Operation.Request
		r.Body = a.cfg.ErrorBody
		if a.errTmpl, err = scenarios.NewTemplate("error body", r, http.MethodPost, a.getenv); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	return nil
}

// MaxRequests is the request cap in force.
func (a *Auditor) MaxRequests() int { return a.maxRequests }

// IDs returns the ids of every check, in order.
func IDs() []string {
	var out []string
	for _, c := range checks.ContractChecks() {
		out = append(out, c.ID)
	}
	return out
}

// newKey draws a fresh UUID v4.
func (a *Auditor) newKey() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return scenarios.NewKey(a.rnd)
}

// randHex draws n random hexadecimal characters.
func (a *Auditor) randHex(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(strings.ReplaceAll(a.newKey(), "-", ""))
	}
	return b.String()[:n]
}
