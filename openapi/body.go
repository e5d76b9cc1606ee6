package openapi

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// maxDepth bounds how deep a generated value nests: a schema that refers
// to itself stops there (an optional part is left out; a required one
// cannot be generated).
const maxDepth = 12

// GenError is a value the generator could not make from a schema: where
// (the schema's JSON pointer) and why.
type GenError struct {
	Pointer string
	Reason  string
}

func (e *GenError) Error() string { return e.Pointer + ": " + e.Reason }

// gen makes request values from schemas: each string that allows it
// carries {{.Seq}} (or a {{uuid .}}), so each op sends its own.
type gen struct {
	// seq marks strings with the op's sequence number.
	seq bool
}

// Value generates a value of the schema s found at ptr.
func (g gen) value(s *openapi3.SchemaRef, ptr string, depth int) (any, error) {
	if s == nil {
		return "x", nil
	}
	if s.Ref != "" {
		ptr = refPointer(s.Ref, ptr)
	}
	sc := s.Value
	if sc == nil {
		return nil, &GenError{ptr, "the schema is empty (an unresolved $ref)"}
	}
	if depth > maxDepth {
		return nil, &GenError{ptr, fmt.Sprintf("nested more than %d deep (a schema that contains itself?): give the body in --fixtures", maxDepth)}
	}
	switch {
	case sc.Const != nil:
		return sc.Const, nil
	case sc.Example != nil:
		return sc.Example, nil
	case len(sc.Examples) > 0:
		return sc.Examples[0], nil
	case sc.Default != nil:
		return sc.Default, nil
	case len(sc.Enum) > 0:
		for _, e := range sc.Enum {
			if e != nil {
				return e, nil
			}
		}
		return nil, nil
	}
	if len(sc.AllOf) > 0 {
		return g.allOf(sc, ptr, depth)
	}
	if len(sc.OneOf) > 0 {
		return g.value(sc.OneOf[0], ptr+"/oneOf/0", depth+1)
	}
	if len(sc.AnyOf) > 0 {
		return g.value(sc.AnyOf[0], ptr+"/anyOf/0", depth+1)
	}
	typ := schemaType(sc)
	switch typ {
	case "object":
		return g.object(sc, ptr, depth)
	case "array":
		n := max(int(sc.MinItems), 1)
		if sc.MaxItems != nil && uint64(n) > *sc.MaxItems {
			n = int(*sc.MaxItems)
		}
		out := make([]any, 0, n)
		for i := range n {
			v, err := g.value(sc.Items, ptr+"/items", depth+1)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				if s, ok := v.(string); ok {
					v = fmt.Sprintf("%s-%d", s, i) // unique items
				}
			}
			out = append(out, v)
		}
		return out, nil
	case "integer", "number":
		return number(sc, typ == "integer", ptr)
	case "boolean":
		return false, nil
	case "null":
		return nil, nil
	case "string":
		return g.str(sc, ptr)
	}
	return nil, &GenError{ptr, "the schema has no type, properties, items or example to make a value from: give the body in --fixtures"}
}

// refPointer is the JSON pointer a $ref names, for messages: its fragment
// when it is in the same document, else the $ref itself.
func refPointer(ref, ptr string) string {
	if strings.HasPrefix(ref, "#/") {
		return ref
	}
	if ref != "" {
		return ref
	}
	return ptr
}

// schemaType is the type of sc: its one type (the first not null of a
// 3.1 list), else what its keywords imply.
func schemaType(sc *openapi3.Schema) string {
	if sc.Type != nil {
		for _, t := range sc.Type.Slice() {
			if t != "null" {
				return t
			}
		}
		if sc.Type.Is("null") {
			return "null"
		}
	}
	switch {
	case len(sc.Properties) > 0 || sc.AdditionalProperties.Has != nil || sc.AdditionalProperties.Schema != nil:
		return "object"
	case sc.Items != nil:
		return "array"
	case sc.Format != "" || sc.Pattern != "" || sc.MinLength > 0 || sc.MaxLength != nil:
		return "string"
	case sc.Min != nil || sc.Max != nil:
		return "number"
	}
	return ""
}

// object is an object of sc's required properties; of all of them when it
// requires none (a body of only optional fields is sent whole, as an
// example would be). readOnly properties are left out.
func (g gen) object(sc *openapi3.Schema, ptr string, depth int) (any, error) {
	out := map[string]any{}
	names := sc.Required
	if len(names) == 0 {
		names = sortedKeys(sc.Properties)
	}
	for _, name := range names {
		p, ok := sc.Properties[name]
		if !ok {
			out[name] = g.mark("x")
			continue
		}
		if p.Value != nil && p.Value.ReadOnly {
			continue
		}
		v, err := g.value(p, ptr+"/properties/"+escape(name), depth+1)
		if err != nil {
			if !slices.Contains(sc.Required, name) {
				continue // optional: left out
			}
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// allOf merges the objects its branches make; a branch that is not an
// object makes the value alone.
func (g gen) allOf(sc *openapi3.Schema, ptr string, depth int) (any, error) {
	merged := map[string]any{}
	var last any
	objects := true
	for i, b := range sc.AllOf {
		v, err := g.value(b, fmt.Sprintf("%s/allOf/%d", ptr, i), depth+1)
		if err != nil {
			return nil, err
		}
		last = v
		m, ok := v.(map[string]any)
		if !ok {
			objects = false
			continue
		}
		for k, e := range m {
			merged[k] = e
		}
	}
	if len(sc.Properties) > 0 {
		own, err := g.object(sc, ptr, depth)
		if err != nil {
			return nil, err
		}
		for k, e := range own.(map[string]any) {
			merged[k] = e
		}
	}
	if !objects && len(merged) == 0 {
		return last, nil
	}
	return merged, nil
}

// number is the least value sc allows, at least 1 when it allows it.
func number(sc *openapi3.Schema, integer bool, ptr string) (any, error) {
	lo, hi := math.Inf(-1), math.Inf(1)
	if sc.Min != nil {
		lo = *sc.Min
		if sc.ExclusiveMin.IsTrue() {
			lo = math.Nextafter(lo, math.Inf(1))
		}
	}
	if sc.ExclusiveMin.Value != nil {
		lo = math.Nextafter(*sc.ExclusiveMin.Value, math.Inf(1))
	}
	if sc.Max != nil {
		hi = *sc.Max
		if sc.ExclusiveMax.IsTrue() {
			hi = math.Nextafter(hi, math.Inf(-1))
		}
	}
	if sc.ExclusiveMax.Value != nil {
		hi = math.Nextafter(*sc.ExclusiveMax.Value, math.Inf(-1))
	}
	v := max(1, lo)
	if v > hi {
		v = lo
	}
	if integer {
		v = math.Ceil(v)
	}
	if sc.MultipleOf != nil && *sc.MultipleOf > 0 {
		v = math.Ceil(v / *sc.MultipleOf) * *sc.MultipleOf
	}
	if v < lo || v > hi || math.IsInf(v, 0) {
		return nil, &GenError{ptr, fmt.Sprintf("no %s lies between its minimum and maximum", map[bool]string{true: "integer", false: "number"}[integer])}
	}
	if integer {
		return int64(v), nil
	}
	return v, nil
}

// str is a string sc allows: by its format, else "x{{.Seq}}", padded or
// cut to its lengths. A pattern the candidates do not match cannot be
// generated.
func (g gen) str(sc *openapi3.Schema, ptr string) (any, error) {
	var cands []string
	switch sc.Format {
	case "uuid":
		cands = []string{g.uuid()}
	case "date-time":
		cands = []string{"2026-01-01T00:00:00Z"}
	case "date":
		cands = []string{"2026-01-01"}
	case "time":
		cands = []string{"00:00:00Z"}
	case "email":
		cands = []string{g.mark("user") + "@example.com"}
	case "uri", "url":
		cands = []string{"https://example.com/" + g.mark("x")}
	case "hostname":
		cands = []string{"example.com"}
	case "ipv4":
		cands = []string{"192.0.2.1"}
	case "ipv6":
		cands = []string{"2001:db8::1"}
	case "byte":
		cands = []string{"eA=="}
	case "binary":
		cands = []string{"x"}
	}
	cands = append(cands, g.mark("x"), "x", "1", "a", "A", "0")
	var re *regexp.Regexp
	if sc.Pattern != "" {
		var err error
		if re, err = regexp.Compile(sc.Pattern); err != nil {
			return nil, &GenError{ptr, fmt.Sprintf("pattern %q is not a regular expression Go reads (%v): give an example in the spec or the body in --fixtures", sc.Pattern, err)}
		}
	}
	for _, c := range cands {
		c = fit(c, sc)
		// a template's value is not known: match the pattern on what it
		// renders to for op 0
		probe := strings.NewReplacer("{{.Seq}}", "0", "{{uuid .}}", "00000000-0000-4000-8000-000000000000").Replace(c)
		if re != nil && !re.MatchString(probe) {
			continue
		}
		if sc.MaxLength != nil && uint64(len(probe)) > *sc.MaxLength {
			continue
		}
		return c, nil
	}
	if re != nil {
		return nil, &GenError{ptr, fmt.Sprintf("no string generated matches pattern %q: give an example in the spec or the body in --fixtures", sc.Pattern)}
	}
	return nil, &GenError{ptr, "no string fits its length limits"}
}

// fit pads c to sc's minLength with x, or cuts it to its maxLength (a
// template is not cut: it is left to fail the length check).
func fit(c string, sc *openapi3.Schema) string {
	if n := int(sc.MinLength); len(c) < n {
		c += strings.Repeat("x", n-len(c))
	}
	if sc.MaxLength != nil && uint64(len(c)) > *sc.MaxLength && !strings.Contains(c, "{{") {
		c = c[:*sc.MaxLength]
	}
	return c
}

// mark is s with the op's sequence number, when g marks strings.
func (g gen) mark(s string) string {
	if g.seq {
		return s + "{{.Seq}}"
	}
	return s
}

func (g gen) uuid() string {
	if g.seq {
		return "{{uuid .}}"
	}
	return "00000000-0000-4000-8000-000000000000"
}

// form is v, an object, as an application/x-www-form-urlencoded body: its
// scalars as they are, nested values as JSON.
func form(v any) (string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", fmt.Errorf("a form body must be an object, the schema makes %T", v)
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		var s string
		switch e := m[k].(type) {
		case string:
			s = e
		case map[string]any, []any:
			j, err := compact(e)
			if err != nil {
				return "", err
			}
			s = j
		default:
			s = fmt.Sprint(e)
		}
		parts = append(parts, url.QueryEscape(k)+"="+escapeTemplate(s))
	}
	return strings.Join(parts, "&"), nil
}

// escapeTemplate query-escapes s but keeps its {{…}} actions whole.
func escapeTemplate(s string) string {
	var b strings.Builder
	for s != "" {
		i := strings.Index(s, "{{")
		if i < 0 {
			b.WriteString(url.QueryEscape(s))
			break
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			b.WriteString(url.QueryEscape(s))
			break
		}
		b.WriteString(url.QueryEscape(s[:i]))
		b.WriteString(s[i : i+j+2])
		s = s[i+j+2:]
	}
	return b.String()
}
