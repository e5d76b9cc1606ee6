package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Diagnostic is one problem in a scenario, located in its source.
type Diagnostic struct {
	Source       string // file path or "builtin:NAME"; "" for flags
	Line, Column int    // 1-based; 0 when unknown
	Field        string // dotted field path: "retry.attempts", "faults[1].rate"
	Message      string
	Hint         string // what to write instead; may be empty
}

// String formats d as `file:line:col: field: message (hint: ...)`.
func (d Diagnostic) String() string {
	var b strings.Builder
	loc := d.Source
	if d.Line > 0 {
		loc += ":" + strconv.Itoa(d.Line)
		if d.Column > 0 {
			loc += ":" + strconv.Itoa(d.Column)
		}
	}
	if loc != "" {
		b.WriteString(loc)
		b.WriteString(": ")
	}
	if d.Field != "" {
		b.WriteString(d.Field)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	if d.Hint != "" {
		b.WriteString(" (hint: ")
		b.WriteString(d.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Diagnostics is every problem found in a scenario. It is the error LoadFile,
// Parse, Resolve and Builtin return for anything wrong in the user's input,
// so callers find it with errors.As.
type Diagnostics []Diagnostic

// Error lists every diagnostic, one per line.
func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// sortDiagnostics orders ds by line then column, located ones first.
func sortDiagnostics(ds Diagnostics) {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if (a.Line == 0) != (b.Line == 0) {
			return a.Line != 0
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}

// LoadFile reads, decodes, defaults and validates the scenario in the file
// at path. Every problem with the file is returned at once as Diagnostics.
// (It is not named Load: that is the scenario's load section.)
func LoadFile(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Diagnostics{{
			Source:  path,
			Message: fmt.Sprintf("cannot read the scenario: %v", unwrapPath(err)),
			Hint:    "check the path, or name a built-in scenario (" + strings.Join(BuiltinNames(), ", ") + ")",
		}}
	}
	return Parse(path, data)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Parse decodes a scenario from YAML, strictly (an unknown field is an
// error), fills in the defaults and validates it. source names the input in
// diagnostics (a file path or "builtin:NAME"). Every problem is returned at
// once as Diagnostics, each with its line.
func Parse(source string, data []byte) (*Scenario, error) {
	s, dec := decode(source, data)
	if s == nil {
		return nil, dec.diags
	}
	s.applyDefaults()
	all := dec.diags
	for _, p := range s.validate() {
		if !dec.related(p) {
			all = append(all, p.Diagnostic)
		}
	}
	if len(all) > 0 {
		sortDiagnostics(all)
		return nil, all
	}
	return s, nil
}

// maxNodes bounds the work of decoding one document, aliases expanded.
const maxNodes = 100000

type decoder struct {
	source string
	lines  map[string]int
	diags  Diagnostics
	bad    map[string]bool // fields with a decoding problem
	budget int
	huge   bool // reported the budget exhausted
}

// spend takes one unit of work from the budget; false, and one diagnostic,
// once it is exhausted (aliases and merges expanding without end).
func (d *decoder) spend(n *yaml.Node, path string) bool {
	if d.budget--; d.budget >= 0 {
		return true
	}
	if !d.huge {
		d.huge = true
		d.add(n.Line, n.Column, path, "the document is too large (aliases expand to too many values)", "write the values out instead of nesting aliases")
	}
	return false
}

// decode returns nil when the input is not a YAML document at all.
func decode(source string, data []byte) (*Scenario, *decoder) {
	d := &decoder{source: source, lines: map[string]int{}, bad: map[string]bool{}, budget: maxNodes}
	yd := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := yd.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.add(0, 0, "", "the scenario is empty", "start from a built-in: idemcheck scenarios show charges-lost-ack")
		} else {
			d.syntax(err, data)
		}
		return nil, d
	}
	var next yaml.Node
	switch err := yd.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.syntax(err, data)
	default:
		d.add(next.Line, next.Column, "", "more than one YAML document", "put one scenario in each file")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			d.add(0, 0, "", "the scenario is empty", "")
			return nil, d
		}
		root = root.Content[0]
	}
	if root.Kind == yaml.AliasNode && root.Alias != nil {
		root = root.Alias
	}
	if root.Kind != yaml.MappingNode {
		d.add(root.Line, root.Column, "", "a scenario is a mapping of fields, got "+kindName(root), "begin with `name: my-scenario`")
		return nil, d
	}
	s := &Scenario{}
	d.value(root, reflect.ValueOf(s).Elem(), "")
	s.Source = source
	s.Lines = d.lines
	return s, d
}

func (d *decoder) add(line, col int, field, msg, hint string) {
	d.diags = append(d.diags, Diagnostic{Source: d.source, Line: line, Column: col, Field: field, Message: msg, Hint: hint})
	if field != "" {
		d.bad[field] = true
	}
}

// related reports whether a validation problem stems from a field that
// could not be decoded (so it would only repeat that problem).
func (d *decoder) related(p problem) bool {
	for _, f := range append([]string{p.Field}, p.related...) {
		for bad := range d.bad {
			if f == bad || strings.HasPrefix(f, bad+".") || strings.HasPrefix(f, bad+"[") {
				return true
			}
		}
	}
	return false
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntax turns a YAML parse error into a diagnostic at its line.
func (d *decoder) syntax(err error, data []byte) {
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
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	if !d.spend(n, path) {
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return
		}
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		v.Set(reflect.Zero(v.Type()))
		return
	}
	if path != "" {
		if _, ok := d.lines[path]; !ok {
			d.lines[path] = n.Line
		}
	}
	if v.CanAddr() {
		if u, ok := v.Addr().Interface().(yaml.Unmarshaler); ok {
			if err := n.Decode(u); err != nil {
				var he *hintError
				if errors.As(err, &he) {
					d.add(n.Line, n.Column, path, he.msg, he.hint)
				} else {
					d.add(n.Line, n.Column, path, err.Error(), "")
				}
			}
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.value(n, v.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.add(n.Line, n.Column, path, "want a mapping, got "+kindName(n), "the fields of "+path+" are: "+strings.Join(fieldsOf(v.Type()).names, ", "))
			return
		}
		d.structure(n, v, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.add(n.Line, n.Column, path, "want a mapping of names to values, got "+kindName(n), "write one `name: value` per line under "+path)
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		seen := map[string]int{}
		for _, kv := range d.pairs(n) {
			k, val := kv[0], kv[1]
			if k.Kind != yaml.ScalarNode {
				d.add(k.Line, k.Column, path, "want a name, got "+kindName(k), "")
				continue
			}
			if first, dup := seen[k.Value]; dup {
				d.add(k.Line, k.Column, join(path, k.Value), fmt.Sprintf("%q appears twice (first at line %d)", k.Value, first), "keep one")
				continue
			}
			seen[k.Value] = k.Line
			p := join(path, k.Value)
			d.lines[p] = k.Line
			e := reflect.New(v.Type().Elem()).Elem()
			d.value(val, e, p)
			v.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), e)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.add(n.Line, n.Column, path, "want a list, got "+kindName(n), "write [a, b] or one `- item` per line")
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
			if strings.HasSuffix(path, "body") {
				hint = "quote a JSON body: body: '{\"a\": 1}'"
			}
			d.add(n.Line, n.Column, path, "want a string, got "+kindName(n), hint)
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
			d.add(n.Line, n.Column, path, "want "+want+", got "+kindName(n), "")
			return
		}
		p := reflect.New(v.Type())
		if err := n.Decode(p.Interface()); err != nil {
			hint := ""
			if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
				hint = "write it without quotes: " + n.Value
			}
			d.add(n.Line, n.Column, path, "want "+want+", got "+kindName(n), hint)
			return
		}
		v.Set(p.Elem())
	}
}

// structure decodes a mapping into a struct, rejecting unknown fields.
func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	fs := fieldsOf(v.Type())
	seen := map[string]int{}
	for _, kv := range d.pairs(n) {
		k, val := kv[0], kv[1]
		if k.Kind != yaml.ScalarNode {
			d.add(k.Line, k.Column, path, "want a field name, got "+kindName(k), "")
			continue
		}
		name := k.Value
		p := join(path, name)
		idx, ok := fs.index[name]
		if !ok {
			where := ""
			if path != "" {
				where = " in " + path
			}
			d.add(k.Line, k.Column, p, fmt.Sprintf("unknown field %q%s", name, where), suggest(name, fs.names, path))
			continue
		}
		if first, dup := seen[name]; dup {
			d.add(k.Line, k.Column, p, fmt.Sprintf("field %q appears twice (first at line %d)", name, first), "keep one")
			continue
		}
		seen[name] = k.Line
		if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!null" {
			d.lines[p] = k.Line
		}
		d.value(val, v.FieldByIndex(idx), p)
	}
}

// pairs returns the key/value pairs of a mapping with merge keys (<<)
// expanded; explicit keys win over merged ones.
func (d *decoder) pairs(n *yaml.Node) [][2]*yaml.Node {
	var own, merged [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
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
					d.add(m.Line, m.Column, "", "a merge (<<) needs a mapping, got "+kindName(m), "")
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

type fieldSet struct {
	index map[string][]int
	names []string // sorted
}

// fieldsOf lists the YAML fields of a struct type, inline fields included.
func fieldsOf(t reflect.Type) fieldSet {
	fs := fieldSet{index: map[string][]int{}}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			if !f.IsExported() || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), prefix...), i)
			if opts == "inline" {
				walk(f.Type, idx)
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			fs.index[name] = idx
			fs.names = append(fs.names, name)
		}
	}
	walk(t, nil)
	sort.Strings(fs.names)
	return fs
}

// suggest is the hint for an unknown name: the closest known one, and the
// whole list when even the closest is far off.
func suggest(name string, known []string, where string) string {
	best, close := closest(name, known)
	if best == "" {
		return ""
	}
	hint := "did you mean " + best + "?"
	if !close {
		if where == "" {
			where = "a scenario"
		}
		hint += " " + where + " takes: " + strings.Join(known, ", ")
	}
	return hint
}

// closest returns the known name nearest to name by edit distance, and
// whether it is near enough to be a likely typo.
func closest(name string, known []string) (string, bool) {
	best, bestD := "", -1
	for _, k := range known {
		if dist := distance(strings.ToLower(name), strings.ToLower(k)); bestD < 0 || dist < bestD {
			best, bestD = k, dist
		}
	}
	return best, bestD >= 0 && bestD <= max(2, len(name)/2)
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
