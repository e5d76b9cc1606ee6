package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"text/template"
	tparse "text/template/parse"
)

// Limits of one template render. A scenario is code the user runs, but
// it may come from elsewhere, and a template that never ends
// ({{range 100000000000000}}) or grows without bound (a string doubled
// in a loop) must fail with an error, not hold a worker or the memory.
const (
	// MaxRender bounds what one template renders, in bytes: a request
	// body, a path, a header value, a key.
	MaxRender = 8 << 20
	// MaxSteps bounds the work of one render: every list of actions it
	// executes (a range iteration, an if or with branch, a called
	// template) is a step.
	MaxSteps = 100000
	// maxProduced bounds the bytes the string functions (printf, html, …)
	// may produce in one render, kept or not.
	maxProduced = 4 * MaxRender
)

// ErrRenderLimit is wrapped by the error of a render that went past
// MaxRender or MaxSteps.
var ErrRenderLimit = errors.New("the template exceeds its render limit")

// stepFunc is the function a compiled template calls at the start of every
// list it executes, to count its steps and notice its context's end.
const stepFunc = "idemcheckStep"

// budget is what one render may still spend. Each instance of a compiled
// template owns one, reset before each render.
type budget struct {
	ctx      context.Context
	steps    int
	produced int
}

func (b *budget) reset(ctx context.Context) {
	if ctx == nil {
		ctx = context.Background()
	}
	b.ctx, b.steps, b.produced = ctx, 0, 0
}

// step counts one step; an error ends the render.
func (b *budget) step() (string, error) {
	b.steps++
	if b.steps > MaxSteps {
		return "", fmt.Errorf("%w: more than %d steps (a range or template call that does not end?)", ErrRenderLimit, MaxSteps)
	}
	if b.steps&63 == 0 {
		if err := b.ctx.Err(); err != nil {
			return "", err
		}
	}
	return "", nil
}

// charge counts a string a function produced.
func (b *budget) charge(s string) (string, error) {
	if len(s) > MaxRender {
		return "", fmt.Errorf("%w: a value of %d bytes, more than %d", ErrRenderLimit, len(s), MaxRender)
	}
	b.produced += len(s)
	if b.produced > maxProduced {
		return "", fmt.Errorf("%w: the functions produced more than %d bytes", ErrRenderLimit, maxProduced)
	}
	return s, nil
}

// bounded are the functions whose output is charged to the budget: the
// built-ins that make strings, which a loop could otherwise grow without
// bound ({{$s = printf "%s%s" $s $s}}).
func (b *budget) funcs() template.FuncMap {
	return template.FuncMap{
		stepFunc:   b.step,
		"printf":   func(f string, a ...any) (string, error) { return b.charge(fmt.Sprintf(f, a...)) },
		"print":    func(a ...any) (string, error) { return b.charge(fmt.Sprint(a...)) },
		"println":  func(a ...any) (string, error) { return b.charge(fmt.Sprintln(a...)) },
		"html":     func(a ...any) (string, error) { return b.charge(template.HTMLEscaper(a...)) },
		"js":       func(a ...any) (string, error) { return b.charge(template.JSEscaper(a...)) },
		"urlquery": func(a ...any) (string, error) { return b.charge(template.URLQueryEscaper(a...)) },
	}
}

// limitWriter is a strings.Builder that refuses to grow past MaxRender.
type limitWriter struct{ strings.Builder }

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.Len()+len(p) > MaxRender {
		return 0, fmt.Errorf("%w: it renders more than %d bytes", ErrRenderLimit, MaxRender)
	}
	return w.Builder.Write(p)
}

// compiled is a parsed template that renders within its limits. Renders
// run on instances (clones bound to a budget of their own) kept in a pool,
// so concurrent renders never share a budget and cost no clone each.
type compiled struct {
	base *template.Template
	fm   template.FuncMap // the functions that need no budget
	pool sync.Pool        // of *instance
}

type instance struct {
	t *template.Template
	b *budget
}

// compile parses text as the template field with the functions fm, and
// inserts a step at the start of every list of actions.
func compile(field, text string, fm template.FuncMap) (*compiled, error) {
	all := template.FuncMap{}
	for k, v := range fm {
		all[k] = v
	}
	for k, v := range (&budget{}).funcs() {
		all[k] = v
	}
	t, err := template.New(field).Option("missingkey=error").Funcs(all).Parse(text)
	if err != nil {
		return nil, &TemplateError{Field: field, Err: err}
	}
	for _, sub := range t.Templates() {
		if sub.Tree != nil {
			addSteps(sub.Tree.Root)
		}
	}
	return &compiled{base: t, fm: fm}, nil
}

// addSteps inserts a call of stepFunc at the start of every list under n.
func addSteps(n tparse.Node) {
	switch n := n.(type) {
	case *tparse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			addSteps(c)
		}
		call := &tparse.ActionNode{NodeType: tparse.NodeAction, Pos: n.Pos, Pipe: &tparse.PipeNode{NodeType: tparse.NodePipe, Pos: n.Pos,
			Cmds: []*tparse.CommandNode{{NodeType: tparse.NodeCommand, Pos: n.Pos,
				Args: []tparse.Node{&tparse.IdentifierNode{NodeType: tparse.NodeIdentifier, Pos: n.Pos, Ident: stepFunc}}}}}}
		n.Nodes = append([]tparse.Node{call}, n.Nodes...)
	case *tparse.IfNode:
		addSteps(n.List)
		addSteps(n.ElseList)
	case *tparse.RangeNode:
		addSteps(n.List)
		addSteps(n.ElseList)
	case *tparse.WithNode:
		addSteps(n.List)
		addSteps(n.ElseList)
	}
}

// Name is the field the template was compiled for.
func (c *compiled) Name() string { return c.base.Name() }

// exec renders c with v, bounded by MaxRender and MaxSteps, and stopped
// when ctx ends.
func (c *compiled) exec(ctx context.Context, v Vars) (string, error) {
	in, _ := c.pool.Get().(*instance)
	if in == nil {
		t, err := c.base.Clone()
		if err != nil {
			return "", &TemplateError{Field: c.Name(), Err: err}
		}
		in = &instance{t: t, b: &budget{}}
		in.t.Funcs(in.b.funcs())
	}
	defer c.pool.Put(in)
	in.b.reset(ctx)
	if err := in.b.ctx.Err(); err != nil {
		return "", err
	}
	var w limitWriter
	if err := in.t.Execute(&w, v); err != nil {
		if cerr := in.b.ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return "", cerr
		}
		return "", &TemplateError{Field: c.Name(), Err: err}
	}
	return w.String(), nil
}
