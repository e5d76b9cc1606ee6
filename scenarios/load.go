package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/idemcheck/idemcheck/internal/yamlstrict"
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
	return LoadFileContext(context.Background(), path)
}

// LoadFileContext is LoadFile, reading at most MaxFileSize bytes and
// giving up when ctx ends (a FIFO without a writer, a pipe that never
// ends): then it returns ctx's error.
func LoadFileContext(ctx context.Context, path string) (*Scenario, error) {
	data, err := readFile(ctx, path)
	if isCtxErr(err) {
		return nil, err
	}
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
	s := &Scenario{}
	rel := relatives{} // a timeout's after: 0.5x (units.go)
	res := yamlstrict.Decode(data, s, rel.options(yamlOptions))
	var all Diagnostics
	for _, p := range res.Problems {
		all = append(all, Diagnostic{Source: source, Line: p.Line, Column: p.Column, Field: p.Field, Message: p.Message, Hint: p.Hint})
	}
	if !res.Decoded {
		return nil, all
	}
	s.Source = source
	s.Lines = res.Lines
	all = append(all, rel.apply(s)...)
	s.applyDefaults()
	for _, p := range s.validate() {
		if !related(res, p) {
			all = append(all, p.Diagnostic)
		}
	}
	if len(all) > 0 {
		sortDiagnostics(all)
		return nil, all
	}
	return s, nil
}

// yamlOptions words the decoder's messages for a scenario.
var yamlOptions = yamlstrict.Options{
	Noun:      "scenario",
	EmptyHint: "start from a built-in: idemcheck scenarios show charges-lost-ack",
	OneHint:   "put one scenario in each file",
	RootHint:  "begin with `name: my-scenario`",
	StringHint: func(field string) string {
		if strings.HasSuffix(field, "body") {
			return "quote a JSON body: body: '{\"a\": 1}'"
		}
		return ""
	},
	// A time.Duration of a type that knows no YAML (faults.Spec's) is
	// written as a Duration is: 250ms.
	Decoders: map[reflect.Type]func(*yaml.Node, reflect.Value) error{
		reflect.TypeFor[time.Duration](): func(n *yaml.Node, v reflect.Value) error {
			var d Duration
			if err := d.UnmarshalYAML(n); err != nil {
				return err
			}
			v.SetInt(int64(d))
			return nil
		},
		shareType: decodeShare,
	},
}

// related reports whether a validation problem stems from a field that
// could not be decoded (so it would only repeat that problem).
func related(res *yamlstrict.Result, p problem) bool {
	if res.Failed(p.Field) {
		return true
	}
	for _, f := range p.related {
		if res.Failed(f) {
			return true
		}
	}
	return false
}
