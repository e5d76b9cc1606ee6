package audit

// FormatVersion is the version of the scorecard's JSON form; it changes
// only when a field changes meaning or goes away (docs/audit.md).
const FormatVersion = 1

// Result is the result of one check.
type Result string

// The results of a check.
const (
	// Pass: every probe of the check got what the contract asks.
	Pass Result = "pass"
	// Fail: a probe saw a violation; the check's severity says how bad.
	Fail Result = "fail"
	// Unknown: the check ran but its answers (and the oracle, if any)
	// could not decide.
	Unknown Result = "unknown"
	// Skipped: the check did not run (not applicable, not configured, or
	// over the request budget); Summary says why.
	Skipped Result = "skipped"
)

// Severity says how bad a failed check is.
type Severity string

// The severities, worst first.
const (
	// Critical: a duplicate effect or a data leak.
	Critical Severity = "critical"
	// High: a stuck key, a wrong replay, a 5xx.
	High Severity = "high"
	// Medium: a deviation from the profile.
	Medium Severity = "medium"
	// Info: a policy worth knowing.
	Info Severity = "info"
)

func (s Severity) rank() int {
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

// The overall results of an audit.
const (
	// Held: no check failed at or above the failing severity.
	Held = "held"
	// Violated: a check failed at or above the failing severity
	// (critical or high; medium too with FailOn medium).
	Violated = "violated"
	// Inconclusive: no check could be judged (all unknown or skipped).
	Inconclusive = "inconclusive"
)

// Judged-by values of a check.
const (
	// ByEffects: the check read the effects oracle.
	ByEffects = "effects"
	// ByAnswers: the check judged from the answers alone.
	ByAnswers = "answers"
)

// Scorecard is the result of an audit. Its JSON form is stable and
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
	Checks []Check `json:"checks"`
	// Result is Held, Violated or Inconclusive.
	Result string `json:"result"`
	// FailOn is the failing severity the result was decided with ("" or
	// "medium"); the JUnit form reports a failure for the checks that
	// fail at it.
	FailOn string `json:"-"`
}

// Check is the result of one check.
type Check struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Severity is the severity of the worst finding of a failed check, and
	// the worst a check can find otherwise.
	Severity Severity `json:"severity"`
	Result   Result   `json:"result"`
	// Summary says what was sent and seen, and why the result is what it
	// is (the reason of a skipped or unknown check).
	Summary string `json:"summary"`
	// JudgedBy is ByEffects or ByAnswers ("" for a skipped check).
	JudgedBy string `json:"judged_by,omitempty"`
	// Evidence are the exchanges behind the result; never null.
	Evidence []Evidence `json:"evidence"`
}

// Evidence is one request of a probe and its answer. Secrets (the values
// of credential headers, and of the second principal's) are masked
// everywhere, bodies included.
type Evidence struct {
	// Probe names the request within the check: "round 2: copy 3".
	Probe string `json:"probe"`
	// Request is the method and URL (password and query values other than
	// the audit's own masked).
	Request string `json:"request"`
	// Key is the idempotency key sent; absent when none was.
	Key string `json:"key,omitempty"`
	// Headers are the request headers besides the key, credentials masked.
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the start of the request body.
	Body string `json:"body,omitempty"`
	// Fault is the fault injected into the request (drop_ack, timeout,
	// reset), if any.
	Fault string `json:"fault,omitempty"`
	// Status is the answer's status; 0 when none arrived.
	Status int `json:"status,omitempty"`
	// Answer is the start of the answer's body.
	Answer string `json:"answer,omitempty"`
	// AnswerHeaders are the answer headers a replay is compared on
	// (Content-Type, Location, Idempotent-Replayed, Retry-After).
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
func (c Check) Failed(failOn string) bool {
	if c.Result != Fail {
		return false
	}
	limit := High
	if failOn == string(Medium) {
		limit = Medium
	}
	return c.Severity.rank() >= limit.rank()
}

// decide sets s.Result from its checks.
func (s *Scorecard) decide(failOn string) {
	s.FailOn = failOn
	judged := false
	s.Result = Held
	for _, c := range s.Checks {
		if c.Result == Pass || c.Result == Fail {
			judged = true
		}
		if c.Failed(failOn) {
			s.Result = Violated
		}
	}
	if !judged {
		s.Result = Inconclusive
	}
}

// Counts returns how many checks have each result.
func (s *Scorecard) Counts() map[Result]int {
	n := map[Result]int{}
	for _, c := range s.Checks {
		n[c.Result]++
	}
	return n
}
