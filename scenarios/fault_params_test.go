package scenarios

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/yamlstrict"
)

// TestFaultFieldsAreFaultParams: the fields a scenario's fault takes are
// its kind and exactly the parameters package faults declares (a
// nemesis's among them), and each reaches the scenario's faults.Spec with
// the value written.
func TestFaultFieldsAreFaultParams(t *testing.T) {
	var names []string
	for _, p := range faults.Params() {
		names = append(names, p.Name)
	}
	names = append(names, faults.NemesisParams()...)
	names = append(names, faults.ConsumerCutParams()...)
	slices.Sort(names)
	got := slices.DeleteFunc(yamlstrict.Fields(reflect.TypeFor[faults.Spec]()), func(n string) bool { return n == "kind" })
	if diff := cmp.Diff(names, got); diff != "" {
		t.Errorf("fields of a scenario fault (-faults.Params +faults.Spec):\n%s", diff)
	}

	for _, p := range faults.Params() {
		kind := p.Kind
		if kind == "" {
			kind = faults.KindDropAck
		}
		want := faults.Spec{Kind: kind, Rate: 0.1}
		fields := map[string]string{"rate": "0.1"}
		for _, q := range append(faults.ParamsOf(kind), p) {
			if q.Kind == kind || q.Name == p.Name {
				if err := q.Set(&want, q.Example); err != nil {
					t.Fatal(err)
				}
				fields[q.Name] = yamlValue(q)
			}
		}
		if kind == faults.KindDuplicate && want.Copies == 0 {
			want.Copies = DefaultDuplicateCopies
		}
		src := valid + "faults:\n  - kind: " + kind + "\n"
		for name, v := range fields {
			src += "    " + name + ": " + v + "\n"
		}
		s, err := Parse("t.yaml", []byte(src))
		if err != nil {
			t.Errorf("Parse(fault with %s: %s) = %v", p.Name, fields[p.Name], err)
			continue
		}
		if diff := cmp.Diff([]faults.Spec{want}, s.Faults); diff != "" {
			t.Errorf("Faults of a %s fault with %s: %s (-want +got):\n%s", kind, p.Name, fields[p.Name], diff)
		}
	}
}

// yamlValue writes p's example as a scenario does.
func yamlValue(p faults.Param) string {
	if p.Type == faults.ParamAttempts {
		return "[" + strings.Join(strings.Fields(p.Example), ", ") + "]"
	}
	return p.Example
}

// TestFaultHintsFollowParams: the hint for each parameter comes from
// package faults, and a parameter on a kind that does not take it is an
// error at its own line, telling to remove it.
func TestFaultHintsFollowParams(t *testing.T) {
	for _, kind := range faults.Kinds() {
		for _, p := range faults.Params() {
			switch got := faultHint(kind, p.Name); {
			case p.Kind == "" && got != p.Hint:
				t.Errorf("faultHint(%s, %s) = %q, want %q", kind, p.Name, got, p.Hint)
			case p.Kind == kind && got != p.Hint:
				t.Errorf("faultHint(%s, %s) = %q, want %q", kind, p.Name, got, p.Hint)
			case p.Kind != "" && p.Kind != kind:
				src := valid + "faults:\n  - kind: " + kind + "\n    rate: 0.1\n    " + p.Name + ": " + yamlValue(p) + "\n"
				for _, q := range faults.ParamsOf(kind) {
					if q.Kind == kind {
						src += "    " + q.Name + ": " + yamlValue(q) + "\n"
					}
				}
				line := strings.Count(valid, "\n") + 4 // faults:, kind, rate, then the parameter
				checkDiags(t, diagnose(t, src), []want{{line, "faults[0]." + p.Name, "remove " + p.Name + " from this " + kind + " fault"}})
			}
		}
	}
	if got, want := faultHint(faults.KindTimeout, "kind"), "a timeout needs after: the client deadline, like after: 50ms"; got != want {
		t.Errorf("faultHint(timeout, kind) = %q, want %q", got, want)
	}
}
