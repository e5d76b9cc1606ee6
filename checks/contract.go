package checks

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/history"
)

// The contract checks of an audit (docs/audit.md) are judged here, from
// the audit's history alone: the probes in package audit decide what to
// send and in which order; every rule about what the answers and the
// effects mean lives in this file and contract_checks.go, pure, so that a
// saved audit is judged again exactly as it was live.
//
//	audit's history ──> ops by check (Op.Check), attempts by role (Attempt.Label)
//	                      │                    effects per check (Reading named by the id)
//	                      v
//	                  judgeCxx ──> ContractCheck ──> Scorecard (met | not_met | inconclusive)

// ScorecardFormat is the version of the scorecard's JSON form
// (docs/audit.md): 2 since its result speaks the run's vocabulary.
const ScorecardFormat = 2

// Severity says how bad a finding is.
type Severity string

// The severities, worst first.
const (
	// Critical: a duplicate effect or a data leak.
	Critical Severity = "critical"
	// High: a stuck key, a wrong replay, a 5xx, a hang.
	High Severity = "high"
	// Medium: a deviation from the profile.
	Medium Severity = "medium"
	// Info: a policy worth knowing.
	Info Severity = "info"
)

// Rank orders severities: Critical highest, 0 for none.
func (s Severity) Rank() int {
	switch s {
	case Critical:
		return 4
	case High:
		return 3
	case Medium:
		return 2
	case Info:
		return 1
	}
	return 0
}

// Skipped means a check did not run (not applicable, not configured, over
// the request cap, interrupted); its summary says why.
const Skipped Status = "skipped"

// Judged-by values of a contract check.
const (
	// ByEffects: the check read the effects oracle.
	ByEffects = "effects"
	// ByAnswers: the check judged from the answers alone.
	ByAnswers = "answers"
)

// Scorecard is an audit's judgement. Its JSON form is stable and
// documented in docs/audit.md; slices are never null.
type Scorecard struct {
	FormatVersion int `json:"format_version"`
	// Target is the audited URL (the first target's), redacted.
	Target string `json:"target"`
	// Method is the audited request's method.
	Method string `json:"method"`
	// Profile names the profile the codes were judged against.
	Profile string `json:"profile"`
	// Oracle says how effects were counted: the effects oracle's request,
	// or "none" (every check judged from the answers alone).
	Oracle string `json:"oracle"`
	// Requests is how many requests the audit sent (oracle reads left
	// out).
	Requests int `json:"requests"`
	// Checks are the checks in order, C01 first.
	Checks []ContractCheck `json:"checks"`
	// Result is Met, NotMet or Inconclusive; Why says why in a sentence.
	Result Result `json:"result"`
	Why    string `json:"why"`
	// FailOn is the failing severity the result was decided with ("" or
	// "medium").
	FailOn string `json:"fail_on,omitempty"`
	// Interrupted is true when the audit was stopped before its end: the
	// checks left were skipped.
	Interrupted bool `json:"interrupted,omitempty"`
}

// ContractCheck is the judgement of one contract check.
type ContractCheck struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Severity is the severity of the worst finding of a failed check, and
	// the worst a check can find otherwise.
	Severity Severity `json:"severity"`
	// Result is Pass, Fail, Unknown or Skipped.
	Result Status `json:"result"`
	// Summary says what was sent and seen, and why the result is what it
	// is (the reason of a skipped or unknown check).
	Summary string `json:"summary"`
	// JudgedBy is ByEffects or ByAnswers ("" for a skipped check).
	JudgedBy string `json:"judged_by,omitempty"`
	// Evidence are the exchanges behind the result; never null.
	Evidence []Evidence `json:"evidence"`
}

// Evidence is one request of a probe and its answer, from the history:
// secrets were masked when it was recorded, bodies bounded.
type Evidence struct {
	// Probe names the request within the check: "round 2: copy 3".
	Probe string `json:"probe"`
	// Request is the method and URL.
	Request string `json:"request"`
	// Key is the idempotency key sent; absent when none was.
	Key string `json:"key,omitempty"`
	// Headers are the request headers besides the key, credentials masked.
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the start of the request body.
	Body string `json:"body,omitempty"`
	// Fault is the fault injected into the request, if any.
	Fault string `json:"fault,omitempty"`
	// Status is the answer's status; 0 when none arrived.
	Status int `json:"status,omitempty"`
	// Answer is the start of the answer's body.
	Answer string `json:"answer,omitempty"`
	// AnswerHeaders are the answer's idempotency headers.
	AnswerHeaders map[string]string `json:"answer_headers,omitempty"`
	// Hidden: the answer reached the network but never the client (the
	// answer a drop_ack hid).
	Hidden bool `json:"hidden,omitempty"`
	// Error is the transport error, when no answer arrived.
	Error string `json:"error,omitempty"`
	// Effects is the oracle's count for Key after the probe, when read.
	Effects *int `json:"effects,omitempty"`
}

// Failed reports whether the check failed at or above the failing
// severity: critical and high, and medium too when failOn is "medium".
func (c ContractCheck) Failed(failOn string) bool {
	if c.Result != Fail {
		return false
	}
	limit := High
	if failOn == string(Medium) {
		limit = Medium
	}
	return c.Severity.Rank() >= limit.Rank()
}

// Counts returns how many checks have each result.
func (s *Scorecard) Counts() map[Status]int {
	n := map[Status]int{}
	for _, c := range s.Checks {
		n[c.Result]++
	}
	return n
}

// contractDef is one contract check: what it is, and its judge.
type contractDef struct {
	id, name string
	// severity is the worst the check can find.
	severity Severity
	judge    func(j *contractRun, ops []probeOp)
}

// ContractInfo names a contract check and the worst it can find.
type ContractInfo struct {
	ID, Name string
	Severity Severity
	// Webhook: the check runs only on a webhook receiver (W01).
	Webhook bool
}

// ContractChecks returns every contract check in the order an audit runs
// them.
func ContractChecks() []ContractInfo {
	out := make([]ContractInfo, len(contractDefs))
	for i, d := range contractDefs {
		out[i] = ContractInfo{ID: d.id, Name: d.name, Severity: d.severity, Webhook: strings.HasPrefix(d.id, "W")}
	}
	return out
}

// JudgeContract judges an audit's history: every check its
// Meta.Judge.Contract lists, on the ops its probes sent and the effects
// read. A history without a contract gives nil.
func JudgeContract(h *history.History) *Scorecard {
	ct := h.Meta.Judge.Contract
	if ct == nil {
		return nil
	}
	prof := h.Meta.Judge.Profile
	sc := &Scorecard{FormatVersion: ScorecardFormat, Target: ct.URL, Method: ct.Method, Profile: prof.Name,
		Oracle: cmp.Or(ct.Oracle, "none"), Requests: ct.Requests, Checks: []ContractCheck{},
		FailOn: h.Meta.Judge.FailOn, Interrupted: h.Meta.Interrupted}
	h.Sort()
	byCheck := map[string][]probeOp{}
	for i, op := range h.Ops {
		byCheck[op.Check] = append(byCheck[op.Check], probeOp{Op: op, atts: h.AttemptsOf(i)})
	}
	minted := mintedKeys(h)
	shared := sharedIdentity(byCheck[history.CheckCalibration])
	readings := map[string]*history.Reading{}
	for i := range h.Readings {
		readings[h.Readings[i].Oracle] = &h.Readings[i]
	}
	defs := map[string]contractDef{}
	for _, d := range contractDefs {
		defs[d.id] = d
	}
	for _, cc := range ct.Checks {
		d, ok := defs[cc.ID]
		if !ok {
			sc.Checks = append(sc.Checks, ContractCheck{ID: cc.ID, Name: "unknown", Result: Unknown, Evidence: []Evidence{},
				Summary: fmt.Sprintf("this idemcheck knows no check %q", cc.ID)})
			continue
		}
		j := &contractRun{ct: ct, cc: cc, prof: prof, oracle: ct.Oracle != "", reading: readings[cc.ID], readings: readings, minted: minted,
			nemesis: h.Meta.Nemesis, shared: shared}
		switch ops := byCheck[cc.ID]; {
		case cc.Skip != "":
			j.skip = cc.Skip
		case len(ops) == 0:
			// A probe that sent nothing leaves nothing to judge.
			j.unknown("the probe sent no request")
		default:
			d.judge(j, ops)
		}
		sc.Checks = append(sc.Checks, j.result(d))
	}
	sc.Result, sc.Why = decideContract(sc.Checks, sc.FailOn, sc.Interrupted)
	return sc
}

// decideContract is an audit's result: not met when a check failed at or
// above the failing severity, inconclusive when no check could be judged
// or the audit was interrupted, met otherwise.
func decideContract(cs []ContractCheck, failOn string, interrupted bool) (Result, string) {
	var failed []string
	judged := false
	for _, c := range cs {
		if c.Result == Pass || c.Result == Fail {
			judged = true
		}
		if c.Failed(failOn) {
			failed = append(failed, fmt.Sprintf("%s %s (%s)", c.ID, c.Name, c.Severity))
		}
	}
	switch {
	case len(failed) > 0:
		return NotMet, "contract violated: " + strings.Join(failed, ", ")
	case !judged:
		return Inconclusive, "no check could be judged: every check was unknown or skipped"
	case interrupted:
		return Inconclusive, "no check failed on what ran, but the audit was interrupted before its end"
	}
	return Met, "no check failed at or above the failing severity"
}

// probeOp is one op of a probe with its attempts.
type probeOp struct {
	history.Op
	atts []history.Attempt
}

// role returns the op's attempts whose label's role (Role) is role, in
// order.
func (o probeOp) role(role string) []*history.Attempt {
	var out []*history.Attempt
	for i := range o.atts {
		if Role(o.atts[i].Label) == role {
			out = append(out, &o.atts[i])
		}
	}
	return out
}

// one returns the op's first attempt of role, nil when none.
func (o probeOp) one(role string) *history.Attempt {
	if l := o.role(role); len(l) > 0 {
		return l[0]
	}
	return nil
}

// copies returns the op's attempts whose role is role followed by a
// number ("copy 3", "body 2"): the concurrent copies of a round.
func (o probeOp) copies(role string) []*history.Attempt {
	var out []*history.Attempt
	for i := range o.atts {
		n, ok := strings.CutPrefix(Role(o.atts[i].Label), role+" ")
		if _, err := strconv.Atoi(n); ok && err == nil {
			out = append(out, &o.atts[i])
		}
	}
	return out
}

// last returns the op's last attempt of role, nil when none.
func (o probeOp) last(role string) *history.Attempt {
	if l := o.role(role); len(l) > 0 {
		return l[len(l)-1]
	}
	return nil
}

// Label names a probe's request: its round (0 for a probe of one round),
// its role (one of the Role constants) and an optional detail shown after
// it ("first, abandoned after 2ms").
func Label(round int, role, detail string) string {
	s := role
	if detail != "" {
		s += ", " + detail
	}
	if round > 0 {
		s = "round " + strconv.Itoa(round) + ": " + s
	}
	return s
}

// Role is the role of a probe's request, from its label (Label).
func Role(label string) string {
	if _, rest, ok := strings.Cut(label, ": "); ok && strings.HasPrefix(label, "round ") {
		label = rest
	}
	role, _, _ := strings.Cut(label, ", ")
	return role
}

// contractRun collects what one check found.
type contractRun struct {
	ct      *history.Contract
	cc      history.ContractCheck
	prof    history.Profile
	oracle  bool             // the audit counted effects
	reading *history.Reading // the check's effects reading; nil when none was taken
	// readings are every effects reading of the audit, by name: a check
	// may take a second one ("C02 quoted") that may fail on its own.
	readings map[string]*history.Reading
	// minted are, where the API minted the keys, every key an op's
	// answers minted, by the op's key: the op's effects are theirs.
	minted map[string][]string

	// nemesis are the audit's crashes of the API (C28), window N being
	// round N's.
	nemesis []history.NemesisWindow
	// shared is the identity the answers of the calibration's fresh keys
	// shared ("id post_1": a like answers with the post it counts), ""
	// when they named two resources: an answer then does not tell one
	// execution from another across keys (sharedAnswer).
	shared     string
	sharedSaid bool

	skip     string
	findings []finding
	unknowns []string
	pass     string
	notes    []string
	shown    []*history.Attempt
	counted  bool // effects were read
}

type finding struct {
	sev Severity
	msg string
}

// maxEvidence bounds the exchanges a check shows.
const maxEvidence = 24

func (c *contractRun) fail(sev Severity, format string, args ...any) {
	c.findings = append(c.findings, finding{sev, fmt.Sprintf(format, args...)})
}

func (c *contractRun) unknown(format string, args ...any) {
	c.unknowns = append(c.unknowns, fmt.Sprintf(format, args...))
}

func (c *contractRun) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// show adds attempts to the evidence (nil ones left out).
func (c *contractRun) show(as ...*history.Attempt) {
	for _, a := range as {
		if a != nil && len(c.shown) < maxEvidence && !slices.Contains(c.shown, a) {
			c.shown = append(c.shown, a)
		}
	}
}

// count returns the effects read of keys, nil without an oracle or when
// they were not read (then recorded as unknown).
func (c *contractRun) count(keys ...string) map[string]int {
	if !c.oracle || len(keys) == 0 {
		return nil
	}
	r := c.reading
	if r == nil {
		c.unknown("the effects were not read")
		return nil
	}
	if r.Err != "" {
		c.unknown("the effects could not be read: %s", r.Err)
		return nil
	}
	out := map[string]int{}
	for _, k := range keys {
		ms := c.minted[k]
		if len(ms) == 0 {
			ms = []string{k}
		}
		for _, m := range ms {
			n, ok := r.Effects[m]
			if !ok {
				c.unknown("the effects of key %s were not read", m)
				return nil
			}
			out[k] += n
		}
	}
	c.counted = true
	return out
}

// MintedField is the answer field (history.Attempt.Fields) in which an
// audit keeps a key the API minted in its answer's body.
const MintedField = "key_from_answer"

// mintedKeys are, for an audit of an API that mints the keys
// (Contract.KeyFromAnswer), the keys each op's answers minted, by the op's
// key (the first minted); nil otherwise.
func mintedKeys(h *history.History) map[string][]string {
	from := h.Meta.Judge.Contract.KeyFromAnswer
	if from == "" {
		return nil
	}
	out := map[string][]string{}
	for i, op := range h.Ops {
		keys := []string{op.Key}
		for _, a := range h.AttemptsOf(i) {
			m := a.Headers[from]
			if strings.HasPrefix(from, "$") {
				m = a.Fields[MintedField]
			}
			if m != "" && !slices.Contains(keys, m) {
				keys = append(keys, m)
			}
		}
		out[op.Key] = keys
	}
	return out
}

// countIn returns the effects reading name (another than the check's own)
// read of keys; nil without an oracle, or when it was not taken, failed
// or lacks a key. Nothing is recorded as unknown: the caller says what it
// judges without it.
func (c *contractRun) countIn(name string, keys ...string) map[string]int {
	r := c.readings[name]
	if !c.oracle || r == nil || r.Err != "" {
		return nil
	}
	out := map[string]int{}
	for _, k := range keys {
		n, ok := r.Effects[k]
		if !ok {
			return nil
		}
		out[k] = n
	}
	return out
}

// twice records that key's answers name two resources. Without an oracle
// that is a critical failure judged from the answers; with one, the count
// of key's effects decides: two or more confirm it (critical), fewer make
// it a wrong replay (otherwise).
func (c *contractRun) twice(key string, otherwise Severity, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !c.oracle {
		c.fail(Critical, "%s: executed twice (judged from the answers alone)", msg)
		return
	}
	c.resolve(key, otherwise, msg)
}

// ambiguous records answers that may be a second execution or a replay
// with another body: with an oracle the count of key's effects decides
// (as for twice); without one the check is unknown on it.
func (c *contractRun) ambiguous(key string, otherwise Severity, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !c.oracle {
		c.unknown("%s: without --effects the answers cannot tell a replay from a second execution", msg)
		return
	}
	c.resolve(key, otherwise, msg)
}

func (c *contractRun) resolve(key string, otherwise Severity, msg string) {
	n := c.count(key)
	if n == nil {
		c.unknown("%s: the effects were not read", msg)
		return
	}
	if e := n[key]; e >= 2 {
		c.fail(Critical, "%s: executed twice (%d effects)", msg, e)
	} else {
		c.fail(otherwise, "%s, but the oracle counts %d effect: a replay that names another resource", msg, e)
	}
}

// once fails each key acknowledged with a 2xx that has two or more effects
// (critical) or none (high, a success without effect). It reports whether
// the effects were read.
func (c *contractRun) once(keys ...string) bool {
	n := c.count(keys...)
	if n == nil {
		return false
	}
	for _, k := range keys {
		switch e := n[k]; {
		case e >= 2:
			c.fail(Critical, "key %s has %d effects", k, e)
		case e == 0:
			c.fail(High, "key %s was answered 2xx but has no effect (a success that did nothing, or --effects counts something else)", k)
		}
	}
	return true
}

// bad records what is wrong with an attempt that did not get a proper
// answer, and reports whether there was anything: a 5xx or a hang (high),
// no answer or the request cap (unknown).
func (c *contractRun) bad(a *history.Attempt, what string) bool {
	switch {
	case a == nil:
		c.unknown("%s was not sent", what)
		return true
	case is5xx(a):
		c.fail(High, "%s was answered %d", what, a.Status)
	case a.Expired:
		c.fail(High, "%s got no answer within the request timeout (a hang)", what)
	case a.Outcome != history.OK:
		c.unknown("%s got no answer: %s", what, shortErr(a))
	default:
		return false
	}
	c.show(a)
	return true
}

// first checks the first request of an op: a 2xx is what every later
// probe builds on. It records why otherwise and reports false.
func (c *contractRun) first(a *history.Attempt, what string) bool {
	c.show(a)
	if c.bad(a, what) {
		return false
	}
	if !a.Acked() {
		c.unknown("%s was answered %d, not 2xx: nothing to compare with", what, a.Status)
		return false
	}
	return true
}

// result turns what the check found into its ContractCheck.
func (c *contractRun) result(d contractDef) ContractCheck {
	out := ContractCheck{ID: d.id, Name: d.name, Severity: d.severity, Evidence: c.evidence()}
	switch {
	case c.skip != "":
		out.Result, out.Summary = Skipped, c.skip
		return out
	case len(c.findings) > 0:
		out.Result = Fail
		worst := c.findings[0].sev
		for _, f := range c.findings {
			if f.sev.Rank() > worst.Rank() {
				worst = f.sev
			}
		}
		var msgs []string
		for _, f := range c.findings {
			if f.sev == worst && !slices.Contains(msgs, f.msg) && len(msgs) < 3 {
				msgs = append(msgs, f.msg)
			}
		}
		out.Severity = worst
		out.Summary = strings.Join(msgs, "; ")
		if n := len(c.findings) - len(msgs); n > 0 {
			out.Summary += fmt.Sprintf(" (and %d more)", n)
		}
	case len(c.unknowns) > 0:
		out.Result = Unknown
		out.Summary = strings.Join(uniq(c.unknowns), "; ")
	default:
		out.Result = Pass
		out.Summary = c.pass
	}
	if len(c.notes) > 0 {
		out.Summary = strings.TrimPrefix(strings.TrimSuffix(out.Summary+"; "+strings.Join(uniq(c.notes), "; "), "; "), "; ")
	}
	out.JudgedBy = ByAnswers
	if c.counted {
		out.JudgedBy = ByEffects
	}
	return out
}

func uniq(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// evidence renders the attempts shown, with the hidden answer of a
// drop_ack after its attempt.
func (c *contractRun) evidence() []Evidence {
	out := []Evidence{}
	for _, a := range c.shown {
		out = append(out, c.evidenceOf(a))
		for _, x := range a.Answers {
			if !x.Hidden || x.Outcome != history.OK {
				continue
			}
			h := c.evidenceOf(a)
			h.Probe += ": the answer the client never saw"
			h.Hidden, h.Fault, h.Error, h.Status = true, "", "", x.Status
			h.Answer, h.AnswerHeaders, h.Effects = "", nil, nil
			out = append(out, h)
		}
	}
	return out
}

func (c *contractRun) evidenceOf(a *history.Attempt) Evidence {
	ev := Evidence{Probe: a.Label, Fault: a.Fault, Status: a.Status, Answer: a.Body, AnswerHeaders: a.Headers}
	if a.Outcome != history.OK {
		ev.Status, ev.Error = 0, shortErr(a)
	}
	if r := a.Request; r != nil {
		ev.Request, ev.Headers, ev.Body = r.Method+" "+r.URL, r.Headers, r.Body
		if !r.NoKey {
			ev.Key = r.Key
			if ev.Key == "" {
				ev.Key = `""`
			}
			if c.reading != nil && c.reading.Err == "" {
				if n, ok := c.reading.Effects[r.Key]; ok {
					ev.Effects = &n
				}
			}
		}
	}
	return ev
}

// Predicates on attempts, as the contract checks read them.

func is5xx(a *history.Attempt) bool { return a.Outcome == history.OK && a.Status >= 500 }

// busy reports whether the answer says the key is still in flight:
// 409, 425 Too Early or 429.
func busy(a *history.Attempt) bool {
	return a != nil && a.Outcome == history.OK && (a.Status == 409 || a.Status == 425 || a.Status == 429)
}

// what is an answer in a few words: "201", "no answer (request timeout)".
func what(a *history.Attempt) string {
	switch {
	case a == nil:
		return "nothing"
	case a.Outcome != history.OK:
		return "no answer (" + shortErr(a) + ")"
	}
	return strconv.Itoa(a.Status)
}

// shortErr says why an attempt got no answer.
func shortErr(a *history.Attempt) string {
	switch {
	case a.Expired:
		return "request timeout"
	case a.Fault == "drop_ack" && a.Outcome == history.Info:
		return "answer dropped"
	case a.Fault == "timeout" && a.Outcome == history.Info:
		return "client gave up"
	case a.Fault == "reset" && a.Outcome == history.Fail:
		return "reset before sending"
	}
	return a.Err
}

// identity names the resource a 2xx answer is about: its top-level "id"
// (the field the audit keeps as IDField), else its Location, else its body
// without the volatile fields. Two answers for one key with different
// identities are two executions.
func identity(a *history.Attempt) string {
	if a == nil {
		return ""
	}
	if id, ok := a.Fields[IDField]; ok {
		return "id " + id
	}
	if loc := a.Headers["Location"]; loc != "" {
		return "Location " + loc
	}
	return fmt.Sprintf("body %016x", uint64(a.Fingerprint))
}

// named reports whether a 2xx answer names its resource by an "id" or a
// Location, not by its body alone.
func named(a *history.Attempt) bool {
	return a.Fields[IDField] != "" || a.Headers["Location"] != ""
}

// carries reports whether a's answer is about first's resource whatever
// its shape: first's "id" anywhere in a's body (a replay wrapped as
// {"cached":true,"data":{…}}), or first's Location as a's Location or in
// its body. It finds nothing when first names neither.
func carries(a, first *history.Attempt) bool {
	if a == nil || first == nil {
		return false
	}
	if id := first.Fields[IDField]; id != "" && hasID(a.Body, id) {
		return true
	}
	if loc := first.Headers["Location"]; loc != "" && (a.Headers["Location"] == loc || strings.Contains(a.Body, loc)) {
		return true
	}
	return false
}

// hasID reports whether the JSON body has, at any depth, a member "id"
// whose value is id. A body cut short is searched for the member as
// written.
func hasID(body, id string) bool {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) == nil {
		return findID(v, id)
	}
	re, err := regexp.Compile(`"` + IDField + `"\s*:\s*"?` + regexp.QuoteMeta(id) + `"?\s*[,}\]]`)
	return err == nil && re.MatchString(body)
}

func findID(v any, id string) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, m := range x {
			if k == IDField && fmt.Sprint(m) == id {
				return true
			}
			if findID(m, id) {
				return true
			}
		}
	case []any:
		for _, m := range x {
			if findID(m, id) {
				return true
			}
		}
	}
	return false
}

// hiddenOf is the answer a drop_ack hid from the client, as an attempt,
// nil when there is none.
func hiddenOf(a *history.Attempt) *history.Attempt {
	if a == nil {
		return nil
	}
	for _, x := range a.Answers {
		if x.Hidden && x.Outcome == history.OK && x.Status != 0 {
			return &history.Attempt{Op: a.Op, N: a.N, Outcome: history.OK, Status: x.Status, Fingerprint: x.Fingerprint,
				Fields: x.Fields, Start: a.Start, End: x.End, Label: a.Label, Request: a.Request}
		}
	}
	return nil
}

// sharedIdentity is the identity every 2xx answer of the calibration's
// fresh keys had, when there were two or more and they had one; "" when
// they named different resources.
func sharedIdentity(ops []probeOp) string {
	var ids []string
	for _, o := range ops {
		for i := range o.atts {
			if a := &o.atts[i]; a.Acked() {
				ids = append(ids, identity(a))
				break
			}
		}
	}
	if len(ids) < 2 {
		return ""
	}
	for _, id := range ids[1:] {
		if id != ids[0] {
			return ""
		}
	}
	return ids[0]
}

// sharedAnswer reports whether a and b, the answers of two keys (or
// principals), are alike only because every answer of the endpoint is:
// both name the resource the calibration's two fresh keys were both
// answered with. Their likeness is then no evidence that one key was
// served the other's execution.
func (c *contractRun) sharedAnswer(a, b *history.Attempt) bool {
	return c.shared != "" && a != nil && b != nil && identity(a) == c.shared && identity(b) == c.shared
}

// unknownShared says a cross-key likeness cannot be judged from the
// answers (sharedAnswer).
func (c *contractRun) unknownShared(what string) {
	if c.sharedSaid {
		return
	}
	c.sharedSaid = true
	c.unknown("%s named the same resource (%s), but so did the calibration's two fresh keys: this endpoint's answers name a shared resource, not an execution, and cannot tell keys apart; give --effects to judge it", what, c.shared)
}

// IDField is the name under which an audit keeps an answer's top-level
// "id" (history.Attempt.Fields), the resource it names.
const IDField = "id"

// sameBody reports whether two answers have the same body, volatile
// fields, member order and spacing aside (their fingerprints).
func sameBody(x, y *history.Attempt) bool { return x.Fingerprint == y.Fingerprint }

// replayOf reports whether a replays first: the same body, or the same
// resource with a replay marker (the profile's, or Stripe's
// Idempotent-Replayed, which any API may send). An answer about the same
// resource with another body (a counter's new value) is not one.
func (c *contractRun) replayOf(a, first *history.Attempt) bool {
	return sameBody(a, first) || identity(a) == identity(first) && c.replayed(a)
}

// replayed reports whether a carries a replay marker.
func (c *contractRun) replayed(a *history.Attempt) bool {
	for _, h := range []string{c.prof.Replayed, "Idempotent-Replayed"} {
		if h != "" && strings.EqualFold(a.Headers[h], "true") {
			return true
		}
	}
	return false
}

// rejectedOK reports whether a status is a right answer to a concurrent
// copy that lost: the profile's in-flight or mismatch codes, or 409.
func (c *contractRun) rejectedOK(status int, mismatch bool) bool {
	if status == 409 || history.Matches(c.prof.InFlight, status) {
		return true
	}
	return mismatch && history.Matches(c.prof.Mismatch, status)
}

// orList is a profile's list for a message: "422 or 409".
func orList(l []string) string {
	if len(l) == 0 {
		return "a 4xx"
	}
	return strings.Join(l, " or ")
}
