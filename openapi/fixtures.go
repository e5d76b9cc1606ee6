package openapi

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/idemcheck/idemcheck/internal/yamlstrict"
)

// MaxFixturesBytes bounds a fixtures file.
const MaxFixturesBytes = 4 << 20

// ErrFixtures is wrapped by every error ReadFixtures returns.
var ErrFixtures = errors.New("fixtures")

// Fixtures override, per operation, what a spec gives or cannot give:
//
//	operations:
//	  createCharge:                  # an operationId, or "POST /charges"
//	    body: '{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}'
//	    headers: {X-Tenant: t1}
//	    path: {account: acct_1}      # path parameters
//	    query: {expand: customer}
//	    key: {header: Idempotency-Key}   # or {field: op_id}
//	    effects: {request: 'GET /charges?idempotency_key={{.Key}}', value: '$.count'}
//	    error_body: '{"amount":100,"currency":"usd","customer":"cus_fail"}'  # C12
//	  deleteCustomer:
//	    skip: deletes the shared test customer
type Fixtures struct {
	Operations map[string]*Fixture `yaml:"operations"`
	// Source is the file they were read from.
	Source string `yaml:"-"`
	// Lines is the line of each operation's entry.
	Lines map[string]int `yaml:"-"`
}

// Fixture is one operation's overrides. Values are templates, as a
// scenario's are ({{.Seq}}, {{.Key}}, {{env "NAME"}}).
type Fixture struct {
	Body    string            `yaml:"body"`
	Headers map[string]string `yaml:"headers"`
	Path    map[string]string `yaml:"path"`
	Query   map[string]string `yaml:"query"`
	Key     struct {
		Header string `yaml:"header"`
		Field  string `yaml:"field"`
	} `yaml:"key"`
	Effects *struct {
		Request string `yaml:"request"`
		Value   string `yaml:"value"`
	} `yaml:"effects"`
	// ErrorBody is a body the API fails on (a declined card), for C12.
	ErrorBody string `yaml:"error_body"`
	// Skip, when set, leaves the operation out and says why.
	Skip string `yaml:"skip"`
}

// ReadFixtures reads and checks a fixtures file; its errors name the
// file, line and field.
func ReadFixtures(path string) (*Fixtures, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFixtures, err)
	}
	defer f.Close()
	data := make([]byte, MaxFixturesBytes+1)
	n, _ := readFull(f, data)
	if n > MaxFixturesBytes {
		return nil, fmt.Errorf("%w: %s is over %d MiB", ErrFixtures, path, MaxFixturesBytes>>20)
	}
	return ParseFixtures(path, data[:n])
}

func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// ParseFixtures parses a fixtures document read from source.
func ParseFixtures(source string, data []byte) (*Fixtures, error) {
	fx := &Fixtures{Source: source}
	res := yamlstrict.Decode(data, fx, yamlstrict.Options{Noun: "fixtures file",
		RootHint: "operations: {createCharge: {body: '{\"amount\":100}'}}"})
	var probs []string
	for _, p := range res.Problems {
		probs = append(probs, problem(source, p.Line, p.Field, p.Message, p.Hint))
	}
	fx.Lines = map[string]int{}
	for name, e := range fx.Operations {
		field := "operations." + name
		fx.Lines[name] = res.Lines[field]
		if e == nil {
			continue
		}
		if e.Key.Header != "" && e.Key.Field != "" {
			probs = append(probs, problem(source, res.Lines[field+".key"], field+".key", "header and field both set", "the key goes in a header or in a JSON body field, not both"))
		}
		if e.Effects != nil {
			switch {
			case e.Effects.Request == "":
				probs = append(probs, problem(source, res.Lines[field+".effects"], field+".effects.request", "missing", "the request that counts a key's effects: 'GET /charges?idempotency_key={{.Key}}'"))
			case !strings.Contains(e.Effects.Request, "{{"):
				probs = append(probs, problem(source, res.Lines[field+".effects.request"], field+".effects.request", "does not name the key", "put {{.Key}} where the key goes"))
			}
		}
		if m, _, ok := strings.Cut(name, " "); ok && strings.ToUpper(m) != m {
			probs = append(probs, problem(source, res.Lines[field], field, "the method of \""+name+"\" is not upper case", "write it as the spec's path with the method first: \"POST /charges\""))
		}
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrFixtures, strings.Join(probs, "\n"))
	}
	return fx, nil
}

func problem(source string, line int, field, msg, hint string) string {
	var b strings.Builder
	b.WriteString(source)
	if line > 0 {
		fmt.Fprintf(&b, ":%d", line)
	}
	if field != "" {
		b.WriteString(": " + field)
	}
	b.WriteString(": " + msg)
	if hint != "" {
		b.WriteString(" (" + hint + ")")
	}
	return b.String()
}

// For is the fixture of an operation, by its operationId or "METHOD
// /path"; nil when there is none (or fx is nil).
func (fx *Fixtures) For(id, method, path string) *Fixture {
	if fx == nil {
		return nil
	}
	if id != "" {
		if e := fx.Operations[id]; e != nil {
			return e
		}
	}
	return fx.Operations[method+" "+path]
}

// Unused names the fixtures' entries that select no operation of ops: a
// misspelt operationId is said, not silently ignored.
func (fx *Fixtures) Unused(p *Plan) []string {
	if fx == nil {
		return nil
	}
	used := map[string]bool{}
	mark := func(id, method, path string) {
		used[id] = true
		used[method+" "+path] = true
	}
	for _, o := range p.Ops {
		mark(o.ID, o.Method, o.Path)
	}
	for _, s := range p.Skipped {
		mark(s.OperationID, s.Method, s.Path)
	}
	var out []string
	for _, name := range sortedKeys(fx.Operations) {
		if !used[name] {
			out = append(out, fmt.Sprintf("%s:%d: operations.%s: no such operation in the spec (an operationId, or \"METHOD /path\" as the spec writes the path)", fx.Source, fx.Lines[name], name))
		}
	}
	return out
}

// param is the fixture's value of the parameter name in in.
func (f *Fixture) param(in, name string) (string, bool) {
	if f == nil {
		return "", false
	}
	var m map[string]string
	switch in {
	case "path":
		m = f.Path
	case "query":
		m = f.Query
	case "header":
		for k, v := range f.Headers {
			if strings.EqualFold(k, name) {
				return v, true
			}
		}
		return "", false
	}
	v, ok := m[name]
	return v, ok
}
