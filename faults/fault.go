package faults

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// Fault kinds, as scenarios name them.
const (
	KindDropAck   = "drop_ack"
	KindTimeout   = "timeout"
	KindDuplicate = "duplicate"
	KindReset     = "reset"
	KindDelay     = "delay"
)

// Fault is one kind of fault, applied to one attempt.
type Fault interface {
	// Kind is the fault's name, one of the Kind constants.
	Kind() string
	// Inject sends req through next with the fault applied. It keeps the
	// http.RoundTripper contract: req is not modified (a clone is), its body
	// is always closed, and an injected network failure is (nil, err).
	Inject(next http.RoundTripper, req *http.Request) (*http.Response, error)
}

// Sentinel errors wrapped by injected failures; test them with errors.Is.
var (
	// ErrDroppedAck: the server answered, the answer was discarded.
	ErrDroppedAck = errors.New("dropped ack")
	// ErrTimeout: the client gave up after its deadline; the server may
	// still be working.
	ErrTimeout = errors.New("timeout")
	// ErrReset: the connection failed before a byte of the request was
	// written; the server never saw it.
	ErrReset = errors.New("connection reset before sending")
)

// injectedError is a network failure made up by a fault. Its message reads
// well in a report: "injected drop_ack: response discarded after the server
// answered 201".
type injectedError struct {
	kind     string
	msg      string
	sentinel error
}

func (e *injectedError) Error() string { return "injected " + e.kind + ": " + e.msg }

func (e *injectedError) Unwrap() error { return e.sentinel }

// Timeout reports whether the error is an injected timeout, like net.Error.
func (e *injectedError) Timeout() bool { return e.sentinel == ErrTimeout }

// unsentError marks a failure that certainly happened before the request was
// sent (for example a delay interrupted by cancellation).
type unsentError struct{ err error }

func (e *unsentError) Error() string { return e.err.Error() }

func (e *unsentError) Unwrap() error { return e.err }

// closeBody closes req's body, as a RoundTripper must even when it fails
// before sending.
func closeBody(req *http.Request) {
	if req != nil && req.Body != nil {
		req.Body.Close()
	}
}

// Spec is a fault with its share of attempts. It is the one schema of a
// fault: a scenario's faults are Specs, decoded from YAML by their tags
// (durations written 50ms), and ParseSpec reads one from the --fault flag.
type Spec struct {
	// Kind is the fault, one of Kinds.
	Kind string `yaml:"kind"`
	// Rate is the share of attempts that get this fault, in [0, 1].
	Rate float64 `yaml:"rate"`
	// After is the client deadline of a timeout fault. With Relative
	// set it is 0 until a calibration resolves it (Resolve).
	After time.Duration `yaml:"after"`
	// Relative is a timeout's deadline relative to the target's measured
	// latency (after: p50, after: 0.5x); zero for a fixed After. A
	// scenario writes it as after's value.
	Relative Relative `yaml:"-"`
	// Copies is how many times a duplicate fault sends the attempt (>= 2;
	// 0 means 2).
	Copies int `yaml:"copies"`
	// Delay is the wait of a delay fault.
	Delay time.Duration `yaml:"delay"`
	// Attempts limits the fault to these attempt numbers (1 = first send);
	// empty means any attempt.
	Attempts []int `yaml:"attempts"`

	// The parameters of a nemesis (KindNemesis), which stops and restarts
	// the target's process during the load instead of touching attempts;
	// no other kind takes them (see nemesis.go).

	// Stop is the command that stops the target, its name then its
	// arguments, run without a shell: [kill, -9, "1234"], or
	// [sh, -c, "kill -9 $(cat lab.pid)"].
	Stop []string `yaml:"stop"`
	// Start is the command that brings the target back; empty when the
	// platform restarts it by itself (a Kubernetes pod, a supervised
	// service).
	Start []string `yaml:"start"`
	// At is when in the load the first window opens: a share of
	// load.ops (ops done) or of load.duration, whichever comes first,
	// written 40% or 0.4, with seeded jitter (NemesisJitter).
	At Share `yaml:"at"`
	// Every, when set, opens a window again this long (with seeded
	// jitter) after the previous one ended, while the load runs; 0 opens
	// one window.
	Every time.Duration `yaml:"every"`
	// Ready is the request that answers 2xx once the target is back,
	// "METHOD /path" ("GET /healthz"), sent to every target; "" ends the
	// window when Start returns.
	Ready string `yaml:"ready"`
	// ReadyTimeout bounds the wait for Ready and each command; 0 means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration `yaml:"ready_timeout"`

	// Listen is a consumer_cut's address (KindConsumerCut): the TCP proxy
	// the consumer is pointed at, in front of the broker.
	Listen string `yaml:"listen"`
}

// SpecError is one problem with one parameter of a Spec. New and NewPlan
// return them joined (errors.Join), so every problem is reported at once;
// find them with errors.As.
type SpecError struct {
	// Field is the parameter at fault, named as in a scenario: "kind" or
	// the Name of one of Params.
	Field string
	// Problem says what is wrong and what is expected.
	Problem string

	err error // what errors.Is finds beside the SpecError: ErrUnresolved
}

func (e *SpecError) Error() string { return e.Field + ": " + e.Problem }

func (e *SpecError) Unwrap() error { return e.err }

func specErr(field, format string, args ...any) error {
	return &SpecError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// kind is a known fault: its name and its constructor.
type kind struct {
	name  string
	build func(Spec) (Fault, []error)
}

// kinds is the explicit table of known faults, kind and constructor, in
// a fixed order: a new kind goes at the end, so a kind's place in Kinds
// never changes and what is indexed by it (the compact record of an
// attempt, a chart's colours) stays put. A constructor validates its own
// parameters and rejects those of others.
var kinds = []kind{
	{KindDelay, func(s Spec) (Fault, []error) {
		errs := unexpected(s, KindDelay)
		if s.Delay <= 0 {
			errs = append(errs, specErr("delay", "a delay fault needs delay > 0, got %v", s.Delay))
		}
		return Delay{Wait: s.Delay}, errs
	}},
	{KindDropAck, func(s Spec) (Fault, []error) {
		return DropAck{}, unexpected(s, KindDropAck)
	}},
	{KindDuplicate, func(s Spec) (Fault, []error) {
		errs := unexpected(s, KindDuplicate)
		copies := s.Copies
		if copies == 0 {
			copies = 2
		}
		switch {
		case copies < 2:
			errs = append(errs, specErr("copies", "a duplicate fault needs copies >= 2, got %d", s.Copies))
		case copies > MaxCopies:
			errs = append(errs, specErr("copies", "at most %d copies of one attempt, got %d: each copy's answer is kept in memory", MaxCopies, s.Copies))
		}
		return Duplicate{Copies: copies}, errs
	}},
	{KindReset, func(s Spec) (Fault, []error) {
		return Reset{}, unexpected(s, KindReset)
	}},
	{KindTimeout, func(s Spec) (Fault, []error) {
		errs := unexpected(s, KindTimeout)
		if err := s.Relative.check(); err != nil {
			errs = append(errs, specErr("after", "%v", err))
		} else if s.After <= 0 && s.Relative.IsZero() {
			errs = append(errs, specErr("after", "a timeout fault needs after > 0 (the client deadline), got %v", s.After))
		}
		return Timeout{After: s.After}, errs
	}},
}

// unexpected reports the kind-specific parameters (see Params) set on a
// fault of kind that does not take them: a likely typo or a misplaced line.
func unexpected(s Spec, kind string) []error {
	var errs []error
	for _, p := range params {
		if p.Kind != "" && p.Kind != kind && p.IsSet(s) {
			errs = append(errs, specErr(p.Name, "only a %s fault takes %s, not a %s fault", p.Kind, p.Name, kind))
		}
	}
	return errs
}

// Kinds returns the known fault kinds in their fixed order
// (history.FaultKinds: alphabetical for the kinds of today, then each
// kind added since in the order it came). A kind's place in it never
// changes, so a table indexed by it stays put when a kind is added.
func Kinds() []string { return slices.Clone(history.FaultKinds) }

func init() {
	// The kinds a history can name and those this package builds are one
	// list: a kind added to one and not the other is a programming error,
	// caught by the first test that loads the package.
	if len(kinds) != len(history.FaultKinds) {
		panic(fmt.Sprintf("faults: %d kinds built, history.FaultKinds names %d", len(kinds), len(history.FaultKinds)))
	}
	for i, k := range kinds {
		if k.name != history.FaultKinds[i] {
			panic(fmt.Sprintf("faults: kind %d is %q here and %q in history.FaultKinds", i, k.name, history.FaultKinds[i]))
		}
	}
}

// New builds the fault a Spec declares and validates every parameter,
// including Rate and Attempts, which the Plan uses. The error joins one
// *SpecError per problem. A relative deadline must have been resolved
// (Resolve): an unresolved one is an error wrapping ErrUnresolved.
func New(s Spec) (Fault, error) {
	f, err := build(s)
	if err == nil && s.Unresolved() {
		return nil, fmt.Errorf("%s fault: %w", s.Kind, &SpecError{Field: "after", err: ErrUnresolved, Problem: fmt.Sprintf(
			"after %s is relative to the target's latency, which a calibration before the load measures: %v", s.Relative, ErrUnresolved)})
	}
	return f, err
}

// ErrUnresolved is wrapped by New's error for a relative deadline that no
// calibration resolved (Spec.Resolve): a run calibrates, the proxy cannot.
var ErrUnresolved = errors.New("not measured yet")

// Check validates every parameter of s as New does, a relative deadline
// counting as given: what a scenario's validation needs before any
// calibration.
func Check(s Spec) error {
	_, err := build(s)
	return err
}

// build is New without the check that a relative deadline was resolved.
func build(s Spec) (Fault, error) {
	var errs []error
	if !(s.Rate >= 0 && s.Rate <= 1) { // also rejects NaN
		errs = append(errs, specErr("rate", "must be between 0 and 1, got %v", s.Rate))
	}
	for _, a := range s.Attempts {
		if a < 1 {
			errs = append(errs, specErr("attempts", "attempt numbers start at 1 (the first send), got %d", a))
		}
	}
	if s.Kind == KindNemesis {
		return nil, fmt.Errorf("%s fault: %w", s.Kind, errors.Join(append(errs, errNotPerAttempt)...))
	}
	if s.Kind == KindConsumerCut {
		return nil, fmt.Errorf("%s fault: %w", s.Kind, errors.Join(append(errs, errCutNotPerAttempt)...))
	}
	if s.Listen != "" {
		errs = append(errs, specErr("listen", "only a consumer_cut fault takes listen, not a %s fault", s.Kind))
	}
	i := slices.IndexFunc(kinds, func(k kind) bool { return k.name == s.Kind })
	if i < 0 {
		errs = append(errs, specErr("kind", "%q is not a known fault (known: %s)", s.Kind, strings.Join(Kinds(), ", ")))
		return nil, errors.Join(errs...)
	}
	f, kindErrs := kinds[i].build(s)
	errs = append(errs, kindErrs...)
	errs = append(errs, nemesisOnly(s)...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s fault: %w", s.Kind, errors.Join(errs...))
	}
	return f, nil
}
