package scenarios

import (
	"time"

	"github.com/idemcheck/idemcheck/faults"
)

// Scenario is one test of one operation: how to drive it, which faults to
// inject, how to read the real state afterwards and which invariants must
// hold. It is loaded from YAML by Load/Parse; every field is documented in
// docs/scenario.md and in `idemcheck scenarios show`.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Expect is what the scenario expects of the target: ExpectPass (every
	// invariant holds) or ExpectViolation (a known-broken target is caught).
	Expect Expect `yaml:"expect"`
	// Target is the base URL, or several (the replicas of one API behind
	// no shared load balancer); overridden by --target and
	// IDEMCHECK_TARGET. Read it with TargetURL or TargetURLs.
	Target TargetList `yaml:"target"`
	// Service is the HTTP base URL of the service behind a queue target
	// (operation.publish): the one its consumer writes to, which the HTTP
	// oracles and the setup requests read. Unused for an HTTP target.
	Service TargetList `yaml:"service"`
	// ProfileName names the profile whose statuses the API is expected to
	// answer (ProfileDraft when left out); Profile resolves it.
	ProfileName string `yaml:"profile"`
	// Users are the principals ops run as, round robin by op sequence; the
	// template sees the op's user as {{.User}}.
	Users []string `yaml:"users"`
	// Setup requests run once, in order, before the load and before the
	// oracles take their first reading. A non-2xx answer aborts the run.
	Setup []Request `yaml:"setup"`
	// Operation is the request each op sends.
	Operation Operation `yaml:"operation"`
	Load      Load      `yaml:"load"`
	Retry     Retry     `yaml:"retry"`
	Faults    []Fault   `yaml:"faults"`
	Response  Response  `yaml:"response"`
	// Retention is how long the API promises to keep idempotency keys
	// (default 24h, Stripe's floor). Replays must come within it: after
	// it, the API may rightly treat the key as new.
	Retention Duration `yaml:"retention"`
	// Quiet is how long to wait after the load before reading the state, so
	// work the client gave up on (timeouts) can finish. Default 200ms.
	Quiet Duration `yaml:"quiet"`
	// Lease is the server's declared in-progress lease: how long it may
	// hold a key in flight (409) before releasing it. A 409 past
	// SettleGrace but within the lease is not judged by settles (and named
	// as the lease); past both, the key is stuck. 0: none declared.
	Lease Duration `yaml:"lease"`
	// SettleGrace is how long after an op's first attempt ended its key may
	// still answer in flight (409) before the settles invariant calls it
	// stuck. Default 2s.
	SettleGrace Duration    `yaml:"settle_grace"`
	Oracles     []Oracle    `yaml:"oracles"`
	Invariants  []Invariant `yaml:"invariants"`
	Thresholds  Thresholds  `yaml:"thresholds"`

	// Source is where the scenario was read from (a file path or
	// "builtin:NAME"); set by the loader, not by YAML.
	Source string `yaml:"-"`
	// Lines maps a dotted field path ("load.rate", "faults[1].rate") to its
	// line in Source, for errors found after loading. Set by the loader.
	Lines map[string]int `yaml:"-"`
}

// Expect is a scenario's expectation.
type Expect string

const (
	// ExpectPass: every invariant and threshold must hold.
	ExpectPass Expect = "pass"
	// ExpectViolation: at least one invariant must fail; the run succeeds
	// when a violation is caught and fails when none is.
	ExpectViolation Expect = "violation"
)

// Request is an HTTP request whose path, header values and body are
// text/template templates. Templates see .Key, .Seq, .User, .Attempt (setup:
// 0) and the functions env, randInt, uuid.
type Request struct {
	Method  string            `yaml:"method"` // default GET, POST for the operation
	Path    string            `yaml:"path"`   // joined to the target; may hold a query
	Headers map[string]string `yaml:"headers"`
	// Body is the JSON body template; Content-Type defaults to
	// application/json when a body is set.
	Body string `yaml:"body"`
}

// Operation is the request every op sends, and where its key goes.
type Operation struct {
	Request `yaml:",inline"`
	Key     KeyPlace `yaml:"key"`
	// Before is an optional read made once per op, before its first
	// attempt and without faults, whose captured values the operation's
	// templates see as {{.Vars.NAME}} (e.g. the version for a
	// compare-and-set).
	Before *Capture `yaml:"before"`
	// Replay re-sends each acknowledged op, as a client retrying late would.
	Replay *Replay `yaml:"replay"`
	// ExpectReject are the refusals the operation provokes on purpose: an
	// attempt its template makes invalid (a first attempt without a
	// required field), refused with a status. The processes invariant
	// counts them as rejected as expected, and the corrected retry that
	// follows must be processed; every other refusal is a lost operation.
	ExpectReject []Rejection `yaml:"expect_reject"`
	// Webhook makes each request a webhook delivery, signed as a
	// provider signs it: the op's key is the event id (the same on every
	// redelivery), the timestamp and signature made anew per attempt.
	Webhook *Webhook `yaml:"webhook"`
	// Publish makes each op a message published to a queue (the target's
	// broker) rather than an HTTP request: the op's key is the message id,
	// the same on every republish; the body is the message.
	Publish *Publish `yaml:"publish"`
	// Object is a template naming the object each op's event updates
	// ('cus_{{div .Seq 4}}': four events per customer, in Seq order);
	// its templates and the state oracle's see it as {{.Object}}.
	// ordered_apply groups the ops by it: an object's final state must
	// be its newest acknowledged event's.
	Object string `yaml:"object"`
}

// Webhook is how deliveries are signed (package webhooks): a provider's
// profile, the signing secret (from the environment), and for the custom
// profile its scheme.
type Webhook struct {
	// Profile is standard, stripe, github, shopify or custom.
	Profile string `yaml:"profile"`
	// Secret is a template that reads the secret from the environment:
	// '{{env "WEBHOOK_SECRET"}}'. A literal secret is refused.
	Secret string `yaml:"secret"`
	// Event is the event type the github and shopify profiles send in a
	// header (X-GitHub-Event, X-Shopify-Topic).
	Event string `yaml:"event"`
	// Forged is the share of ops (0 to 0.5, spread evenly) sent as forged
	// deliveries: every attempt signed with another key, or (a profile
	// that signs a timestamp, every other forged op) stamped an hour
	// outside the tolerance. The receiver must refuse them all (4xx) with
	// no effect: the rejects_forged invariant; the others leave them out.
	Forged float64 `yaml:"forged"`
	// The custom profile's scheme.
	SignatureHeader string `yaml:"signature_header"`
	IDHeader        string `yaml:"id_header"`
	TimestampHeader string `yaml:"timestamp_header"`
	Signed          string `yaml:"signed"`
	Encoding        string `yaml:"encoding"`
	Prefix          string `yaml:"prefix"`
}

// Rejection is an answer an attempt is expected to get: attempt Attempt
// (from 1) of every op refused with Status, a 4xx.
type Rejection struct {
	Attempt int `yaml:"attempt"`
	Status  int `yaml:"status"`
}

// Replay re-sends an op after its first 2xx answer: the same request with
// the same key, Count more times, each After the previous answer. A correct
// API answers every replay with its first answer (same_response) and
// executes nothing again (at_most_once), as long as the replay comes within
// the retention it declares. With Body, the replays send another payload
// under the same key instead, which the API must reject
// (payload_mismatch), never replay or execute; then (ThenOriginal) the
// op's own request once more, which must still get the first answer.
type Replay struct {
	Count int      `yaml:"count"` // default 1
	After Duration `yaml:"after"` // wait before each replay
	// Body is another payload (a template) to send under the same key.
	Body string `yaml:"body"`
	// ThenOriginal sends the op's own request once more after the
	// replays of Body (default true with Body): it must still get the
	// first answer (same_response), not the rejection of the other
	// payload.
	ThenOriginal *bool `yaml:"then_original"`
}

// Capture is a request whose JSON answer is read into named variables.
type Capture struct {
	Request `yaml:",inline"`
	// Vars maps a variable name to a JSONPath into the answer.
	Vars map[string]string `yaml:"vars"`
}

// KeyPlace says where the op's key is sent: in a header of any name, or as a
// top-level field of the JSON body. Exactly one is set, unless None.
type KeyPlace struct {
	Header    string `yaml:"header"`     // e.g. Idempotency-Key, PayPal-Request-Id
	BodyField string `yaml:"body_field"` // e.g. op_id, event_id
	// None sends no key at all (a baseline, or a naive endpoint); ops are
	// still named by a generated key in the history.
	None bool `yaml:"none"`
	// Value is a template for the key. Default: a UUID v4 drawn from the
	// run's seed. "shared-{{div .Seq 2}}" with two users makes each pair
	// of ops send one key as two different users (keys must be scoped
	// per user).
	Value string `yaml:"value"`
	// FromAnswer takes the key from the server's answers, for an API that
	// mints its own: every attempt after an answer that carried a key, and
	// every replay, sends the key of the latest such answer, in Header
	// (or BodyField) when set, else in the header FromAnswer.Header names,
	// else in Idempotency-Key. The first attempt sends the op's own key
	// only when Header or BodyField is set; otherwise no key. The op keeps
	// its own key as its name in the history; each answer's key is kept in
	// its Fields as history.MintedKeyField, where oracles find it.
	FromAnswer *KeyFromAnswer `yaml:"from_answer"`
}

// KeyFromAnswer says where an answer carries the key the server minted:
// in a header, or at a JSONPath of its JSON body. Exactly one is set.
type KeyFromAnswer struct {
	Header string `yaml:"header"` // e.g. Idempotency-Key
	JSON   string `yaml:"json"`   // e.g. $.idempotency_key
}

// Load is how much traffic to send and how: a closed model (Concurrency
// workers, each sending as fast as it is answered) or an open model (Rate
// new ops per second, whatever the answers do).
type Load struct {
	Ops         int      `yaml:"ops"`         // stop after this many ops
	Duration    Duration `yaml:"duration"`    // or after this long
	Concurrency int      `yaml:"concurrency"` // closed model: workers
	Rate        Rate     `yaml:"rate"`        // open model: ops per second
	// MaxInFlight caps concurrent ops in the open model (default 512).
	MaxInFlight int `yaml:"max_in_flight"`
	// RequestTimeout bounds every request of the run: setup, operation
	// attempts, replays and oracle reads (default 30s). A request that
	// reaches it is indeterminate, like a timeout fault.
	RequestTimeout Duration `yaml:"request_timeout"`
	// Stages, when set, shape the load in stages in place of Rate or
	// Concurrency and Duration: ramping rate (open model) or ramping
	// workers (closed model); see Stage. The load lasts their total
	// (Duration is defaulted to it).
	Stages []Stage `yaml:"stages,omitempty"`
	// AbortOnFail ends the load early once a failure is proven while it
	// runs: a violation on ops that have ended, or a threshold that can
	// no longer hold whatever the rest of the load does (trial judges
	// it live; run --abort-on-fail sets it).
	AbortOnFail bool `yaml:"abort_on_fail,omitempty"`
}

// Retry is the client's retry policy. Retries keep the op's key.
type Retry struct {
	Attempts int     `yaml:"attempts"` // total attempts per op, default 5
	Backoff  Backoff `yaml:"backoff"`
	// On lists what is retried: the outcomes "fail" and "info", statuses
	// ("409", "429") and classes ("5xx", "4xx"). Default fail, info, 409, 429, 5xx.
	On []string `yaml:"on"`
}

// Backoff is exponential backoff with jitter: the n-th retry waits
// min(Max, Initial*Multiplier^(n-1)), minus up to Jitter of it at random.
type Backoff struct {
	Initial    Duration `yaml:"initial"`    // default 10ms
	Max        Duration `yaml:"max"`        // default 1s
	Multiplier float64  `yaml:"multiplier"` // default 2
	Jitter     float64  `yaml:"jitter"`     // 0..1, default 0.5
}

// Fault is one fault of a scenario, injected into a share of attempts:
// faults.Spec, the one schema of a fault, decoded from its YAML tags.
type Fault = faults.Spec

// Response says what to keep of each answer.
type Response struct {
	// Fields are response fields kept in the history for evidence, by name:
	// {id: "$.id"} (RFC 9535 JSONPath).
	Fields map[string]string `yaml:"fields"`
	// Volatile are JSONPaths removed before fingerprinting a body, so
	// same_response ignores dates and request ids.
	Volatile []string `yaml:"volatile"`
}

// Oracle reads the real state of the target after the run. Exactly one of
// Effects, Counter, Account is set.
type Oracle struct {
	Name string `yaml:"name"`
	// Effects counts the effects of each key (ledger rows, charges).
	Effects *EffectsOracle `yaml:"effects"`
	// Counter reads one number before and after the run (a like count).
	Counter *CounterOracle `yaml:"counter"`
	// Account reads a balance and version before and after the run, and the
	// list of applied operations after it.
	Account *AccountOracle `yaml:"account"`
	// State reads, per object (operation.object), the order of the event
	// whose state the object holds.
	State *StateOracle `yaml:"state"`
}

// StateOracle reads each object's state after the run with one GET per
// object (its templates see {{.Object}}). Value selects the order of the
// event the state came from: the Seq the event's body carried. A 404 is
// an object with no state.
type StateOracle struct {
	PerObject   *Probe `yaml:"per_object"`
	Concurrency int    `yaml:"concurrency"` // reads in parallel, default 8
}

// EffectsOracle counts effects per key: with one GET per key (PerKey, its
// templates see .Key) or one bulk GET, perhaps paginated (Bulk).
type EffectsOracle struct {
	PerKey *Probe     `yaml:"per_key"`
	Bulk   *BulkProbe `yaml:"bulk"`
	// SQL counts effects with a query on Postgres: per_key ($1 = the key,
	// one row, one integer) or grouped (rows of key, count).
	SQL *SQLEffects `yaml:"sql"`
	// Redis reads the dedup store itself: whether each key is there
	// (exists) or the integer stored at it (get).
	Redis       *RedisEffects `yaml:"redis"`
	Concurrency int           `yaml:"concurrency"` // reads in parallel, default 8
	// Across says how the counts of a key read on several targets are
	// combined: AcrossFirst (the default: the first target's count) or
	// AcrossSum (each target keeps its own store: add them up).
	Across string `yaml:"across"`
}

// The values of EffectsOracle.Across.
const (
	// AcrossFirst reads the effects on the first target only.
	AcrossFirst = "first"
	// AcrossSum adds up the effects read on every target.
	AcrossSum = "sum"
)

// SQLEffects is an effects oracle on Postgres. URL may be a template that
// reads a secret from the environment: '{{env "LEDGER_URL"}}'.
type SQLEffects struct {
	URL     string `yaml:"url"`
	PerKey  string `yaml:"per_key"` // SELECT count(*) FROM payments WHERE idempotency_key = $1
	Grouped string `yaml:"grouped"` // SELECT idempotency_key, count(*) FROM payments GROUP BY 1
}

// RedisEffects is an effects oracle on Redis. Pattern makes the store's key:
// a template that sees .Key and .User ("idem:{{.User}}:{{.Key}}"), or,
// without "{{", text holding one %s for the key ("idem:%s"). Mode is
// "exists" (default: 1 when present) or "get" (the integer stored).
type RedisEffects struct {
	URL     string `yaml:"url"`
	Pattern string `yaml:"pattern"`
	Mode    string `yaml:"mode"`
}

// CounterOracle reads one number before and after the run: over HTTP (a
// request and a JSONPath, inline), with an SQL query returning one integer,
// or a Redis key holding one.
type CounterOracle struct {
	Probe `yaml:",inline"`
	SQL   *SQLCounter   `yaml:"sql"`
	Redis *RedisCounter `yaml:"redis"`
}

// SQLCounter is a query returning one row with one integer column.
type SQLCounter struct {
	URL   string `yaml:"url"`
	Query string `yaml:"query"`
}

// RedisCounter is a Redis key holding an integer (absent reads as 0).
type RedisCounter struct {
	URL string `yaml:"url"`
	Key string `yaml:"key"`
}

// Probe is a request and a JSONPath into its JSON answer.
type Probe struct {
	Request `yaml:",inline"`
	Value   string `yaml:"value"`
}

// BulkProbe is the one read of every key of a bulk effects oracle: a Probe
// whose Value selects an object mapping key to count, an array of keys
// (one element per effect), or a node list of keys ("$.data[*].key": one
// node per effect); and, optionally, how to read the following pages: Next
// or Cursor, not both.
type BulkProbe struct {
	Probe `yaml:",inline"`
	// Next follows a link to the next page.
	Next *NextPage `yaml:"next"`
	// Cursor follows a cursor to the next page.
	Cursor *CursorPage `yaml:"cursor"`
	// MaxPages bounds the pages read when Next or Cursor is set (default
	// 1000); more pages left after it is an error, never a partial count.
	MaxPages int `yaml:"max_pages"`
}

// NextPage is a link to the next page: Path selects it in each answer (a
// URL, absolute or relative to the page's; null, "" or absent on the last
// page).
type NextPage struct {
	Path string `yaml:"path"`
}

// CursorPage is a cursor to the next page: Path selects it in each answer
// (null, "" or absent on the last page) and the next request is the first
// one with the query parameter Param set to it.
type CursorPage struct {
	Path  string `yaml:"path"`
	Param string `yaml:"param"`
}

// AccountOracle reads an account for the conditional_update invariant.
type AccountOracle struct {
	Request `yaml:",inline"`
	Balance string `yaml:"balance"` // JSONPath to the balance
	Version string `yaml:"version"` // JSONPath to the version
	// Applied lists the operations applied to the account.
	Applied AppliedProbe `yaml:"applied"`
}

// AppliedProbe reads the list of applied operations: List selects the
// array, Key and Amount are JSONPaths inside each element.
type AppliedProbe struct {
	Request `yaml:",inline"`
	List    string `yaml:"list"`
	Key     string `yaml:"key"`
	Amount  string `yaml:"amount"`
}

// Invariant names a checker and the oracle it reads.
type Invariant struct {
	// Check is one of checks.Names(): at_most_once, exactly_once,
	// same_response, exact_counter, conditional_update, payload_mismatch,
	// settles, processes.
	Check string `yaml:"check"`
	// Oracle names an entry of oracles; same_response and
	// payload_mismatch need none, settles and processes may name an
	// effects oracle.
	Oracle string `yaml:"oracle"`
}

// Thresholds fail a run whose latency or error rate is too high. Latency is
// per op: first send to final answer, measured from the intended start.
type Thresholds struct {
	P50  Duration `yaml:"p50"`
	P90  Duration `yaml:"p90"`
	P99  Duration `yaml:"p99"`
	P999 Duration `yaml:"p99.9"`
	Max  Duration `yaml:"max"`
	// ErrorRate is the highest share of ops that may end without a 2xx.
	ErrorRate *float64 `yaml:"error_rate"`
}

// TargetList is one base URL or several. In YAML it is a string or a list
// of strings.
type TargetList []string

// Duration is a time.Duration written as "250ms" or "2s" in YAML.
type Duration time.Duration

// Rate is ops per second, written as 200, "200/s", "12000/m" in YAML.
type Rate float64
