package yamlstrict

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// DefaultMaxNodes bounds the work of decoding one document, aliases
// expanded, when Options.MaxNodes is 0.
const DefaultMaxNodes = 100000

// Options words the messages about the document as a whole.
type Options struct {
	// Noun names the document in messages, with "a" or "the" before it:
	// "the scenario is empty". Empty means "document".
	Noun string
	// EmptyHint is the hint when data holds no document.
	EmptyHint string
	// OneHint is the hint when data holds more than one document.
	OneHint string
	// RootHint is the hint when the document is not a mapping.
	RootHint string
	// StringHint, when set, is the hint for field when it is given a
	// mapping or a list where a string goes; it may return "".
	StringHint func(field string) string
	// MaxNodes bounds the work of decoding one document, aliases expanded;
	// 0 means DefaultMaxNodes.
	MaxNodes int
	// Decoders decode the values of types that are not yaml.Unmarshalers
	// as if they were: a time.Duration in a struct from a package that
	// knows no YAML, say. Each is given the node and a settable value of
	// its type; its error is reported as an Unmarshaler's.
	Decoders map[reflect.Type]func(n *yaml.Node, v reflect.Value) error
}

// Problem is one problem in a document, located in its source.
type Problem struct {
	Line, Column int    // 1-based; 0 when unknown
	Field        string // dotted field path: "retry.attempts", "faults[1].rate"
	Message      string
	Hint         string // what to write instead; may be empty
}

// Result is what Decode found.
type Result struct {
	// Decoded is false when data held no mapping to decode: v is untouched
	// and Problems says why.
	Decoded bool
	// Lines is the line of each field path given a value: "retry.attempts",
	// "faults[1]", "headers.Authorization".
	Lines map[string]int
	// Problems is every problem, in the order found.
	Problems []Problem

	bad map[string]bool // fields with a decoding problem
}

// Failed reports whether field, or a field holding it, could not be
// decoded, so that validation does not repeat the problem.
func (r *Result) Failed(field string) bool {
	for bad := range r.bad {
		if field == bad || strings.HasPrefix(field, bad+".") || strings.HasPrefix(field, bad+"[") {
			return true
		}
	}
	return false
}

// Hinter is an error, returned by a yaml.Unmarshaler, that carries a hint
// apart from its message. Decode reports the two in their own places.
type Hinter interface {
	error
	Message() string
	Hint() string
}

type state struct {
	opts   Options
	res    *Result
	budget int
	huge   bool // reported the budget exhausted
	// aliased is true once an alias or a merge was expanded: only then
	// is a document too large an alias bomb.
	aliased bool
}

// Decode decodes the one YAML document in data into v, a non-nil pointer
// to a struct, rejecting unknown fields and going on past every problem.
// What decoded is in v even when there are problems.
func Decode(data []byte, v any, opts Options) *Result {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("yamlstrict: Decode needs a non-nil pointer to a struct, got %T", v))
	}
	if opts.Noun == "" {
		opts.Noun = "document"
	}
	if opts.MaxNodes == 0 {
		opts.MaxNodes = DefaultMaxNodes
	}
	d := &state{opts: opts, res: &Result{Lines: map[string]int{}, bad: map[string]bool{}}, budget: opts.MaxNodes}
	yd := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := yd.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.add(0, 0, "", "the "+opts.Noun+" is empty", opts.EmptyHint)
		} else {
			d.syntax(err, data)
		}
		return d.res
	}
	var next yaml.Node
	switch err := yd.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.syntax(err, data)
	default:
		d.add(next.Line, next.Column, "", "more than one YAML document", opts.OneHint)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			d.add(0, 0, "", "the "+opts.Noun+" is empty", "")
			return d.res
		}
		root = root.Content[0]
	}
	if root.Kind == yaml.AliasNode && root.Alias != nil {
		d.aliased = true
		root = root.Alias
	}
	if root.Kind != yaml.MappingNode {
		d.add(root.Line, root.Column, "", "a "+opts.Noun+" is a mapping of fields, got "+KindName(root), opts.RootHint)
		return d.res
	}
	d.res.Decoded = true
	d.value(root, rv.Elem(), "")
	return d.res
}

// spend takes one unit of work from the budget; false, and one problem,
// once it is exhausted (aliases and merges expanding without end).
func (d *state) spend(n *yaml.Node, path string) bool {
	if d.budget--; d.budget >= 0 {
		return true
	}
	if !d.huge {
		d.huge = true
		if d.aliased {
			d.add(n.Line, n.Column, path, "the document is too large (aliases expand to too many values)", "write the values out instead of nesting aliases")
		} else {
			d.add(n.Line, n.Column, path, fmt.Sprintf("the %s is too large: more than %d values (fields, list items, entries)", d.opts.Noun, d.opts.MaxNodes),
				fmt.Sprintf("keep it under %d values: split it into several", d.opts.MaxNodes))
		}
	}
	return false
}

func (d *state) add(line, col int, field, msg, hint string) {
	d.res.Problems = append(d.res.Problems, Problem{Line: line, Column: col, Field: field, Message: msg, Hint: hint})
	if field != "" {
		d.res.bad[field] = true
	}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntax turns a YAML parse error into a problem at its line.
func (d *state) syntax(err error, data []byte) {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	hint := "check the indentation and the quoting on this line and the one before it"
	switch {
	case strings.Contains(msg, "tab character") || strings.Contains(msg, "cannot start any token") && bytes.Contains(data, []byte("\t")):
		hint = "indent with spaces, not tabs"
	case strings.Contains(msg, "mapping values are not allowed"):
		hint = `quote a value that holds ": ", like body: '{"a": 1}'`
	case strings.Contains(msg, "did not find expected key"):
		hint = "fields of one mapping must share the same indentation"
	case strings.Contains(msg, "found undefined alias") || strings.Contains(msg, "unknown anchor"):
		hint = "define the anchor (&name) before its alias (*name)"
	}
	d.add(line, 0, "", "malformed YAML: "+msg, hint)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// value decodes n into v, recording the line of path and every problem.
func (d *state) value(n *yaml.Node, v reflect.Value, path string) {
	if !d.spend(n, path) {
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return
		}
		d.aliased = true
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		v.Set(reflect.Zero(v.Type()))
		return
	}
	lines := d.res.Lines
	if path != "" {
		if _, ok := lines[path]; !ok {
			lines[path] = n.Line
		}
	}
	if v.CanAddr() {
		if u, ok := v.Addr().Interface().(yaml.Unmarshaler); ok {
			d.unmarshalErr(n, path, n.Decode(u))
			return
		}
	}
	if dec, ok := d.opts.Decoders[v.Type()]; ok {
		d.unmarshalErr(n, path, dec(n, v))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.value(n, v.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.add(n.Line, n.Column, path, "want a mapping, got "+KindName(n), "the fields of "+path+" are: "+strings.Join(fieldsOf(v.Type()).names, ", "))
			return
		}
		d.structure(n, v, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.add(n.Line, n.Column, path, "want a mapping of names to values, got "+KindName(n), "write one `name: value` per line under "+path)
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		seen := map[string]int{}
		for _, kv := range d.pairs(n) {
			k, val := kv[0], kv[1]
			if k.Kind != yaml.ScalarNode {
				d.add(k.Line, k.Column, path, "want a name, got "+KindName(k), "")
				continue
			}
			if first, dup := seen[k.Value]; dup {
				d.add(k.Line, k.Column, join(path, k.Value), fmt.Sprintf("%q appears twice (first at line %d)", k.Value, first), "keep one")
				continue
			}
			seen[k.Value] = k.Line
			p := join(path, k.Value)
			lines[p] = k.Line
			e := reflect.New(v.Type().Elem()).Elem()
			d.value(val, e, p)
			v.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), e)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.add(n.Line, n.Column, path, "want a list, got "+KindName(n), "write [a, b] or one `- item` per line")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.value(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			hint := ""
			if d.opts.StringHint != nil {
				hint = d.opts.StringHint(path)
			}
			d.add(n.Line, n.Column, path, "want a string, got "+KindName(n), hint)
			return
		}
		v.SetString(n.Value)
	default:
		var want string
		switch v.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			want = "a whole number"
		case reflect.Float32, reflect.Float64:
			want = "a number"
		case reflect.Bool:
			want = "true or false"
		default:
			want = v.Type().String()
		}
		if n.Kind != yaml.ScalarNode {
			d.add(n.Line, n.Column, path, "want "+want+", got "+KindName(n), "")
			return
		}
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil && want == "a whole number" && n.ShortTag() == "!!float" && f != math.Trunc(f) {
			// yaml.v3 truncates 2.5 to 2 for an integer field.
			d.add(n.Line, n.Column, path, "want "+want+", got "+KindName(n), "")
			return
		}
		p := reflect.New(v.Type())
		if err := n.Decode(p.Interface()); err != nil {
			hint := ""
			if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
				hint = "write it without quotes: " + n.Value
			}
			d.add(n.Line, n.Column, path, "want "+want+", got "+KindName(n), hint)
			return
		}
		v.Set(p.Elem())
	}
}

// unmarshalErr records the error of an Unmarshaler or a Decoder, if any,
// as the problem of path.
func (d *state) unmarshalErr(n *yaml.Node, path string, err error) {
	if err == nil {
		return
	}
	var h Hinter
	if errors.As(err, &h) {
		d.add(n.Line, n.Column, path, h.Message(), h.Hint())
	} else {
		d.add(n.Line, n.Column, path, err.Error(), "")
	}
}

// structure decodes a mapping into a struct, rejecting unknown fields.
func (d *state) structure(n *yaml.Node, v reflect.Value, path string) {
	fs := fieldsOf(v.Type())
	seen := map[string]int{}
	for _, kv := range d.pairs(n) {
		k, val := kv[0], kv[1]
		if k.Kind != yaml.ScalarNode {
			d.add(k.Line, k.Column, path, "want a field name, got "+KindName(k), "")
			continue
		}
		name := k.Value
		p := join(path, name)
		idx, ok := fs.index[name]
		if !ok {
			where, in := "a "+d.opts.Noun, ""
			if path != "" {
				where, in = path, " in "+path
			}
			d.add(k.Line, k.Column, p, fmt.Sprintf("unknown field %q%s", name, in), Suggest(name, fs.names, where))
			continue
		}
		if first, dup := seen[name]; dup {
			d.add(k.Line, k.Column, p, fmt.Sprintf("field %q appears twice (first at line %d)", name, first), "keep one")
			continue
		}
		seen[name] = k.Line
		if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!null" {
			d.res.Lines[p] = k.Line
		}
		d.value(val, v.FieldByIndex(idx), p)
	}
}

// pairs returns the key/value pairs of a mapping with merge keys (<<)
// expanded; explicit keys win over merged ones.
func (d *state) pairs(n *yaml.Node) [][2]*yaml.Node {
	var own, merged [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			d.aliased = true
			if !d.spend(k, "") {
				continue
			}
			srcs := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				srcs = v.Content
			}
			for _, m := range srcs {
				if m.Kind == yaml.AliasNode && m.Alias != nil {
					m = m.Alias
				}
				if m.Kind != yaml.MappingNode {
					d.add(m.Line, m.Column, "", "a merge (<<) needs a mapping, got "+KindName(m), "")
					continue
				}
				merged = append(merged, d.pairs(m)...)
			}
			continue
		}
		own = append(own, [2]*yaml.Node{k, v})
	}
	if len(merged) == 0 {
		return own
	}
	taken := map[string]bool{}
	for _, kv := range own {
		taken[kv[0].Value] = true
	}
	var out [][2]*yaml.Node
	for _, kv := range merged {
		if !taken[kv[0].Value] {
			taken[kv[0].Value] = true
			out = append(out, kv)
		}
	}
	return append(out, own...)
}

// KindName describes a node for a message: "a mapping", "a list", "the
// number 3", "the string \"x\"".
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	switch n.ShortTag() {
	case "!!null":
		return "nothing (null)"
	case "!!int":
		return "the number " + n.Value
	case "!!float":
		return "the number " + n.Value
	case "!!bool":
		return "the boolean " + n.Value
	}
	return fmt.Sprintf("the string %q", n.Value)
}
