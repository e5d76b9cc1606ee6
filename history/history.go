package history

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"
)

// Outcome is what an attempt told the client, in Jepsen's terms.
type Outcome uint8

const (
	// OK means a response was received (any status).
	OK Outcome = iota + 1
	// Fail means the request certainly was not processed: it failed before a
	// byte was written (a reset, a refused connection).
	Fail
	// Info means the result is indeterminate: the request may or may not have
	// been processed (a timeout, a dropped ack, a connection lost after sending).
	Info
)

var outcomeNames = [...]string{OK: "ok", Fail: "fail", Info: "info"}

// String returns "ok", "fail" or "info".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && outcomeNames[o] != "" {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// ParseOutcome is the inverse of Outcome.String.
func ParseOutcome(s string) (Outcome, error) {
	for i, n := range outcomeNames {
		if n != "" && n == s {
			return Outcome(i), nil
		}
	}
	return 0, fmt.Errorf("unknown outcome %q: want ok, fail or info", s)
}

// MarshalText implements encoding.TextMarshaler.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *Outcome) UnmarshalText(b []byte) error {
	v, err := ParseOutcome(string(b))
	if err != nil {
		return err
	}
	*o = v
	return nil
}

// Op is one logical operation, named by its key. Every retry and duplicate
// of it carries the same key.
type Op struct {
	ID   int    // sequence number, 0-based; equal to its index in History.Ops
	Key  string // the idempotency key (or op id) sent with every attempt
	User string // the principal the op ran as, if the scenario names users
	// Check is the contract check whose probe sent the op, in an audit's
	// history ("C06", or "calibration"); "" in a run.
	Check string
	// Object is the object the op's event updates (operation.object),
	// by which ordered_apply groups ops; "" when the scenario names none.
	Object string
}

// Attempt is one HTTP exchange made for an op. Times are offsets from the
// start of the run so a history is small and independent of the wall clock.
type Attempt struct {
	Op       int           `json:"op"`               // Op.ID
	N        int           `json:"n"`                // attempt number, 1-based
	Fault    string        `json:"fault,omitempty"`  // the fault injected into this attempt, "" for none
	Outcome  Outcome       `json:"outcome"`          // ok, fail or info
	Status   int           `json:"status,omitempty"` // HTTP status when Outcome is OK, else 0
	Intended time.Duration `json:"intended_ns"`      // when the attempt was meant to start
	Start    time.Duration `json:"start_ns"`         // when it actually started
	End      time.Duration `json:"end_ns"`           // when it ended (answer, error or give-up)
	// Fingerprint is a hash of the normalised response body (volatile
	// fields removed, keys sorted); 0 when there was no body.
	Fingerprint Fingerprint `json:"fingerprint,omitempty"`
	// Fields holds the response fields the scenario asked to keep
	// (e.g. a charge id), by name; nil when none.
	Fields map[string]string `json:"fields,omitempty"`
	// Err is the transport error for fail and info outcomes.
	Err string `json:"error,omitempty"`
	// Target is the index in Meta.Targets of the target the attempt was
	// sent to; 0 for the first (or only) one.
	Target int `json:"target,omitempty"`
	// Copies is how many identical copies of the request were sent at
	// once (a duplicate send); 0 or 1 for a single send.
	Copies int `json:"copies,omitempty"`
	// Size is the answer body's full length in bytes when it was larger
	// than what was kept for the fingerprint; 0 otherwise.
	Size int64 `json:"size,omitempty"`
	// Body is a bounded, redacted prefix of a 4xx or 5xx answer's body,
	// kept as evidence; "" otherwise.
	Body string `json:"body,omitempty"`
	// Answers are the answers the attempt received beside the one in
	// Status and Fingerprint: the other copies of a duplicate send, and an
	// answer that a fault hid from the client (drop_ack). Each is judged
	// like any other answer.
	Answers []Answer `json:"answers,omitempty"`
	// Headers are the answer's headers that bear on idempotency (see
	// AnswerHeaders), secrets scrubbed; nil when it had none of them.
	Headers map[string]string `json:"headers,omitempty"`
	// Expired is true when the request timeout ended the attempt before
	// the answer came: the target did not answer in time (a hang), as
	// opposed to a client timeout a fault injected.
	Expired bool `json:"expired,omitempty"`
	// Label says what the attempt was for within its probe, in an audit's
	// history ("round 2: copy 3"); "" in a run.
	Label string `json:"label,omitempty"`
	// Request is what was sent when it is not the operation's own request
	// with the op's key (an audit's probes vary the body, path, method,
	// key and principal); nil in a run.
	Request *Request `json:"request,omitempty"`
	// Bit is true when the attempt's fault changed what happened (see
	// faults.Answers.Bit): a timeout that fired before the answer, an
	// answer really dropped, duplicate copies in flight at once, a reset,
	// a delay that delayed. A fault merely planned is not one that bit.
	Bit bool `json:"bit,omitempty"`
	// Synced is, for one of several requests sent to arrive at once (an
	// audit's concurrent copies) and held to their last byte, the time
	// over which every one's last byte was written: they all reached the
	// server within it. 0 when they were not all held (released by a
	// barrier instead: their Start times are how close they went).
	Synced time.Duration `json:"synced_ns,omitempty"`
	// Sent is when the request left the client, when a fault held it
	// back after Start (a delay): what reached the target after what.
	// 0 when it left at Start.
	Sent time.Duration `json:"sent_ns,omitempty"`
}

// SentAt is when the attempt's request left the client: Sent, or Start.
func (a *Attempt) SentAt() time.Duration {
	if a.Sent != 0 {
		return a.Sent
	}
	return a.Start
}

// AnswerHeaders are the answer headers an attempt keeps (Attempt.Headers):
// those that say how a server treated a key (a replay marker, a key it
// minted, when to retry, the resource made) and what the body is.
var AnswerHeaders = []string{"Content-Type", "Location", "Idempotency-Key", "Idempotent-Replayed", "Retry-After"}

// MaxHeaderValue bounds each kept answer header's value, in bytes.
const MaxHeaderValue = 256

// Request is what an attempt sent, as evidence: secrets masked, bodies
// bounded.
type Request struct {
	Method string `json:"method"`
	// URL is the request's URL, its password and query values masked.
	URL string `json:"url"`
	// Key is the idempotency key sent (possibly malformed on purpose);
	// NoKey is true when none was sent.
	Key   string `json:"key,omitempty"`
	NoKey bool   `json:"no_key,omitempty"`
	// Headers are the request headers besides the key, credentials masked.
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the start of the request body.
	Body string `json:"body,omitempty"`
	// As is true when the request was sent as the second principal.
	As bool `json:"as,omitempty"`
}

// Answer is one more answer an attempt received: another copy of a
// duplicate send, or the answer a fault hid from the client.
type Answer struct {
	// Copy numbers the copy of a duplicate send, from 2; 0 for a hidden
	// answer of a single send.
	Copy int `json:"copy,omitempty"`
	// Hidden is true when the client never saw this answer (drop_ack).
	Hidden      bool              `json:"hidden,omitempty"`
	Outcome     Outcome           `json:"outcome"`
	Status      int               `json:"status,omitempty"`
	End         time.Duration     `json:"end_ns"`
	Fingerprint Fingerprint       `json:"fingerprint,omitempty"`
	Fields      map[string]string `json:"fields,omitempty"`
	Err         string            `json:"error,omitempty"`
}

// Fingerprint is a 64-bit hash of a normalised response body. In JSON it is
// 16 hex digits, as in history.jsonl: a number that large loses precision
// in JavaScript and jq.
type Fingerprint uint64

// MarshalText implements encoding.TextMarshaler.
func (f Fingerprint) MarshalText() ([]byte, error) { return fmt.Appendf(nil, "%016x", uint64(f)), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (f *Fingerprint) UnmarshalText(b []byte) error {
	v, err := strconv.ParseUint(string(b), 16, 64)
	if err != nil {
		return fmt.Errorf("fingerprint %q: want 16 hex digits", b)
	}
	*f = Fingerprint(v)
	return nil
}

// Latency is the attempt's latency measured from its intended start, so a
// stalled scheduler cannot hide queueing (coordinated omission).
func (a *Attempt) Latency() time.Duration { return a.End - a.Intended }

// Acked reports whether the attempt received a 2xx answer.
func (a *Attempt) Acked() bool { return a.Outcome == OK && a.Status >= 200 && a.Status < 300 }

// Meta describes the run a history belongs to, and what it is judged
// against, so that a saved history can be judged again with nothing else.
type Meta struct {
	// RunID names the run; every file of a run carries it, so files of
	// different runs are never mixed up.
	RunID    string `json:"run_id"`
	Scenario string `json:"scenario"`
	// Description and Source (a file, or builtin:NAME) of the scenario.
	Description string `json:"description,omitempty"`
	Source      string `json:"source,omitempty"`
	// Target is the base URL of the first target, its secrets redacted.
	Target string `json:"target,omitempty"`
	// Targets are every target's base URL, redacted, in the order
	// Attempt.Target indexes them; empty for a single target.
	Targets []string `json:"targets,omitempty"`
	// Shard is which part of the run the history holds: one shard
	// ("i/n"), a merged run that lacks shards ("0,1,3 of 4"), or the
	// whole run (the zero Shard, left out).
	Shard Shard  `json:"shard,omitzero"`
	Seed  uint64 `json:"seed"`
	// KeyNonce was mixed into the generated keys (0: keys from the seed
	// alone); the same seed and nonce give the same keys.
	KeyNonce uint64    `json:"key_nonce,omitempty"`
	Started  time.Time `json:"started"`
	// Ended is when the load stopped; zero while running.
	Ended time.Time `json:"ended"`
	// Aborted says why load.abort_on_fail ended the load early (a
	// violation or a threshold proven failed while it ran), and AbortedAt
	// when, from the start of the load; "" for a load that ran its course.
	Aborted   string        `json:"aborted,omitempty"`
	AbortedAt time.Duration `json:"aborted_at_ns,omitempty"`
	// Interrupted is true when the run was stopped before its planned end.
	Interrupted bool `json:"interrupted,omitempty"`
	// Rerun is the idemcheck command line that repeats the run (the same
	// keys, faults and load), its secrets redacted; "" when not known.
	Rerun string `json:"rerun,omitempty"`
	// Judge is what the run is judged against.
	Judge Judge `json:"judge"`
	// Nemesis are the windows in which the scenario's nemesis stopped
	// and restarted the target (a fault of kind nemesis), in the order
	// they opened; empty when it declares none.
	Nemesis []NemesisWindow `json:"nemesis,omitempty"`
	// Stages are the stages of a load in stages (load.stages), as the
	// scenario gave them for the whole run; empty for a flat load.
	Stages []Stage `json:"stages,omitempty"`
	// BitRecorded is true when every attempt's Bit says whether its
	// fault bit; a history recorded before it was (or by a sender that
	// does not say) leaves it false, and its faults' bite is not judged.
	BitRecorded bool `json:"bit_recorded,omitempty"`
	// Renumbered is true for a merged history whose op ids are not the
	// Seq each op's templates saw (a shard missing, or shards that made
	// unequal shares of the ops): a check that reads Seq back from the
	// target (ordered_apply) cannot match it to the ops.
	Renumbered bool `json:"renumbered,omitempty"`
	// ConsumerCut is what a consumer_cut did to a queue's consumer; nil
	// when the scenario has none.
	ConsumerCut *ConsumerCut `json:"consumer_cut,omitempty"`
	// Calibration is what a calibration measured before the load, and
	// the relative fault parameters it resolved; nil when none ran.
	Calibration *Calibration `json:"calibration,omitempty"`
	// InterruptedIn is the phase an interrupted run (Interrupted) was
	// stopped in: PhaseLoad, PhaseQuiet, PhaseReading or PhaseMerge; for
	// an audit, the check whose probe it cut ("check C05").
	InterruptedIn string `json:"interrupted_in,omitempty"`
}

// The phases a run can be interrupted in (Meta.InterruptedIn): an
// interruption after the load cut the quiet period short or stopped the
// oracles' reads, so the state read may not be the load's whole effect.
const (
	PhaseLoad    = "load"
	PhaseQuiet   = "quiet period"
	PhaseReading = "oracle reads"
	PhaseMerge   = "merge"
)

// Interrupt marks m interrupted in phase, unless it was already (the
// first phase stays).
func (m *Meta) Interrupt(phase string) {
	if m.Interrupted && m.InterruptedIn != "" {
		return
	}
	m.Interrupted, m.InterruptedIn = true, phase
}

// Calibration is what a run measured of the target before its load, to
// resolve the faults' relative parameters (a timeout after: 0.5x): a few
// plain requests with fresh keys, outside the history's ops.
type Calibration struct {
	// Requests were sent, Answered of them with a 2xx, whose latency P50
	// and P90 are.
	Requests int           `json:"requests"`
	Answered int           `json:"answered"`
	P50      time.Duration `json:"p50_ns"`
	P90      time.Duration `json:"p90_ns"`
	// Resolved are the relative parameters and what they resolved to.
	Resolved []Resolved `json:"resolved"`
}

// Resolved is one relative fault parameter and its value for this run.
type Resolved struct {
	// Fault is the fault's index in the scenario's faults, Kind its kind.
	Fault int    `json:"fault"`
	Kind  string `json:"kind"`
	// Param is the parameter ("after"), Relative how it was written
	// ("0.5x"), Value what it resolved to.
	Param    string        `json:"param"`
	Relative string        `json:"relative"`
	Value    time.Duration `json:"value_ns"`
}

// Judge is what a run is judged against: the scenario's expectation,
// invariants and thresholds, as they were when it ran.
type Judge struct {
	// Expect is "pass" (every invariant and threshold must hold) or
	// "violation" (a known-broken target must be caught).
	Expect     string      `json:"expect"`
	Invariants []Invariant `json:"invariants"`
	Thresholds Thresholds  `json:"thresholds"`
	// SettleGrace is how long after a key's first attempt ended a 409
	// still counts as "in flight" (the settles invariant); 0 means 2 s.
	SettleGrace time.Duration `json:"settle_grace_ns,omitempty"`
	// Profile is what the API is expected to answer where the contract
	// leaves a choice (an in-flight duplicate, a payload mismatch).
	Profile Profile `json:"profile"`
	// FailOn is "medium" when a deviation from the profile fails the run;
	// "" leaves such findings in the report only.
	FailOn string `json:"fail_on,omitempty"`
	// Contract, in an audit's history, is what its contract checks are
	// judged against; nil for a run.
	Contract *Contract `json:"contract,omitempty"`
	// ExpectReject are the refusals the scenario provokes on purpose
	// (operation.expect_reject): the processes invariant counts them as
	// rejected as expected, every other refusal as a lost operation.
	ExpectReject []Rejection `json:"expect_reject,omitempty"`
	// Lease is the server's declared in-progress lease (the scenario's
	// lease): a 409 past SettleGrace but within it is the lease holding
	// the key, not judged by settles; 0 when none is declared.
	Lease time.Duration `json:"lease_ns,omitempty"`
}

// Rejection is an answer an attempt is expected to get: attempt N (from
// 1) refused with Status.
type Rejection struct {
	Attempt int `json:"attempt"`
	Status  int `json:"status"`
}

// Profile names the statuses an API answers where the idempotency
// contract leaves a choice. Each list holds exact statuses ("409") or
// classes ("4xx"); an empty list accepts any 4xx.
type Profile struct {
	Name string `json:"name,omitempty"`
	// InFlight answers a duplicate sent while the first is still running.
	InFlight []string `json:"in_flight,omitempty"`
	// Mismatch answers the same key with another payload.
	Mismatch []string `json:"mismatch,omitempty"`
	// MissingKey answers a request without a key where one is required.
	MissingKey []string `json:"missing_key,omitempty"`
	// Replayed is the header (with the value "true") a replay carries,
	// "" when the profile declares none.
	Replayed string `json:"replayed,omitempty"`
}

// Matches reports whether status is one of list ("409", or a class such
// as "4xx"); an empty list matches any 4xx.
func Matches(list []string, status int) bool {
	if len(list) == 0 {
		return status >= 400 && status < 500
	}
	code := strconv.Itoa(status)
	for _, s := range list {
		if s == code || (len(s) == 3 && s[1:] == "xx" && len(code) == 3 && s[0] == code[0]) {
			return true
		}
	}
	return false
}

// Invariant names a checker and the oracle whose reading it judges.
type Invariant struct {
	Check  string `json:"check"`
	Oracle string `json:"oracle,omitempty"`
}

// Thresholds are limits on the per-op latency and the error rate; a zero
// or nil limit is not checked.
type Thresholds struct {
	P50       time.Duration `json:"p50_ns,omitempty"`
	P90       time.Duration `json:"p90_ns,omitempty"`
	P99       time.Duration `json:"p99_ns,omitempty"`
	P999      time.Duration `json:"p99_9_ns,omitempty"`
	Max       time.Duration `json:"max_ns,omitempty"`
	ErrorRate *float64      `json:"error_rate,omitempty"`
}

// History is everything a run recorded. Ops are indexed by ID; Attempts are
// sorted by (Op, N) once Sort has been called.
type History struct {
	Meta     Meta
	Ops      []Op
	Attempts []Attempt
	// Readings are what the oracles read of the target's state after the
	// run, one per oracle.
	Readings []Reading
	// Spill, when set, holds the ops and attempts on disk instead of Ops
	// and Attempts (which are then empty): a run too long to keep in
	// memory writes them as they end. Encode, PartsOf and EachOp read
	// them from there.
	Spill *Spill

	index []int // index[op] is the first attempt of op; len(Ops)+1 entries
}

// Spill is a file of op and attempt records (format 3, without the
// header, readings and trailer), written as a run's ops ended
// (CreateSpill), or merged from shards' histories (MergeShardFiles). A
// run's spill keeps its name until it is removed: a process that ends
// before it saved the history leaves it behind. A merge's has no name
// where the system allows: the shards' files stay.
type Spill struct {
	Ops, Attempts int
	f             *tempFile
	size          int64
}

// reader reads the spill's records from the start.
func (s *Spill) reader() io.Reader { return io.NewSectionReader(s.f.File, 0, s.size) }

// Remove deletes the spill's file.
func (s *Spill) Remove() error {
	if s == nil {
		return nil
	}
	return s.f.remove()
}

// Sort orders attempts by op then attempt number and rebuilds the index used
// by AttemptsOf. Call it after the attempts were appended in any order.
func (h *History) Sort() {
	h.index = nil
	if h.Sorted() {
		return
	}
	sort.SliceStable(h.Attempts, func(i, j int) bool {
		a, b := &h.Attempts[i], &h.Attempts[j]
		if a.Op != b.Op {
			return a.Op < b.Op
		}
		return a.N < b.N
	})
}

// Sorted reports whether the attempts are ordered by op then attempt
// number, as Sort leaves them.
func (h *History) Sorted() bool {
	for i := 1; i < len(h.Attempts); i++ {
		a, b := &h.Attempts[i-1], &h.Attempts[i]
		if a.Op > b.Op || (a.Op == b.Op && a.N > b.N) {
			return false
		}
	}
	return true
}

// AttemptsOf returns the attempts of op in order. The history must be sorted.
func (h *History) AttemptsOf(op int) []Attempt {
	if h.index == nil || len(h.index) != len(h.Ops)+1 {
		h.buildIndex()
	}
	if op < 0 || op >= len(h.Ops) {
		return nil
	}
	return h.Attempts[h.index[op]:h.index[op+1]]
}

// Select is the part of h with the ops keep keeps (their IDs as they
// are) and their attempts; Meta and Readings are h's. h must be sorted.
func (h *History) Select(keep func(Op) bool) *History {
	out := &History{Meta: h.Meta, Readings: h.Readings}
	local := make([]int, len(h.Ops))
	for i, op := range h.Ops {
		local[i] = -1
		if keep(op) {
			local[i] = len(out.Ops)
			out.Ops = append(out.Ops, op)
		}
	}
	for _, a := range h.Attempts {
		if a.Op >= 0 && a.Op < len(local) && local[a.Op] >= 0 {
			a.Op = local[a.Op]
			out.Attempts = append(out.Attempts, a)
		}
	}
	return out
}

func (h *History) buildIndex() {
	idx := make([]int, len(h.Ops)+1)
	j := 0
	for op := range h.Ops {
		for j < len(h.Attempts) && h.Attempts[j].Op < op {
			j++
		}
		idx[op] = j
	}
	idx[len(h.Ops)] = len(h.Attempts)
	for op := len(h.Ops) - 1; op >= 0; op-- {
		// ops past the last attempt, or attempts for unknown ops, end here
		if idx[op] > idx[op+1] {
			idx[op] = idx[op+1]
		}
	}
	h.index = idx
}

// OpState summarises what the client learnt about an op from all its attempts.
type OpState uint8

const (
	// Acked: at least one attempt received a 2xx answer.
	Acked OpState = iota + 1
	// NotSent: every attempt failed before sending; the op had no effect.
	NotSent
	// Indeterminate: no 2xx, and at least one attempt may have been
	// processed (an info outcome, a 5xx or 3xx answer, or a 4xx to a
	// duplicated send whose other copies went unseen).
	Indeterminate
	// Rejected: no 2xx, and every answer was a 4xx to a single send, the
	// other attempts certainly unsent: the API said no every time it was
	// asked, so the op must have had no effect.
	Rejected
)

// Prefixes of the error of an attempt the runner could not send (outcome
// fail): its request (or key) did not render, or the op's
// operation.before read failed. Such an op was never sent: it says
// nothing of the target, and a run that lost ops this way did not make
// the load it describes.
const (
	RenderErrPrefix = "render: "
	BeforeErrPrefix = "operation.before: "
)

// FaultKinds are the kinds of fault an attempt can carry (Attempt.Fault),
// as package faults injects them, in a fixed order: a new kind goes at
// the end, so what is indexed by a kind's place (a compact record of an
// attempt, a chart's colour) stays put. faults builds its table of
// constructors from it, and refuses a kind this list lacks.
var FaultKinds = []string{"delay", "drop_ack", "duplicate", "reset", "timeout"}

// FaultDuplicate is the fault that sends an attempt several times at once
// (faults.KindDuplicate); the first answer is the attempt's, the other
// copies' answers are in Attempt.Answers, so a 4xx to the first says
// nothing of the other copies.
const FaultDuplicate = "duplicate"

// String returns "acked", "not_sent" or "indeterminate".
func (s OpState) String() string {
	switch s {
	case Acked:
		return "acked"
	case NotSent:
		return "not_sent"
	case Indeterminate:
		return "indeterminate"
	case Rejected:
		return "rejected"
	}
	return fmt.Sprintf("opstate(%d)", uint8(s))
}

// State classifies an op by its attempts. An op with no attempts was never
// sent. Replays of another payload (FaultMismatch) are another request and
// say nothing of the op.
func State(attempts []Attempt) OpState {
	state := NotSent
	for i := range attempts {
		a := &attempts[i]
		switch {
		case a.Fault == FaultMismatch:
		case a.Acked():
			return Acked
		case a.Outcome == Fail:
		case a.Rejection():
			if state == NotSent {
				state = Rejected
			}
		default:
			state = Indeterminate
		}
	}
	return state
}

// Rejection reports whether the attempt was a definite "not done": a 4xx
// to a single send, or a 4xx to every copy of a duplicate send whose
// copies' answers were all recorded (Copies, Answers). A duplicate send
// recorded without its copies' answers proves nothing of them.
func (a *Attempt) Rejection() bool {
	if a.Outcome != OK || a.Status < 400 || a.Status >= 500 {
		return false
	}
	if a.Copies <= 1 {
		return a.Fault != FaultDuplicate
	}
	copies := 1
	for _, x := range a.Answers {
		if x.Copy < 2 {
			continue
		}
		if x.Outcome != OK || x.Status < 400 || x.Status >= 500 {
			return false
		}
		copies++
	}
	return copies >= a.Copies
}

// The Fault of a replay attempt (scenario operation.replay): sent after the
// op's first 2xx on purpose, not injected, never retried.
const (
	// FaultReplay: the op's own request sent again (same key, same body).
	FaultReplay = "replay"
	// FaultMismatch: another payload sent under the op's key; a different
	// request, not a retry of the op.
	FaultMismatch = "mismatch"
)

// IsReplay reports whether fault marks a replay attempt rather than an
// injected fault.
func IsReplay(fault string) bool { return fault == FaultReplay || fault == FaultMismatch }

// OpLatency is the time from the op's first intended send to its final
// answer, retries included and replays left out.
func OpLatency(attempts []Attempt) time.Duration {
	for len(attempts) > 1 && IsReplay(attempts[len(attempts)-1].Fault) {
		attempts = attempts[:len(attempts)-1]
	}
	if len(attempts) == 0 {
		return 0
	}
	return attempts[len(attempts)-1].End - attempts[0].Intended
}

// ConsumerCut is what a consumer_cut did: the proxy in front of the
// broker cut the consumer's connections (Cuts), and the broker handed
// Redelivered of the run's messages out again. A cut that made it
// redeliver nothing did not bite.
type ConsumerCut struct {
	// Rate is the share of chunks cut, either way.
	Rate float64 `json:"rate"`
	// Listen is the proxy's address, which the consumer connects to.
	Listen string `json:"listen"`
	// Cuts is how many connections were cut during the load.
	Cuts int64 `json:"cuts"`
	// Redelivered is how many messages the broker delivered more than
	// once, as seen while the load ran and the consumer drained.
	Redelivered int `json:"redelivered"`
	// Err says why the redeliveries could not be watched; "" when they
	// were.
	Err string `json:"err,omitempty"`
}
