package faults

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// KindNemesis is the fault that stops the target's process during the
// load and brings it back: a crash mid-request, which no fault on the
// wire can provoke. It is not a per-attempt fault: New and Plan leave it
// out, ParseSpec refuses it, and a run's trial runs it beside the load
// from its schedule (NewNemeses). Its parameters are Spec's Stop, Start,
// At, Every, Ready and ReadyTimeout, which no other kind takes.
const KindNemesis = "nemesis"

// DefaultReadyTimeout bounds a nemesis's commands and its wait for the
// target to answer ready when its ReadyTimeout is 0.
const DefaultReadyTimeout = 30 * time.Second

// NemesisJitter is how far, as a share of the load, the seed moves a
// nemesis's first window from its At, either way: at 40% it opens
// between 35% and 45% of the load.
const NemesisJitter = 0.05

// everyJitter is how far, as a share of Every, the seed moves each pause
// between two windows, either way.
const everyJitter = 0.1

// nemesisSalt sets the nemesis's draws apart from the plan's picks,
// which hash (seed, op, attempt): "nemesis" in ASCII.
const nemesisSalt = 0x6e656d65736973

var errNotPerAttempt = specErr("kind", "a nemesis is not a per-attempt fault: a run runs it beside the load, never the transport or a proxy")

// Share is a share of the load, in (0, 1): written 40% or 0.4.
type Share float64

// ParseShare reads a share written 40%, 2.5% or 0.4. It checks the
// syntax only: CheckNemesis checks the range.
func ParseShare(text string) (Share, error) {
	s := strings.TrimSpace(text)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a share of the load like 40%% or 0.4", text)
	}
	if pct {
		v /= 100
	}
	return Share(v), nil
}

// UnmarshalText implements encoding.TextUnmarshaler (ParseShare), so a
// scenario writes at: 40%.
func (s *Share) UnmarshalText(b []byte) error {
	v, err := ParseShare(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MarshalText implements encoding.TextMarshaler: 40%.
func (s Share) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// String is the share as a percentage: "40%".
func (s Share) String() string { return strconv.FormatFloat(float64(s)*100, 'f', -1, 64) + "%" }

// Nemesis is a validated nemesis fault with its seeded schedule: when its
// windows open. What it runs and how is the caller's (package trial).
type Nemesis struct {
	// Fault is its index in the scenario's faults.
	Fault int
	// Stop and Start are its commands (Start may be empty).
	Stop, Start []string
	// At is when in the load its first window opens, before jitter
	// (Moment is after).
	At Share
	// Every is the pause between two windows before jitter (Pause is
	// after); 0 opens one window.
	Every time.Duration
	// ReadyMethod and ReadyPath are its readiness request; "" when it
	// has none.
	ReadyMethod, ReadyPath string
	// ReadyTimeout bounds each command and the wait for readiness.
	ReadyTimeout time.Duration

	seed uint64
}

// NewNemeses validates the nemesis faults among specs and returns them in
// order, scheduled from seed; the other kinds are left out (NewPlan
// places them). The error joins one *SpecError per problem, each
// prefixed with its spec's index, as NewPlan's.
func NewNemeses(seed uint64, specs []Spec) ([]Nemesis, error) {
	var out []Nemesis
	var errs []error
	for i, s := range specs {
		if s.Kind != KindNemesis {
			continue
		}
		if err := CheckNemesis(s); err != nil {
			errs = append(errs, fmt.Errorf("faults[%d]: %w", i, err))
			continue
		}
		n := Nemesis{Fault: i, Stop: s.Stop, Start: s.Start, At: s.At, Every: s.Every, ReadyTimeout: s.ReadyTimeout, seed: seed}
		if n.ReadyTimeout == 0 {
			n.ReadyTimeout = DefaultReadyTimeout
		}
		if s.Ready != "" {
			n.ReadyMethod, n.ReadyPath, _ = ParseReady(s.Ready)
		}
		out = append(out, n)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("nemesis: %w", errors.Join(errs...))
	}
	return out, nil
}

// HasNemesis reports whether specs declare a nemesis: a run of them runs
// user commands.
func HasNemesis(specs []Spec) bool {
	for _, s := range specs {
		if s.Kind == KindNemesis {
			return true
		}
	}
	return false
}

// CheckNemesis validates a nemesis spec: a stop command, at in (0, 1),
// no negative every or ready_timeout, a readiness request written
// "METHOD /path", and none of the per-attempt parameters. The error
// joins one *SpecError per problem; nil when there is none.
func CheckNemesis(s Spec) error {
	var errs []error
	for _, p := range params {
		if p.IsSet(s) {
			errs = append(errs, specErr(p.Name, "a nemesis takes no %s: it stops the target's process once per window, it is not a share of attempts", p.Name))
		}
	}
	switch {
	case len(s.Stop) == 0:
		errs = append(errs, specErr("stop", "a nemesis needs stop: the command that stops the target, its name then its arguments"))
	case strings.TrimSpace(s.Stop[0]) == "":
		errs = append(errs, specErr("stop", "the command's name (its first word) is empty"))
	}
	if len(s.Start) > 0 && strings.TrimSpace(s.Start[0]) == "" {
		errs = append(errs, specErr("start", "the command's name (its first word) is empty"))
	}
	switch {
	case s.At == 0:
		errs = append(errs, specErr("at", "a nemesis needs at: when in the load it strikes, a share of the ops or duration like 40%%"))
	case !(s.At > 0 && s.At < 1): // also rejects NaN
		errs = append(errs, specErr("at", "must be between 0%% and 100%% of the load (both excluded), got %s", s.At))
	}
	if s.Every < 0 {
		errs = append(errs, specErr("every", "must be above 0, got %v", s.Every))
	}
	if s.ReadyTimeout < 0 {
		errs = append(errs, specErr("ready_timeout", "must be above 0, got %v", s.ReadyTimeout))
	}
	if s.Ready != "" {
		if _, _, err := ParseReady(s.Ready); err != nil {
			errs = append(errs, specErr("ready", "%v", err))
		}
	}
	return errors.Join(errs...)
}

// ParseReady reads a readiness request written "METHOD /path", like
// "GET /healthz"; the path may hold a query.
func ParseReady(text string) (method, path string, err error) {
	f := strings.Fields(text)
	if len(f) != 2 || !strings.HasPrefix(f[1], "/") || !isMethod(f[0]) {
		return "", "", fmt.Errorf("%q is not a request written METHOD /path, like GET /healthz", text)
	}
	return f[0], f[1], nil
}

// isMethod reports whether m is an upper-case HTTP method token.
func isMethod(m string) bool {
	for _, c := range m {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return m != ""
}

// nemesisParam is a parameter of a nemesis, by its name in a scenario.
// They are not Params: no --fault flag sets them, as a proxy runs no
// nemesis.
type nemesisParam struct {
	name  string
	isSet func(Spec) bool
}

// nemesisParams are the parameters only a nemesis takes, one per field
// of Spec's nemesis block.
var nemesisParams = []nemesisParam{
	{"stop", func(s Spec) bool { return len(s.Stop) > 0 }},
	{"start", func(s Spec) bool { return len(s.Start) > 0 }},
	{"at", func(s Spec) bool { return s.At != 0 }},
	{"every", func(s Spec) bool { return s.Every != 0 }},
	{"ready", func(s Spec) bool { return s.Ready != "" }},
	{"ready_timeout", func(s Spec) bool { return s.ReadyTimeout != 0 }},
}

// NemesisParams returns the names of the parameters only a nemesis
// takes, as a scenario writes them: stop, start, at, every, ready,
// ready_timeout.
func NemesisParams() []string {
	names := make([]string, len(nemesisParams))
	for i, p := range nemesisParams {
		names[i] = p.name
	}
	return names
}

// nemesisOnly reports the nemesis parameters set on a fault of another
// kind: a likely misplaced line.
func nemesisOnly(s Spec) []error {
	var errs []error
	for _, p := range nemesisParams {
		if p.isSet(s) {
			errs = append(errs, specErr(p.name, "only a nemesis fault takes %s, not a %s fault", p.name, s.Kind))
		}
	}
	return errs
}

// Moment is the share of the load at which the first window opens: At
// moved by the seed up to NemesisJitter either way, kept within
// [0.01, 0.99].
func (n Nemesis) Moment() float64 {
	u := Unit(n.seed, nemesisSalt, uint64(n.Fault), 1)
	return min(max(float64(n.At)+(2*u-1)*NemesisJitter, 0.01), 0.99)
}

// Pause is how long after window k-1 ended window k (from 2) opens:
// Every moved by the seed up to a tenth of it either way; 0 when Every is
// 0 (one window only).
func (n Nemesis) Pause(k int) time.Duration {
	if n.Every <= 0 {
		return 0
	}
	u := Unit(n.seed, nemesisSalt, uint64(n.Fault), uint64(k))
	return time.Duration(float64(n.Every) * (1 + (2*u-1)*everyJitter))
}
