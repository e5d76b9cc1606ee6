package faults

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParamsCoverSpec: every parameter field of Spec is declared by exactly
// one Param (or, in its nemesis block, one nemesis parameter), whose Type
// says what the field holds, and whose Example sets that field and no
// other.
func TestParamsCoverSpec(t *testing.T) {
	st := reflect.TypeFor[Spec]()
	for i := range st.NumField() {
		f := st.Field(i)
		if f.Name == "Kind" {
			continue
		}
		var s Spec
		v := reflect.ValueOf(&s).Elem().Field(i)
		switch v.Kind() {
		case reflect.Float64:
			v.SetFloat(0.5)
		case reflect.Int, reflect.Int64:
			v.SetInt(1)
		case reflect.Slice:
			if f.Type.Elem().Kind() == reflect.String {
				v.Set(reflect.ValueOf([]string{"x"}))
			} else {
				v.Set(reflect.ValueOf([]int{1}))
			}
		case reflect.String:
			v.SetString("x")
		case reflect.Struct:
			if f.Type != reflect.TypeFor[Relative]() {
				t.Fatalf("Spec.%s is a %s: teach this test and Param.IsSet about it", f.Name, f.Type)
			}
			v.Set(reflect.ValueOf(Relative{Percentile: 50, Factor: 0.5}))
		default:
			t.Fatalf("Spec.%s is a %s: teach this test and Param.IsSet about it", f.Name, f.Type)
		}
		var by []string
		for _, p := range params {
			if p.IsSet(s) {
				by = append(by, p.Name)
			}
		}
		for _, p := range append(slices.Clone(nemesisParams), cutParams...) {
			if p.isSet(s) {
				by = append(by, p.name)
			}
		}
		if len(by) != 1 {
			t.Errorf("Spec.%s is declared by params %v, want exactly one", f.Name, by)
		}
	}
	want := map[ParamType]reflect.Type{
		ParamShare:    reflect.TypeFor[float64](),
		ParamDuration: reflect.TypeFor[time.Duration](),
		ParamCount:    reflect.TypeFor[int](),
		ParamAttempts: reflect.TypeFor[[]int](),
	}
	for _, p := range params {
		var s Spec
		if got := reflect.TypeOf(p.field(&s)).Elem(); got != want[p.Type] {
			t.Errorf("param %s is %v but its field holds a %v", p.Name, p.Type, got)
		}
		if err := p.Set(&s, p.Example); err != nil {
			t.Errorf("param %s: Set(Example %q) = %v", p.Name, p.Example, err)
		}
		for _, q := range params {
			if got := q.IsSet(s); got != (q.Name == p.Name) {
				t.Errorf("after Set(%s=%s), %s.IsSet = %v, want %v", p.Name, p.Example, q.Name, got, !got)
			}
		}
		if p.Doc == "" || p.Hint == "" || p.Example == "" {
			t.Errorf("param %s lacks a Doc, Hint or Example", p.Name)
		}
	}
}

// TestParamsTable: names are unique, each kind-specific parameter belongs
// to a known kind, and Params lists the common ones first, then the rest by
// name.
func TestParamsTable(t *testing.T) {
	seen := map[string]bool{}
	var common, own []string
	for _, p := range Params() {
		if seen[p.Name] {
			t.Errorf("param %s is declared twice", p.Name)
		}
		seen[p.Name] = true
		if p.Name == "kind" {
			t.Error(`"kind" is the fault itself, not a param`)
		}
		switch {
		case p.Kind == "":
			if len(own) > 0 {
				t.Errorf("common param %s comes after a kind-specific one", p.Name)
			}
			common = append(common, p.Name)
		case !slices.Contains(Kinds(), p.Kind):
			t.Errorf("param %s belongs to unknown kind %q", p.Name, p.Kind)
		default:
			own = append(own, p.Name)
		}
		if got, ok := LookupParam(p.Name); !ok || got.Name != p.Name {
			t.Errorf("LookupParam(%q) = %v, %v", p.Name, got.Name, ok)
		}
	}
	if !slices.IsSorted(own) {
		t.Errorf("kind-specific params %v are not sorted", own)
	}
	if _, ok := LookupParam("retries"); ok {
		t.Error(`LookupParam("retries") found a param`)
	}
	for _, k := range Kinds() {
		got := ParamsOf(k)
		if len(got) < len(common) {
			t.Errorf("ParamsOf(%s) = %d params, want the %d common ones at least", k, len(got), len(common))
		}
	}
}

// TestConstructorsFollowParams: New accepts on each kind exactly the
// parameters ParamsOf declares for it and rejects the others by name, and
// every problem it reports names "kind" or a declared parameter.
func TestConstructorsFollowParams(t *testing.T) {
	for _, kind := range Kinds() {
		for _, p := range params {
			s := Spec{Kind: kind, Rate: 0.1}
			for _, own := range params {
				if own.Kind == kind {
					_ = own.Set(&s, own.Example)
				}
			}
			if err := p.Set(&s, p.Example); err != nil {
				t.Fatal(err)
			}
			_, err := New(s)
			takes := slices.ContainsFunc(ParamsOf(kind), func(q Param) bool { return q.Name == p.Name })
			if takes != (p.Kind == "" || p.Kind == kind) {
				t.Errorf("ParamsOf(%s) has %s = %v, want %v", kind, p.Name, takes, !takes)
			}
			var fields []string
			for _, se := range specErrs(err) {
				fields = append(fields, se.Field)
			}
			switch {
			case takes && err != nil:
				t.Errorf("New(%s with %s=%s) = %v, want no error", kind, p.Name, p.Example, err)
			case !takes && (!slices.Equal(fields, []string{p.Name}) || !strings.Contains(err.Error(), "only a "+p.Kind+" fault takes "+p.Name)):
				t.Errorf("New(%s with %s=%s) = %v, want one problem with %s", kind, p.Name, p.Example, err, p.Name)
			}
		}
		// Each of the kind's own parameters reaches the fault it builds: some
		// field of the fault holds the Example's value.
		base := Spec{Kind: kind, Rate: 0.1}
		for _, p := range ParamsOf(kind) {
			if p.Kind == kind {
				_ = p.Set(&base, p.Example)
			}
		}
		f, err := New(base)
		if err != nil {
			t.Fatalf("New(%+v) = %v", base, err)
		}
		for _, p := range ParamsOf(kind) {
			if p.Kind != kind {
				continue
			}
			want := reflect.ValueOf(p.field(&base)).Elem().Interface()
			fv := reflect.ValueOf(f)
			found := false
			for i := range fv.NumField() {
				found = found || fv.Field(i).Interface() == want
			}
			if !found {
				t.Errorf("New(%s with %s=%s) = %#v, which does not hold %v: is %s really a %s parameter?", kind, p.Name, p.Example, f, want, p.Name, kind)
			}
		}
		bad := Spec{Kind: kind, Rate: 2, Attempts: []int{0}, After: -1, Copies: -1, Delay: -1}
		_, err = New(bad)
		for _, se := range specErrs(err) {
			if _, ok := LookupParam(se.Field); !ok && se.Field != "kind" {
				t.Errorf("New(%+v) reports field %q, which no Param declares", bad, se.Field)
			}
		}
	}
}

// specErrs flattens the *SpecError values joined in err.
func specErrs(err error) []*SpecError {
	switch u := err.(type) {
	case nil:
		return nil
	case *SpecError:
		return []*SpecError{u}
	case interface{ Unwrap() []error }:
		var out []*SpecError
		for _, e := range u.Unwrap() {
			out = append(out, specErrs(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		return specErrs(u.Unwrap())
	}
	return nil
}

func TestParamSet(t *testing.T) {
	tests := []struct {
		name, text string
		want       Spec
		wantErr    string
	}{
		{"rate", "0.25", Spec{Rate: 0.25}, ""},
		{"rate", "x", Spec{}, `rate "x" is not a number between 0 and 1`},
		{"after", "50ms", Spec{After: 50 * time.Millisecond}, ""},
		{"delay", "20", Spec{}, `delay "20" is not a duration like 50ms`},
		{"copies", "3", Spec{Copies: 3}, ""},
		{"copies", "3.5", Spec{}, `copies "3.5" is not a whole number`},
		{"attempts", "1 2", Spec{Attempts: []int{1, 2}}, ""},
		{"attempts", "1,2", Spec{}, `attempts "1,2" is not a list of whole numbers like 1 2`},
	}
	for _, tt := range tests {
		p, _ := LookupParam(tt.name)
		var got Spec
		err := p.Set(&got, tt.text)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("Set(%s, %q) = %v, want %q", tt.name, tt.text, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Set(%s, %q) = %+v, %v; want %+v", tt.name, tt.text, got, err, tt.want)
		}
	}
}
