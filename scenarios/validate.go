package scenarios

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/theory/jsonpath"
)

// The invariant checks a scenario can name.
const (
	CheckAtMostOnce        = "at_most_once"
	CheckExactlyOnce       = "exactly_once"
	CheckSameResponse      = "same_response"
	CheckExactCounter      = "exact_counter"
	CheckConditionalUpdate = "conditional_update"
	CheckPayloadMismatch   = "payload_mismatch"
)

// checkOracle is the oracle kind each check reads; "" for none.
var checkOracle = map[string]string{
	CheckAtMostOnce:        "effects",
	CheckExactlyOnce:       "effects",
	CheckSameResponse:      "",
	CheckExactCounter:      "counter",
	CheckConditionalUpdate: "account",
	CheckPayloadMismatch:   "",
}

// Checks lists the invariant checks a scenario can name, sorted.
func Checks() []string {
	out := make([]string, 0, len(checkOracle))
	for c := range checkOracle {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Defaults, applied to fields the scenario leaves out.
const (
	DefaultMaxInFlight       = 512
	DefaultAttempts          = 5
	DefaultBackoffInitial    = 10 * time.Millisecond
	DefaultBackoffMax        = time.Second
	DefaultBackoffMultiplier = 2.0
	DefaultBackoffJitter     = 0.5
	DefaultQuiet             = 200 * time.Millisecond
	DefaultOracleConcurrency = 8
	DefaultDuplicateCopies   = 2
	DefaultRetention         = 24 * time.Hour
	DefaultReplayCount       = 1
)

// DefaultRetryOn is what is retried when retry.on is left out.
func DefaultRetryOn() []string { return []string{"fail", "info", "409", "429", "5xx"} }

// set reports whether the file gave path a (non-null) value. A scenario
// built in Go, with no Lines, sets nothing: its zero values are defaulted.
func (s *Scenario) set(path string) bool {
	_, ok := s.Lines[path]
	return ok
}

// applyDefaults fills every field the scenario left out. It is the one place
// defaults live. A field written explicitly keeps its value, even zero
// (jitter: 0 means no jitter), and is then validated as written.
func (s *Scenario) applyDefaults() {
	if s.Expect == "" {
		s.Expect = ExpectPass
	}
	method := func(r *Request, def string) {
		if r.Method == "" {
			r.Method = def
		}
		r.Method = strings.ToUpper(r.Method)
	}
	for i := range s.Setup {
		method(&s.Setup[i], "GET")
	}
	method(&s.Operation.Request, "POST")
	if b := s.Operation.Before; b != nil {
		method(&b.Request, "GET")
	}
	if s.Load.MaxInFlight == 0 && !s.set("load.max_in_flight") {
		s.Load.MaxInFlight = DefaultMaxInFlight
	}
	r := &s.Retry
	if r.Attempts == 0 && !s.set("retry.attempts") {
		r.Attempts = DefaultAttempts
	}
	if r.Backoff.Max == 0 && !s.set("retry.backoff.max") {
		r.Backoff.Max = Duration(DefaultBackoffMax)
	}
	if r.Backoff.Initial == 0 && !s.set("retry.backoff.initial") {
		r.Backoff.Initial = min(Duration(DefaultBackoffInitial), r.Backoff.Max)
	}
	if r.Backoff.Multiplier == 0 && !s.set("retry.backoff.multiplier") {
		r.Backoff.Multiplier = DefaultBackoffMultiplier
	}
	if r.Backoff.Jitter == 0 && !s.set("retry.backoff.jitter") {
		r.Backoff.Jitter = DefaultBackoffJitter
	}
	if r.On == nil && !s.set("retry.on") {
		r.On = DefaultRetryOn()
	}
	if s.Retention == 0 && !s.set("retention") {
		s.Retention = Duration(DefaultRetention)
	}
	if rp := s.Operation.Replay; rp != nil && rp.Count == 0 && !s.set("operation.replay.count") {
		rp.Count = DefaultReplayCount
	}
	if s.Quiet == 0 && !s.set("quiet") {
		s.Quiet = Duration(DefaultQuiet)
	}
	for i := range s.Faults {
		f := &s.Faults[i]
		if f.Kind == "duplicate" && f.Copies == 0 && !s.set(fmt.Sprintf("faults[%d].copies", i)) {
			f.Copies = DefaultDuplicateCopies
		}
	}
	for i := range s.Oracles {
		o := &s.Oracles[i]
		if e := o.Effects; e != nil {
			if e.Concurrency == 0 && !s.set(fmt.Sprintf("oracles[%d].effects.concurrency", i)) {
				e.Concurrency = DefaultOracleConcurrency
			}
			if e.PerKey != nil {
				method(&e.PerKey.Request, "GET")
			}
			if e.Bulk != nil {
				method(&e.Bulk.Request, "GET")
			}
		}
		if o.Counter != nil {
			method(&o.Counter.Request, "GET")
		}
		if a := o.Account; a != nil {
			method(&a.Request, "GET")
			method(&a.Applied.Request, "GET")
		}
	}
}

// problem is a diagnostic and the other fields it depends on, so that a
// field which did not decode does not also report what follows from it.
type problem struct {
	Diagnostic
	related []string
}

type checker struct {
	s   *Scenario
	out []problem
}

func (c *checker) add(field, msg, hint string, related ...string) {
	c.out = append(c.out, problem{
		Diagnostic: Diagnostic{Source: c.s.Source, Line: c.s.line(field), Field: field, Message: msg, Hint: hint},
		related:    related,
	})
}

// line is the line of path in the source, or of its closest parent that
// has one; 0 when none does.
func (s *Scenario) line(path string) int {
	for path != "" {
		if l, ok := s.Lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// Validate checks a loaded scenario (defaults applied, as Load and Parse
// do) and returns every problem at once, each at its line; nil when the
// scenario is valid. It changes nothing.
func (s *Scenario) Validate() Diagnostics {
	ps := s.validate()
	if len(ps) == 0 {
		return nil
	}
	ds := make(Diagnostics, len(ps))
	for i, p := range ps {
		ds[i] = p.Diagnostic
	}
	sortDiagnostics(ds)
	return ds
}

func (s *Scenario) validate() []problem {
	c := &checker{s: s}
	if strings.TrimSpace(s.Name) == "" {
		c.add("name", "name is required", "name: my-charges")
	}
	switch s.Expect {
	case ExpectPass, ExpectViolation:
	default:
		c.add("expect", fmt.Sprintf("unknown expectation %q", s.Expect), "expect: pass (every invariant holds) or expect: violation (a known-broken target is caught)")
	}
	if s.Target != "" {
		if _, err := parseTarget(s.Target); err != nil {
			var he *hintError
			errors.As(err, &he)
			c.add("target", he.msg, he.hint)
		}
	}
	for i, u := range s.Users {
		if strings.TrimSpace(u) == "" {
			c.add(fmt.Sprintf("users[%d]", i), "empty user name", "users: [alice, bob]")
		}
	}
	c.load()
	c.retry()
	c.faults()
	c.key()
	c.requests()
	c.replay()
	c.response()
	oracleKinds := c.oracles()
	c.invariants(oracleKinds)
	c.thresholds()
	if s.Quiet < 0 {
		c.add("quiet", "negative duration", "quiet: 200ms")
	}
	if s.Retention <= 0 {
		c.add("retention", fmt.Sprintf("retention must be above 0, got %s", s.Retention), "retention: 24h, how long the API keeps its idempotency keys")
	}
	return c.out
}

func (c *checker) load() {
	l := c.s.Load
	for _, f := range []struct {
		name string
		v    int
	}{{"ops", l.Ops}, {"concurrency", l.Concurrency}} {
		if f.v < 0 {
			c.add("load."+f.name, fmt.Sprintf("negative %s %d", f.name, f.v), "write a number above 0")
		}
	}
	if l.Duration < 0 {
		c.add("load.duration", "negative duration", "load.duration: 10s")
	}
	if l.Rate < 0 {
		c.add("load.rate", "negative rate", "load.rate: 200/s")
	}
	if l.Ops == 0 && l.Duration == 0 {
		c.add("load", "the load never ends: set load.ops or load.duration", "ops: 500 (stop after 500 ops) or duration: 10s", "load.ops", "load.duration")
	}
	switch {
	case l.Concurrency == 0 && l.Rate == 0:
		c.add("load", "set load.concurrency (closed model) or load.rate (open model)",
			"concurrency: 16 runs 16 workers that each send as soon as they are answered; rate: 200/s starts 200 ops a second whatever the answers do",
			"load.concurrency", "load.rate")
	case l.Concurrency > 0 && l.Rate > 0:
		c.add("load.rate", "set load.concurrency or load.rate, not both",
			"concurrency is the closed model (workers), rate the open model (arrivals); keep one", "load.concurrency")
	}
	if l.MaxInFlight < 1 {
		c.add("load.max_in_flight", fmt.Sprintf("max_in_flight must be at least 1, got %d", l.MaxInFlight), fmt.Sprintf("leave it out for %d", DefaultMaxInFlight))
	}
}

func (c *checker) retry() {
	r := c.s.Retry
	if r.Attempts < 1 {
		c.add("retry.attempts", fmt.Sprintf("attempts must be at least 1, got %d", r.Attempts), "attempts counts the first send: 1 means no retries, 5 means up to 4 retries")
	}
	b := r.Backoff
	if b.Initial < 0 || b.Max < 0 {
		c.add("retry.backoff", "negative backoff", "initial: 10ms, max: 1s")
	}
	if b.Initial > b.Max {
		c.add("retry.backoff.initial", fmt.Sprintf("initial backoff %s is above max %s", b.Initial, b.Max), "raise max or lower initial", "retry.backoff.max")
	}
	if b.Multiplier < 1 {
		c.add("retry.backoff.multiplier", fmt.Sprintf("multiplier must be at least 1, got %g", b.Multiplier), "multiplier: 2 doubles the wait after each retry")
	}
	if b.Jitter < 0 || b.Jitter > 1 {
		c.add("retry.backoff.jitter", fmt.Sprintf("jitter must be within 0..1, got %g", b.Jitter), "jitter: 0.5 takes up to half of each wait off at random")
	}
	for i, on := range r.On {
		if !validRetryOn(on) {
			c.add(fmt.Sprintf("retry.on[%d]", i), fmt.Sprintf("cannot retry on %q", on), "retry.on takes fail, info, a status like 409 or a class like 5xx")
		}
	}
}

func validRetryOn(on string) bool {
	switch on {
	case "fail", "info", "4xx", "5xx":
		return true
	}
	n, err := strconv.Atoi(on)
	return err == nil && len(on) == 3 && n >= 100 && n <= 599
}

// Retryable reports whether an attempt that ended with outcome (and status,
// for history.OK) is retried under the scenario's retry.on. A 2xx is never
// retried.
func (s *Scenario) Retryable(outcome history.Outcome, status int) bool {
	for _, on := range s.Retry.On {
		switch on {
		case "fail":
			if outcome == history.Fail {
				return true
			}
		case "info":
			if outcome == history.Info {
				return true
			}
		default:
			if outcome != history.OK || status/100 == 2 {
				continue
			}
			if strings.HasSuffix(on, "xx") && len(on) == 3 && status/100 == int(on[0]-'0') {
				return true
			}
			if n, err := strconv.Atoi(on); err == nil && n == status {
				return true
			}
		}
	}
	return false
}

// FaultSpecs converts the scenario's faults for faults.NewPlan.
func (s *Scenario) FaultSpecs() []faults.Spec {
	out := make([]faults.Spec, len(s.Faults))
	for i, f := range s.Faults {
		out[i] = faults.Spec{
			Kind:     f.Kind,
			Rate:     f.Rate,
			After:    time.Duration(f.After),
			Copies:   f.Copies,
			Delay:    time.Duration(f.Delay),
			Attempts: slices.Clone(f.Attempts),
		}
	}
	return out
}

func (c *checker) faults() {
	kinds := faults.Kinds()
	sum := 0.0
	specs := c.s.FaultSpecs()
	for i, f := range c.s.Faults {
		at := fmt.Sprintf("faults[%d]", i)
		kindOK := true
		if f.Kind == "" {
			c.add(at+".kind", "kind is required", "kind: one of "+strings.Join(kinds, ", "))
			kindOK = false
		} else if !slices.Contains(kinds, f.Kind) {
			c.add(at+".kind", fmt.Sprintf("unknown fault %q", f.Kind), suggest(f.Kind, kinds, "faults"))
			kindOK = false
		}
		if f.Rate == 0 && !c.s.set(at+".rate") {
			c.add(at+".rate", "rate is required", "rate is the share of attempts hit: 0.2 is one in five")
		}
		if f.Rate > 0 && f.Rate <= 1 {
			sum += f.Rate
		}
		_, err := faults.New(specs[i])
		for _, se := range specErrors(err) {
			if se.Field == "kind" && !kindOK {
				continue
			}
			c.add(at+"."+se.Field, se.Problem, faultHint(f.Kind, se.Field))
		}
		if err != nil && len(specErrors(err)) == 0 {
			c.add(at, err.Error(), "")
		}
	}
	if sum > 1+1e-9 {
		c.add("faults", fmt.Sprintf("fault rates add up to %g, above 1", sum), "at most one fault hits an attempt: lower the rates so they sum to 1 or less")
	}
}

// specErrors flattens the *faults.SpecError values joined in err.
func specErrors(err error) []*faults.SpecError {
	var out []*faults.SpecError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if se, ok := err.(*faults.SpecError); ok {
			out = append(out, se)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

func faultHint(kind, field string) string {
	switch field {
	case "rate":
		return "rate is the share of attempts hit: 0.2 is one in five"
	case "attempts":
		return "attempts: [1] hits first sends only"
	case "after", "copies", "delay":
		if field == map[string]string{"timeout": "after", "duplicate": "copies", "delay": "delay"}[kind] {
			break
		}
		return "remove " + field + " from this " + kind + " fault"
	}
	switch kind {
	case "timeout":
		return "a timeout needs after: the client deadline, like after: 50ms"
	case "duplicate":
		return "a duplicate needs copies: 2 or more"
	case "delay":
		return "a delay needs delay: the wait, like delay: 20ms"
	}
	return ""
}

var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func (c *checker) key() {
	k := c.s.Operation.Key
	n := 0
	if k.Header != "" {
		n++
		if !headerName.MatchString(k.Header) {
			c.add("operation.key.header", fmt.Sprintf("%q is not a valid header name", k.Header), "key: {header: Idempotency-Key}")
		}
	}
	if k.BodyField != "" {
		n++
		if strings.TrimSpace(k.BodyField) != k.BodyField {
			c.add("operation.key.body_field", "the field name has surrounding spaces", "key: {body_field: op_id}")
		}
		if c.s.Operation.Body == "" {
			c.add("operation.body", "key.body_field needs a JSON object body to put the key in", "body: '{}' sends {\"op_id\": KEY}", "operation.key.body_field")
		}
	}
	if k.None {
		n++
	}
	if k.Value != "" {
		c.keyValue(k.Value)
	}
	switch {
	case n == 0:
		c.add("operation.key", "say where the op's key goes: exactly one of header, body_field or none",
			"key: {header: Idempotency-Key}, key: {body_field: op_id}, or key: {none: true} for an endpoint that takes no key",
			"operation.key.header", "operation.key.body_field", "operation.key.none")
	case n > 1:
		c.add("operation.key", "set exactly one of header, body_field or none", "the key goes to one place",
			"operation.key.header", "operation.key.body_field", "operation.key.none")
	}
}

// keyValue checks operation.key.value: it compiles and renders with sample
// values to a usable key, and does not read .Key, which it defines.
func (c *checker) keyValue(text string) {
	const at = "operation.key.value"
	if keyRef.MatchString(text) {
		c.add(at, "the key template reads .Key, the value it defines", `build it from .Seq, .User and the functions: "order-{{.Seq}}", "shared-{{div .Seq 2}}"`)
		return
	}
	sample := Vars{Seq: 1}
	if len(c.s.Users) > 0 {
		sample.User = c.s.Users[0]
	}
	t, err := NewText(at, text, nil)
	var key string
	if err == nil {
		key, err = t.Render(sample)
	}
	if err != nil {
		c.templateErr(at, err)
		return
	}
	if strings.TrimSpace(key) == "" {
		c.add(at, "the key template renders an empty key", `value: "order-{{.Seq}}"`)
	}
}

var keyRef = regexp.MustCompile(`\.Key\b`)

// replay checks operation.replay: a count, a wait within the retention,
// and a body that renders to JSON.
func (c *checker) replay() {
	rp := c.s.Operation.Replay
	if rp == nil {
		return
	}
	const at = "operation.replay"
	if rp.Count < 1 {
		c.add(at+".count", fmt.Sprintf("count must be at least 1, got %d", rp.Count), "count is how many replays follow each acknowledged op; leave it out for 1")
	}
	if rp.After < 0 {
		c.add(at+".after", "negative duration", "after: 1500ms")
	}
	if ret := c.s.Retention; ret > 0 && rp.After >= ret {
		c.add(at+".after", fmt.Sprintf("replay after %s is not within the retention of %s", rp.After, ret),
			"a replay after the retention may rightly be executed again: wait less than retention, or raise retention to what the API promises",
			"retention")
	}
	if rp.Body == "" {
		return
	}
	sample := Vars{Key: "00000000-0000-4000-8000-000000000000", Attempt: 2}
	if len(c.s.Users) > 0 {
		sample.User = c.s.Users[0]
	}
	if b := c.s.Operation.Before; b != nil {
		sample.Vars = map[string]string{}
		for name := range b.Vars {
			sample.Vars[name] = "0"
		}
	}
	r := c.s.Operation.Request
	r.Body = rp.Body
	c.body(at+".body", r, sample, c.s.Operation.Key.BodyField != "")
}

// requests compiles every request template and renders it once with sample
// values, so a typo like {{.Kye}} is found before the run.
func (c *checker) requests() {
	s := c.s
	for i, r := range s.Setup {
		c.request(fmt.Sprintf("setup[%d]", i), r, Vars{}, false)
	}
	op := s.Operation
	sample := Vars{Key: "00000000-0000-4000-8000-000000000000", Seq: 0, Attempt: 1}
	if len(s.Users) > 0 {
		sample.User = s.Users[0]
	}
	if b := op.Before; b != nil {
		c.request("operation.before", b.Request, sample, false)
		if len(b.Vars) == 0 {
			c.add("operation.before.vars", "before captures nothing", "vars: {version: $.version} makes {{.Vars.version}} available to the operation")
		}
		sample.Vars = map[string]string{}
		for name, p := range b.Vars {
			at := "operation.before.vars." + name
			if !ident.MatchString(name) {
				c.add(at, fmt.Sprintf("variable name %q is not an identifier", name), "use letters, digits and _: version, etag")
			}
			c.jsonPath(at, p)
			sample.Vars[name] = "0"
		}
	}
	c.request("operation", op.Request, sample, op.Key.BodyField != "")
}

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var methodName = regexp.MustCompile(`^[A-Z]+$`)

// request checks one request: path present, every template part compiles
// (as NewTemplate compiles it) and renders with sample values, and a JSON
// body renders to JSON (an object when wantObject).
func (c *checker) request(at string, r Request, sample Vars, wantObject bool) {
	if r.Method != "" && !methodName.MatchString(strings.ToUpper(r.Method)) {
		c.add(at+".method", fmt.Sprintf("bad method %q", r.Method), "method: POST")
	}
	if strings.TrimSpace(r.Path) == "" {
		c.add(at+".path", "path is required", "path: /charges (joined to the target)")
	} else if p, ok := c.render(at+".path", r.Path, sample); ok {
		if _, err := Join(&url.URL{Scheme: "http", Host: "target.invalid"}, p); err != nil {
			c.add(at+".path", err.Error(), "write a path relative to the target: /charges?limit=1")
		} else if strings.HasPrefix(p, "//") {
			c.add(at+".path", fmt.Sprintf("path %q names a host", p), "write a path relative to the target: /charges?limit=1")
		}
	}
	for name, v := range r.Headers {
		if !headerName.MatchString(name) {
			c.add(at+".headers."+name, fmt.Sprintf("%q is not a valid header name", name), "headers: {Authorization: 'Bearer {{.User}}'}")
		}
		c.render(at+".headers."+name, v, sample)
	}
	c.body(at+".body", r, sample, wantObject)
}

// render compiles and executes one template part with sample values,
// reporting a template error at field.
func (c *checker) render(field, text string, sample Vars) (string, bool) {
	if !strings.Contains(text, "{{") {
		return text, true
	}
	t, err := parse(field, text, funcs(nil))
	if err == nil {
		var out string
		if out, err = exec(t, sample); err == nil {
			return out, true
		}
	}
	c.templateErr(field, err)
	return "", false
}

// body checks r.Body, reported at field: it renders with sample values and,
// unless r's Content-Type says otherwise, to JSON (an object when
// wantObject).
func (c *checker) body(field string, r Request, sample Vars, wantObject bool) {
	if r.Body == "" {
		return
	}
	body, ok := c.render(field, r.Body, sample)
	if !ok {
		return
	}
	for name, v := range r.Headers {
		if strings.EqualFold(name, "Content-Type") && !strings.Contains(strings.ToLower(v), "json") {
			return
		}
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		c.add(field, fmt.Sprintf("the body is not JSON once rendered (%v): %s", err, clip(body)),
			`quote strings, including templated ones: '{"customer":"cus_{{.Seq}}"}'`)
		return
	}
	if _, ok := v.(map[string]any); wantObject && !ok {
		c.add(field, "key.body_field needs the body to be a JSON object", `body: '{}'`, "operation.key.body_field")
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

func (c *checker) templateErr(field string, err error) {
	msg := err.Error()
	var te *TemplateError
	if errors.As(err, &te) {
		field = te.Field
		msg = strings.TrimPrefix(te.Err.Error(), "template: ")
		msg = strings.TrimPrefix(msg, te.Field+":")
		msg = "bad template: " + msg
	}
	c.add(field, msg, c.templateHint(msg))
}

var (
	badField = regexp.MustCompile(`can't evaluate field (\w+)`)
	badVar   = regexp.MustCompile(`map has no entry for key "([^"]*)"`)
)

func (c *checker) templateHint(msg string) string {
	const all = "templates see .Key .Seq .User .Attempt .Vars.NAME and the functions env, randInt, uuid, add, mod, div: {{.Key}}, {{randInt . 1 100}}"
	if m := badField.FindStringSubmatch(msg); m != nil {
		if best, ok := closest(m[1], []string{"Key", "Seq", "User", "Attempt", "Vars"}); ok {
			return "did you mean ." + best + "? " + all
		}
	}
	if m := badVar.FindStringSubmatch(msg); m != nil {
		b := c.s.Operation.Before
		if b == nil || len(b.Vars) == 0 {
			return "only the operation sees .Vars, filled by operation.before.vars: {" + m[1] + ": $.path}"
		}
		names := make([]string, 0, len(b.Vars))
		for n := range b.Vars {
			names = append(names, n)
		}
		slices.Sort(names)
		return "operation.before.vars captures " + strings.Join(names, ", ") + "; setup and oracles see no .Vars"
	}
	return all
}

func (c *checker) jsonPath(at, p string) {
	if strings.TrimSpace(p) == "" {
		c.add(at, "a JSONPath is required", "write an RFC 9535 JSONPath: $.id")
		return
	}
	if _, err := jsonpath.Parse(p); err != nil {
		c.add(at, fmt.Sprintf("bad JSONPath %q: %v", p, err), "write an RFC 9535 JSONPath: $.id, $.counts, $.items[0].amount")
	}
}

func (c *checker) response() {
	for name, p := range c.s.Response.Fields {
		c.jsonPath("response.fields."+name, p)
	}
	for i, p := range c.s.Response.Volatile {
		c.jsonPath(fmt.Sprintf("response.volatile[%d]", i), p)
	}
}

// oracles checks each oracle and returns the kind of each, by name.
func (c *checker) oracles() map[string]string {
	kinds := map[string]string{}
	oracleVars := Vars{Key: "00000000-0000-4000-8000-000000000000"}
	for i, o := range c.s.Oracles {
		at := fmt.Sprintf("oracles[%d]", i)
		if o.Name == "" {
			c.add(at+".name", "name is required", "name: ledger (invariants name it)")
		} else if _, dup := kinds[o.Name]; dup {
			c.add(at+".name", fmt.Sprintf("two oracles are named %q", o.Name), "give each oracle its own name")
		}
		n := 0
		kind := ""
		if e := o.Effects; e != nil {
			n++
			kind = "effects"
			ea := at + ".effects"
			sources := 0
			for _, set := range []bool{e.PerKey != nil, e.Bulk != nil, e.SQL != nil, e.Redis != nil} {
				if set {
					sources++
				}
			}
			switch {
			case sources > 1:
				c.add(ea, "set one of per_key, bulk, sql or redis", "bulk reads every count in one GET; per_key makes one GET per key; sql and redis read the stores")
			case e.SQL != nil:
				c.sqlEffects(ea+".sql", e.SQL)
			case e.Redis != nil:
				c.redisEffects(ea+".redis", e.Redis)
			case e.PerKey != nil:
				c.probe(ea+".per_key", *e.PerKey, oracleVars)
				if !mentionsKey(e.PerKey.Request) {
					c.add(ea+".per_key", "per_key reads one key at a time but never sends {{.Key}}", "path: /charges?idempotency_key={{.Key}}")
				}
			case e.Bulk != nil:
				c.probe(ea+".bulk", *e.Bulk, oracleVars)
			default:
				c.add(ea, "set one of per_key, bulk, sql or redis", "bulk: {path: /charges/counts, value: $.counts}")
			}
			if e.Concurrency < 1 {
				c.add(ea+".concurrency", fmt.Sprintf("concurrency must be at least 1, got %d", e.Concurrency), fmt.Sprintf("leave it out for %d", DefaultOracleConcurrency))
			}
		}
		if o.Counter != nil {
			n++
			kind = "counter"
			ca := at + ".counter"
			switch cn := o.Counter; {
			case cn.SQL != nil && cn.Redis != nil, (cn.SQL != nil || cn.Redis != nil) && (cn.Path != "" || cn.Value != ""):
				c.add(ca, "a counter reads one source: a request (path and value), sql or redis", "split it into two oracles")
			case cn.SQL != nil:
				c.url(ca+".sql.url", cn.SQL.URL, "postgres://", `url: '{{env "LEDGER_URL"}}'`)
				if strings.TrimSpace(cn.SQL.Query) == "" {
					c.add(ca+".sql.query", "query is required", "query: SELECT likes FROM posts WHERE id = 'post-1'")
				}
			case cn.Redis != nil:
				c.url(ca+".redis.url", cn.Redis.URL, "redis://", `url: '{{env "REDIS_URL"}}'`)
				if cn.Redis.Key == "" {
					c.add(ca+".redis.key", "key is required", "key: likes:post-1")
				}
			default:
				c.probe(ca, cn.Probe, oracleVars)
			}
		}
		if a := o.Account; a != nil {
			n++
			kind = "account"
			aa := at + ".account"
			c.request(aa, a.Request, oracleVars, false)
			c.jsonPath(aa+".balance", a.Balance)
			c.jsonPath(aa+".version", a.Version)
			c.request(aa+".applied", a.Applied.Request, oracleVars, false)
			c.jsonPath(aa+".applied.list", a.Applied.List)
			c.jsonPath(aa+".applied.key", a.Applied.Key)
			c.jsonPath(aa+".applied.amount", a.Applied.Amount)
		}
		switch {
		case n == 0:
			c.add(at, "an oracle needs one of effects, counter or account", "effects counts effects per key; counter reads one number; account reads a balance and version")
		case n > 1:
			c.add(at, "an oracle reads one thing: set one of effects, counter or account", "split it into two oracles")
		}
		if o.Name != "" {
			if _, dup := kinds[o.Name]; !dup {
				kinds[o.Name] = kind
			}
		}
	}
	return kinds
}

func (c *checker) sqlEffects(at string, q *SQLEffects) {
	c.url(at+".url", q.URL, "postgres://", `url: '{{env "LEDGER_URL"}}'`)
	switch {
	case q.PerKey != "" && q.Grouped != "":
		c.add(at, "set per_key or grouped, not both", "grouped reads every count in one query")
	case q.PerKey != "":
		if !strings.Contains(q.PerKey, "$1") {
			c.add(at+".per_key", "per_key must use $1, the key", "per_key: SELECT count(*) FROM payments WHERE idempotency_key = $1")
		}
	case q.Grouped == "":
		c.add(at, "set per_key or grouped", "grouped: SELECT idempotency_key, count(*) FROM payments GROUP BY 1")
	}
}

func (c *checker) redisEffects(at string, r *RedisEffects) {
	c.url(at+".url", r.URL, "redis://", `url: '{{env "REDIS_URL"}}'`)
	if r.Pattern != "" && strings.Count(r.Pattern, "%s") != 1 {
		c.add(at+".pattern", fmt.Sprintf("pattern %q must hold %%s exactly once, where the key goes", r.Pattern), "pattern: 'idem:%s'")
	}
	if r.Mode != "" && r.Mode != "exists" && r.Mode != "get" {
		c.add(at+".mode", fmt.Sprintf("unknown mode %q", r.Mode), "mode: exists (1 when the key is there) or get (the integer stored)")
	}
}

// url checks a database URL: a template reading a secret from the
// environment, or a URL with the given scheme.
func (c *checker) url(at, u, scheme, hint string) {
	switch {
	case u == "":
		c.add(at, "url is required", hint+" (secrets come from the environment)")
	case strings.Contains(u, "{{"):
		if _, err := NewText(at, u, nil); err != nil {
			c.add(at, err.Error(), hint)
		}
	case !strings.HasPrefix(u, scheme) && !(scheme == "postgres://" && strings.HasPrefix(u, "postgresql://")) && !(scheme == "redis://" && strings.HasPrefix(u, "rediss://")):
		c.add(at, fmt.Sprintf("url must start with %s", scheme), hint)
	}
}

func mentionsKey(r Request) bool {
	if strings.Contains(r.Path, ".Key") || strings.Contains(r.Body, ".Key") {
		return true
	}
	for _, v := range r.Headers {
		if strings.Contains(v, ".Key") {
			return true
		}
	}
	return false
}

func (c *checker) probe(at string, p Probe, v Vars) {
	c.request(at, p.Request, v, false)
	c.jsonPath(at+".value", p.Value)
}

func (c *checker) invariants(kinds map[string]string) {
	s := c.s
	if len(s.Invariants) == 0 && s.Thresholds == (Thresholds{}) {
		c.add("invariants", "the scenario checks nothing", "invariants: [{check: exactly_once, oracle: ledger}]")
	}
	if len(s.Invariants) == 0 && s.Expect == ExpectViolation {
		c.add("expect", "expect: violation needs an invariant that can be violated", "add invariants, or expect: pass")
	}
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	slices.Sort(names)
	seen := map[Invariant]bool{}
	for i, inv := range s.Invariants {
		at := fmt.Sprintf("invariants[%d]", i)
		want, known := checkOracle[inv.Check]
		if !known {
			c.add(at+".check", fmt.Sprintf("unknown check %q", inv.Check), suggest(inv.Check, Checks(), "check"))
			continue
		}
		if seen[inv] {
			c.add(at, fmt.Sprintf("%s on %q is listed twice", inv.Check, inv.Oracle), "keep one")
		}
		seen[inv] = true
		if inv.Check == CheckPayloadMismatch && (s.Operation.Replay == nil || s.Operation.Replay.Body == "") {
			c.add(at+".check", "payload_mismatch needs operation.replay.body: another payload to send under each acknowledged op's key",
				`operation: {replay: {after: 100ms, body: '{"amount":999,"currency":"usd","customer":"cus_{{.Seq}}"}'}}`, "operation.replay")
		}
		if want == "" {
			if inv.Oracle != "" {
				c.add(at+".oracle", inv.Check+" reads no oracle: it compares the answers in the history", "remove oracle")
			}
			continue
		}
		if inv.Oracle == "" {
			c.add(at+".oracle", fmt.Sprintf("%s needs an %s oracle", inv.Check, want), oracleHint(want, names, kinds))
			continue
		}
		got, ok := kinds[inv.Oracle]
		switch {
		case !ok:
			c.add(at+".oracle", fmt.Sprintf("no oracle named %q", inv.Oracle), oracleHint(want, names, kinds))
		case got != want && got != "":
			c.add(at+".oracle", fmt.Sprintf("%s needs an %s oracle, %q is a %s oracle", inv.Check, want, inv.Oracle, got), oracleHint(want, names, kinds))
		}
	}
}

func oracleHint(want string, names []string, kinds map[string]string) string {
	var fit []string
	for _, n := range names {
		if kinds[n] == want {
			fit = append(fit, n)
		}
	}
	if len(fit) > 0 {
		return "oracles of that kind: " + strings.Join(fit, ", ")
	}
	return "add an oracle with " + want + ": and name it here"
}

func (c *checker) thresholds() {
	t := c.s.Thresholds
	order := []struct {
		name string
		d    Duration
	}{{"p50", t.P50}, {"p90", t.P90}, {"p99", t.P99}, {"p99.9", t.P999}, {"max", t.Max}}
	var prev string
	var prevD Duration
	for _, o := range order {
		if o.d < 0 {
			c.add("thresholds."+o.name, "negative threshold", "thresholds: {p99: 250ms}")
			continue
		}
		if o.d == 0 {
			continue
		}
		if prev != "" && o.d < prevD {
			c.add("thresholds."+o.name, fmt.Sprintf("%s %s is below %s %s", o.name, o.d, prev, prevD), "a higher percentile cannot be faster", "thresholds."+prev)
		}
		prev, prevD = o.name, o.d
	}
	if e := t.ErrorRate; e != nil && (*e < 0 || *e > 1) {
		c.add("thresholds.error_rate", fmt.Sprintf("error_rate must be within 0..1, got %g", *e), "error_rate: 0.01 allows 1% of ops to end without a 2xx")
	}
}

// TargetURL is the base URL requests are joined to: override (from
// --target or IDEMCHECK_TARGET) when set, else the scenario's target. It
// must be an absolute http or https URL with a host.
func (s *Scenario) TargetURL(override string) (*url.URL, error) {
	raw, field, line := override, "", 0
	src := ""
	if raw == "" {
		raw, field, line, src = s.Target, "target", s.line("target"), s.Source
	}
	if raw == "" {
		return nil, Diagnostics{{Source: s.Source, Field: "target", Message: "no target URL",
			Hint: "set target: http://localhost:8080 in the scenario, --target or IDEMCHECK_TARGET"}}
	}
	u, err := parseTarget(raw)
	if err != nil {
		var he *hintError
		errors.As(err, &he)
		return nil, Diagnostics{{Source: src, Line: line, Field: field, Message: he.msg, Hint: he.hint}}
	}
	return u, nil
}

func parseTarget(raw string) (*url.URL, error) {
	const hint = "write a base URL like http://localhost:8080 or https://staging.example.com/api"
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &hintError{msg: fmt.Sprintf("bad target URL: %v", errors.Unwrap(err)), hint: hint}
	}
	raw = u.Redacted() // a password in the URL never reaches a message
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, &hintError{msg: fmt.Sprintf("target %q is not an http or https URL", raw), hint: hint}
	}
	if u.Host == "" {
		return nil, &hintError{msg: fmt.Sprintf("target %q has no host", raw), hint: hint}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, &hintError{msg: fmt.Sprintf("target %q has a query or fragment", raw), hint: "put queries in the request paths; the target is a base URL"}
	}
	return u, nil
}
