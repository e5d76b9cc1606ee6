package abtest

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/internal/hint"
	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/scenarios"
)

// DefaultMaxRequests caps bench overhead's requests unless --max-requests
// says otherwise: more than any default bench sends (a --rate auto search
// and two arms at half its cap), fewer than a runaway.
const DefaultMaxRequests = 1_000_000

// ArgError is a bad argument with what to write instead (hint.Error).
type ArgError = hint.Error

func argError(h string, err error) error { return hint.New(h, err) }

// Settings are bench overhead's settings as its command line gives them.
type Settings struct {
	// BaselinePath is arm B's path (a bypass endpoint); BaselineNoKey
	// makes arm B the same request without its key. One of the two.
	BaselinePath  string
	BaselineNoKey bool

	// Rate is ops/s per arm, or "auto".
	Rate        string
	Duration    time.Duration
	Warmup      time.Duration
	Block       time.Duration
	MaxInFlight int
	Timeout     time.Duration
	MaxOverhead string
	Format      string
	MaxRequests int
	Resamples   int
}

// CheckBaseline checks the request cap and the baseline, the settings
// read before the request: an *ArgError says what is wrong.
func (s *Settings) CheckBaseline() error {
	if s.MaxRequests <= 0 {
		return argError(fmt.Sprintf("the most requests the bench may send; the default is %d", DefaultMaxRequests), fmt.Errorf("--max-requests %d: want at least 1", s.MaxRequests))
	}
	if (s.BaselinePath == "") == !s.BaselineNoKey {
		return argError("--baseline-path /naive/charges (an endpoint without the layer) or --baseline-no-key (the request without its key)",
			errors.New("bench overhead needs one baseline"))
	}
	if s.BaselinePath != "" && !strings.HasPrefix(s.BaselinePath, "/") {
		return argError("a path on the same target, e.g. /naive/charges", fmt.Errorf("--baseline-path %q is not a path", s.BaselinePath))
	}
	return nil
}

// Parse checks the other settings and returns the budget and the rate
// per arm, or auto for a rate search first (FindRates): an *ArgError
// says what is wrong.
func (s *Settings) Parse() (b Budget, rate float64, auto bool, err error) {
	if b, err = ParseBudget(s.MaxOverhead); err != nil {
		return nil, 0, false, argError("e.g. --max-overhead p50=30%,p99=5ms", fmt.Errorf("--max-overhead: %w", err))
	}
	switch s.Format {
	case "text", "json", "markdown":
	default:
		return nil, 0, false, argError("text, json or markdown", fmt.Errorf("--format %q", s.Format))
	}
	if rate, auto, err = ParseRate(s.Rate); err != nil {
		return nil, 0, false, argError("ops per second per arm, like --rate 200, or --rate auto", fmt.Errorf("--rate %q", s.Rate))
	}
	if s.Duration <= 0 || s.Warmup < 0 || s.Block <= 0 || s.MaxInFlight <= 0 || s.Resamples <= 0 || s.Timeout <= 0 {
		return nil, 0, false, errors.New("--duration, --block, --max-in-flight, --resamples and --request-timeout must be positive, --warmup not negative")
	}
	return b, rate, auto, nil
}

// Preview is what a bench overhead will send, stated before it sends.
type Preview struct {
	// What names both arms' requests, their paths redacted:
	// "POST /charges (A) and POST /naive/charges (B)".
	What string
	// Total is the most requests it sends.
	Total int
	// Line states it all in one line, without its newline.
	Line string
}

// NewPreview states what arms a and b (b without a key when noKey) send
// to target: Run with o, after FindRates with ro when auto.
func NewPreview(a, b *scenarios.Scenario, noKey bool, target *url.URL, o Options, ro RateOptions, auto bool) Preview {
	kind := "requests"
	if Mutating(a.Operation.Method) {
		kind = "mutating requests"
	}
	what := fmt.Sprintf("%s %s (A) and %s %s (B%s)", a.Operation.Method, redact.Path(a.Operation.Path), b.Operation.Method, redact.Path(b.Operation.Path), map[bool]string{true: ", no key", false: ""}[noKey])
	if auto {
		total := AutoOps(o, ro)
		return Preview{what, total, fmt.Sprintf("bench overhead: %s to %s; --rate auto: at most %d %s (the rate search, then 2 arms × %v at half the rate found)",
			what, redact.URL(target), total, kind, o.Warmup+o.Duration)}
	}
	total := Ops(o)
	return Preview{what, total, fmt.Sprintf("bench overhead: %s to %s; about %d %s (2 arms × %v × %.0f/s, warm-up %v included), a fresh key per op",
		what, redact.URL(target), total, kind, o.Warmup+o.Duration, o.Rate, o.Warmup)}
}

// Within returns an *ArgError when p sends more than limit requests.
func (p Preview) Within(limit int) error {
	if p.Total > limit {
		return argError("lower --rate or --duration, or raise --max-requests", fmt.Errorf("bench overhead would send up to %d requests, over --max-requests %d", p.Total, limit))
	}
	return nil
}

// RatesFound states a rate search's result: what each arm sustains, and
// the rate the bench runs at.
func RatesFound(maxA, maxB, rate float64) string {
	ratio := 0.0
	if maxB != 0 {
		ratio = maxA / maxB * 100
	}
	return fmt.Sprintf("A sustains %.0f ops/s, B %.0f ops/s (A/B %.0f%%); benching at %.0f ops/s", maxA, maxB, ratio, rate)
}

// Mutating reports whether method changes state.
func Mutating(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}
