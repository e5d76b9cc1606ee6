package scenarios

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/yamlstrict"
	"gopkg.in/yaml.v3"
)

// hintError is a value problem with a hint for the user. The loader turns it
// into a Diagnostic at the value's line.
type hintError struct {
	msg, hint string
}

// Message is the problem without its hint.
func (e *hintError) Message() string { return e.msg }

// Hint says what to write instead; it may be empty.
func (e *hintError) Hint() string { return e.hint }

func (e *hintError) Error() string {
	if e.hint == "" {
		return e.msg
	}
	return e.msg + " (hint: " + e.hint + ")"
}

// ParseDuration parses a non-negative duration with a unit: "250ms", "2s",
// "1m30s". A bare number is rejected: "250" could mean anything.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, &hintError{msg: "empty duration", hint: "write a duration with a unit: 250ms, 2s, 1m"}
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		if s == "0" {
			return 0, nil
		}
		return 0, &hintError{msg: fmt.Sprintf("duration %q has no unit", s), hint: "write a unit: " + s + "ms"}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, &hintError{msg: fmt.Sprintf("bad duration %q", s), hint: "write a number and a unit (ns, us, ms, s, m, h): 250ms, 2s, 1m"}
	}
	if d < 0 {
		return 0, &hintError{msg: fmt.Sprintf("negative duration %q", s), hint: "durations are 0 or more"}
	}
	return Duration(d), nil
}

// UnmarshalYAML implements yaml.Unmarshaler: "250ms", "2s", "1m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &hintError{msg: "want a duration, got " + yamlstrict.KindName(n), hint: "write a duration with a unit: 250ms, 2s, 1m"}
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// String formats d like time.Duration: "250ms", "2s".
func (d Duration) String() string { return time.Duration(d).String() }

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

var rateUnits = map[string]float64{"s": 1, "m": 60, "h": 3600}

// ParseRate parses ops per second: 200, "200/s", "12000/m", "5/h".
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	num, unit, hasUnit := strings.Cut(s, "/")
	per := 1.0
	if hasUnit {
		unit = strings.TrimSpace(unit)
		var ok bool
		if per, ok = rateUnits[unit]; !ok {
			return 0, &hintError{msg: fmt.Sprintf("bad rate %q: unknown unit %q", s, unit), hint: "write ops per second, minute or hour: 200/s, 12000/m, 5/h"}
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, &hintError{msg: fmt.Sprintf("bad rate %q", s), hint: "write ops per second, minute or hour: 200/s, 12000/m, 5/h"}
	}
	if f < 0 {
		return 0, &hintError{msg: fmt.Sprintf("negative rate %q", s), hint: "a rate is more than 0 ops per second"}
	}
	return Rate(f / per), nil
}

// UnmarshalYAML implements yaml.Unmarshaler: 200, "200/s", "12000/m", "5/h".
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &hintError{msg: "want a rate, got " + yamlstrict.KindName(n), hint: "write ops per second, minute or hour: 200/s, 12000/m, 5/h"}
	}
	v, err := ParseRate(n.Value)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (r Rate) MarshalYAML() (any, error) { return r.String(), nil }

// String formats r as ops per second: "200/s".
func (r Rate) String() string { return strconv.FormatFloat(float64(r), 'g', -1, 64) + "/s" }

// relatives are the relative durations a scenario's decoding met (a
// timeout's after: 0.5x), by the address of the time.Duration field they
// were written to, so that Parse puts each in its fault's Relative once
// the scenario is decoded: a fault's after is one field of one type
// (faults.Spec.After, a time.Duration), and its relative form another
// field of the same Spec.
type relatives map[*time.Duration]faults.Relative

// options returns o whose time.Duration decoder also takes a relative
// value (p50, p90, 0.5x), kept in r, the field left 0.
func (r relatives) options(o yamlstrict.Options) yamlstrict.Options {
	dur := reflect.TypeFor[time.Duration]()
	next := o.Decoders[dur]
	dec := maps.Clone(o.Decoders)
	dec[dur] = func(n *yaml.Node, v reflect.Value) error {
		if n.Kind == yaml.ScalarNode {
			rel, ok, err := faults.ParseRelative(n.Value)
			if err != nil {
				return &hintError{msg: err.Error(), hint: relativeHint}
			}
			if ok {
				r[v.Addr().Interface().(*time.Duration)] = rel
				v.SetInt(0)
				return nil
			}
		}
		return next(n, v)
	}
	o.Decoders = dec
	return o
}

const relativeHint = "after: p50, after: p90, or after: 0.5x (half the p50 measured before the load); or a duration, after: 50ms"

// apply puts each relative value of r in its fault's Relative. One
// written to another duration than a fault's after is a problem: only a
// timeout's deadline follows the latency.
func (r relatives) apply(s *Scenario) Diagnostics {
	if len(r) == 0 {
		return nil
	}
	var out Diagnostics
	st := reflect.TypeFor[faults.Spec]()
	for i := range s.Faults {
		f := &s.Faults[i]
		if rel, ok := r[&f.After]; ok {
			f.Relative = rel
		}
		v := reflect.ValueOf(f).Elem()
		for k := range st.NumField() {
			fd := st.Field(k)
			if fd.Type != reflect.TypeFor[time.Duration]() || fd.Name == "After" {
				continue
			}
			p := v.Field(k).Addr().Interface().(*time.Duration)
			if rel, ok := r[p]; ok {
				name, _, _ := strings.Cut(fd.Tag.Get("yaml"), ",")
				field := fmt.Sprintf("faults[%d].%s", i, name)
				out = append(out, Diagnostic{Source: s.Source, Line: s.line(field), Field: field,
					Message: fmt.Sprintf("%s %s: only a timeout's after may be relative to the latency", name, rel), Hint: "write a duration, like " + name + ": 20ms"})
				*p = time.Nanosecond // a value, so that validation does not report it again
			}
		}
	}
	return out
}
