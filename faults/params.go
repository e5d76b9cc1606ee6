package faults

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParamType is what a fault parameter holds.
type ParamType int

// The types of fault parameters.
const (
	// ParamShare is a float64 in [0, 1]: 0.2 is one in five.
	ParamShare ParamType = iota + 1
	// ParamDuration is a time.Duration: 50ms.
	ParamDuration
	// ParamCount is a whole number: 3.
	ParamCount
	// ParamAttempts is a list of attempt numbers, 1 being the first send.
	ParamAttempts
)

// String names t for a message: "a share in [0, 1]".
func (t ParamType) String() string {
	switch t {
	case ParamShare:
		return "a share in [0, 1]"
	case ParamDuration:
		return "a duration"
	case ParamCount:
		return "a whole number"
	case ParamAttempts:
		return "a list of attempt numbers"
	}
	return fmt.Sprintf("ParamType(%d)", int(t))
}

// Param is one parameter of a fault: its name, as a scenario and the
// --fault flag write it, what it means, and what it holds. The table of
// params is the one list of parameter names: the constructors reject a
// kind-specific parameter set on another kind from it, and the scenario
// loader and the --fault flag read it.
type Param struct {
	// Name is the parameter's name: "after".
	Name string
	// Kind is the one fault kind that takes it; "" when every kind does.
	Kind string
	// Type is what it holds.
	Type ParamType
	// Doc says what it means: "the client deadline".
	Doc string
	// Example is a valid value as text: "50ms".
	Example string
	// Hint tells someone who got it wrong or left it out what to write.
	Hint string

	field func(*Spec) any // a pointer to the parameter in a Spec
	// relative is set for a duration that may be written relative to
	// the target's latency (after: 0.5x): it then goes to Spec.Relative.
	relative bool
}

// params is every parameter of every fault, the common ones first.
var params = []Param{
	{
		Name: "rate", Type: ParamShare,
		Doc:     "the share of attempts the fault hits",
		Example: "0.2",
		Hint:    "rate is the share of attempts hit: 0.2 is one in five",
		field:   func(s *Spec) any { return &s.Rate },
	},
	{
		Name: "attempts", Type: ParamAttempts,
		Doc:     "the attempt numbers the fault hits, 1 being the first send; empty means any",
		Example: "1",
		Hint:    "attempts: [1] hits first sends only",
		field:   func(s *Spec) any { return &s.Attempts },
	},
	{
		Name: "after", Kind: KindTimeout, Type: ParamDuration,
		Doc:      "the client deadline: a duration, or relative to the latency measured before the load (p50, p90, 0.5x: half the p50)",
		Example:  "50ms",
		Hint:     "a timeout needs after: the client deadline, like after: 50ms",
		field:    func(s *Spec) any { return &s.After },
		relative: true,
	},
	{
		Name: "copies", Kind: KindDuplicate, Type: ParamCount,
		Doc:     "how many times the attempt is sent, 2 to 100 (0 means 2)",
		Example: "3",
		Hint:    "a duplicate needs copies: 2 to 100",
		field:   func(s *Spec) any { return &s.Copies },
	},
	{
		Name: "delay", Kind: KindDelay, Type: ParamDuration,
		Doc:     "the wait before the attempt is sent",
		Example: "20ms",
		Hint:    "a delay needs delay: the wait, like delay: 20ms",
		field:   func(s *Spec) any { return &s.Delay },
	},
}

// Params returns every parameter of every fault kind: the common ones
// (rate, attempts), then the kind-specific ones sorted by name.
func Params() []Param { return append([]Param(nil), params...) }

// ParamsOf returns the parameters a fault of kind takes: the common ones,
// then its own.
func ParamsOf(kind string) []Param {
	var out []Param
	for _, p := range params {
		if p.Kind == "" || p.Kind == kind {
			out = append(out, p)
		}
	}
	return out
}

// LookupParam returns the parameter called name.
func LookupParam(name string) (Param, bool) {
	for _, p := range params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// IsSet reports whether s gives p a value other than its zero (a
// relative deadline counts).
func (p Param) IsSet(s Spec) bool {
	if p.relative && !s.Relative.IsZero() {
		return true
	}
	switch v := p.field(&s).(type) {
	case *float64:
		return *v != 0
	case *time.Duration:
		return *v != 0
	case *int:
		return *v != 0
	case *[]int:
		return len(*v) > 0
	}
	panic("faults: param " + p.Name + " has no known field type")
}

// Set gives p in s the value written as text, as the --fault flag writes
// it: "0.2", "50ms", "3", or attempt numbers separated by spaces, "1 2";
// after takes a relative deadline too, "0.5x". It checks the syntax only;
// New checks the value.
func (p Param) Set(s *Spec, text string) error {
	if p.relative {
		r, ok, err := ParseRelative(text)
		if err != nil {
			return fmt.Errorf("%s %w", p.Name, err)
		}
		if ok {
			s.Relative = r
			return nil
		}
	}
	switch v := p.field(s).(type) {
	case *float64:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return fmt.Errorf("%s %q is not a number between 0 and 1", p.Name, text)
		}
		*v = f
	case *time.Duration:
		d, err := time.ParseDuration(text)
		if err != nil {
			return fmt.Errorf("%s %q is not a duration like 50ms", p.Name, text)
		}
		*v = d
	case *int:
		n, err := strconv.Atoi(text)
		if err != nil {
			return fmt.Errorf("%s %q is not a whole number", p.Name, text)
		}
		*v = n
	case *[]int:
		var ns []int
		for _, f := range strings.Fields(text) {
			n, err := strconv.Atoi(f)
			if err != nil {
				return fmt.Errorf("%s %q is not a list of whole numbers like 1 2", p.Name, text)
			}
			ns = append(ns, n)
		}
		*v = ns
	default:
		panic("faults: param " + p.Name + " has no known field type")
	}
	return nil
}
