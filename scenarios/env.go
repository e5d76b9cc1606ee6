package scenarios

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	tparse "text/template/parse"

	"github.com/idemcheck/idemcheck/internal/redact"
)

// fieldText is one template of a scenario and the field it is written in.
type fieldText struct {
	field, text string
}

// templates lists every template of the scenario with its field, in file
// order: setup, operation, oracles.
func (s *Scenario) templates() []fieldText {
	var out []fieldText
	req := func(at string, r Request) {
		out = append(out, fieldText{at + ".path", r.Path})
		names := make([]string, 0, len(r.Headers))
		for n := range r.Headers {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			out = append(out, fieldText{at + ".headers." + n, r.Headers[n]})
		}
		out = append(out, fieldText{at + ".body", r.Body})
	}
	for i, r := range s.Setup {
		req(fmt.Sprintf("setup[%d]", i), r)
	}
	op := s.Operation
	req("operation", op.Request)
	out = append(out, fieldText{"operation.key.value", op.Key.Value})
	if b := op.Before; b != nil {
		req("operation.before", b.Request)
	}
	if rp := op.Replay; rp != nil {
		out = append(out, fieldText{"operation.replay.body", rp.Body})
	}
	for i, o := range s.Oracles {
		at := fmt.Sprintf("oracles[%d]", i)
		if e := o.Effects; e != nil {
			if e.PerKey != nil {
				req(at+".effects.per_key", e.PerKey.Request)
			}
			if e.Bulk != nil {
				req(at+".effects.bulk", e.Bulk.Request)
			}
			if e.SQL != nil {
				out = append(out, fieldText{at + ".effects.sql.url", e.SQL.URL})
			}
			if e.Redis != nil {
				out = append(out, fieldText{at + ".effects.redis.url", e.Redis.URL},
					fieldText{at + ".effects.redis.pattern", e.Redis.Pattern})
			}
		}
		if cn := o.Counter; cn != nil {
			switch {
			case cn.SQL != nil:
				out = append(out, fieldText{at + ".counter.sql.url", cn.SQL.URL})
			case cn.Redis != nil:
				out = append(out, fieldText{at + ".counter.redis.url", cn.Redis.URL})
			default:
				req(at+".counter", cn.Request)
			}
		}
		if a := o.Account; a != nil {
			req(at+".account", a.Request)
			req(at+".account.applied", a.Applied.Request)
		}
	}
	return out
}

// MissingEnv returns a diagnostic, at its field and line, for every
// {{env "NAME"}} of the scenario's templates that gives no default while
// getenv has no value (or an empty one) for NAME; nil when there is none.
// Call it after loading, before the run, so that a missing secret is a
// configuration error found before any request is sent. (A name computed
// at run time is checked when it renders: an EnvError.)
func (s *Scenario) MissingEnv(getenv func(string) string) Diagnostics {
	var ds Diagnostics
	for _, ft := range s.templates() {
		if !strings.Contains(ft.text, "{{") {
			continue
		}
		t, err := parse(ft.field, ft.text, sampleFuncs())
		if err != nil {
			continue // validation reports it
		}
		for _, name := range envNames(t.Tree.Root) {
			if getenv != nil && getenv(name) != "" {
				continue
			}
			ds = append(ds, Diagnostic{Source: s.Source, Line: s.line(ft.field), Field: ft.field,
				Message: fmt.Sprintf("environment variable %s is not set", name),
				Hint:    fmt.Sprintf("export %s=..., or give a default: {{env %q \"default\"}}", name, name)})
		}
	}
	if len(ds) == 0 {
		return nil
	}
	sortDiagnostics(ds)
	return ds
}

// BadHeaders returns a diagnostic for every header of the scenario's
// requests (setup, operation, operation.before, oracles) that, rendered
// with getenv's values and sample variables, is not a valid header value:
// a secret from the environment with a line break in it is a
// configuration error found before any request is sent, not a transport
// error on every attempt. nil when there is none.
func (s *Scenario) BadHeaders(getenv func(string) string) Diagnostics {
	var ds Diagnostics
	sample := Vars{Key: "00000000-0000-4000-8000-000000000000", Attempt: 1}
	if len(s.Users) > 0 {
		sample.User = s.Users[0]
	}
	if b := s.Operation.Before; b != nil {
		sample.Vars = map[string]string{}
		for name := range b.Vars {
			sample.Vars[name] = "0"
		}
	}
	for _, ft := range s.templates() {
		if !strings.Contains(ft.field, ".headers.") {
			continue
		}
		t, err := NewText(ft.field, ft.text, getenv)
		if err != nil {
			continue // validation reports it
		}
		v, err := t.Render(context.Background(), sample)
		if err != nil || ValidHeaderValue(v) {
			continue // a missing variable is MissingEnv's
		}
		ds = append(ds, Diagnostic{Source: s.Source, Line: s.line(ft.field), Field: ft.field,
			Message: "the value, with the environment's values, holds a line break or another control character, which HTTP does not allow in a header",
			Hint:    "remove the line break from the environment variable (a token read from a file often ends in one)"})
	}
	if len(ds) == 0 {
		return nil
	}
	sortDiagnostics(ds)
	return ds
}

// envNames returns the names of the env calls under n that give no
// default, each once, in order.
func envNames(n tparse.Node) []string {
	var out []string
	var walk func(tparse.Node)
	walk = func(n tparse.Node) {
		switch x := n.(type) {
		case *tparse.ListNode:
			if x == nil {
				return
			}
			for _, c := range x.Nodes {
				walk(c)
			}
		case *tparse.ActionNode:
			walk(x.Pipe)
		case *tparse.IfNode:
			walk(x.Pipe)
			walk(x.List)
			walk(x.ElseList)
		case *tparse.RangeNode:
			walk(x.Pipe)
			walk(x.List)
			walk(x.ElseList)
		case *tparse.WithNode:
			walk(x.Pipe)
			walk(x.List)
			walk(x.ElseList)
		case *tparse.TemplateNode:
			walk(x.Pipe)
		case *tparse.PipeNode:
			if x == nil {
				return
			}
			for _, c := range x.Cmds {
				walk(c)
			}
		case *tparse.CommandNode:
			if len(x.Args) == 2 {
				if id, ok := x.Args[0].(*tparse.IdentifierNode); ok && id.Ident == "env" {
					if s, ok := x.Args[1].(*tparse.StringNode); ok && !slices.Contains(out, s.Text) {
						out = append(out, s.Text)
					}
				}
			}
			for _, a := range x.Args {
				walk(a)
			}
		}
	}
	walk(n)
	return out
}

// QueryValues are the literal query values of every path the scenario
// sends (setup, operation, before, oracles): the values the reports mask
// in each URL they print, which a server that reflects its request may
// echo in an answer. A value a template writes is left out: its secrets,
// if any, come from the environment and are masked as such.
func (s *Scenario) QueryValues() []string {
	var out []string
	for _, f := range s.templates() {
		if strings.HasSuffix(f.field, ".path") {
			out = append(out, LiteralQueryValues(f.text)...)
		}
	}
	return out
}

// minReflected is the shortest literal query value masked in answers when
// its name does not mark a credential: shorter ones ("true", "10", "desc")
// are words an answer holds for its own reasons, and masking them would
// blind the evidence.
const minReflected = 8

// LiteralQueryValues are the query values of a path template that no
// template writes, unescaped, that may be credentials: those whose name
// marks one (api_key, token) and those of minReflected bytes or more.
func LiteralQueryValues(path string) []string {
	_, query, ok := strings.Cut(path, "?")
	if !ok {
		return nil
	}
	var out []string
	for part := range strings.SplitSeq(query, "&") {
		name, v, _ := strings.Cut(part, "=")
		if v == "" || strings.Contains(v, "{{") {
			continue
		}
		if u, err := url.QueryUnescape(v); err == nil {
			v = u
		}
		if redact.SecretHeader(name) || len(v) >= minReflected {
			out = append(out, v)
		}
	}
	return out
}
