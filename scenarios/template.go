package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"text/template"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/history"
)

// Vars is what a request template sees.
type Vars struct {
	Key     string            // the op's idempotency key
	Seq     int               // the op's sequence number, 0-based
	User    string            // the op's user ("" when the scenario names none)
	Attempt int               // attempt number, 1-based; 0 for setup and oracles
	Vars    map[string]string // values captured by operation.before
	// Run is a token of the run (16 hex digits from its seed, key nonce
	// and scenario): a key template such as "shared-{{.Run}}-{{div .Seq 2}}"
	// is then new on every run, as generated keys are, while the same
	// seed and nonce give it again.
	Run string
	// Rand feeds randInt and uuid; seed it from the run's seed and the op so
	// the same seed renders the same requests. Nil uses a fixed source.
	Rand *rand.Rand
	// Object is the object the op's event updates (operation.object
	// rendered); in a state oracle's request, the object read.
	Object string
	// Minted is the key the server returned in the op's latest answer
	// that carried one (operation.key.from_answer), "" before it: what
	// the attempt sends as its key.
	Minted string
}

// Template is a compiled Request: method, path, header values and body are
// text/template templates.
type Template struct {
	method  string
	path    *compiled
	headers []headerTemplate
	body    *compiled
	hasBody bool
	// static parts render without executing a template
	staticPath, staticBody string
	pathStatic, bodyStatic bool
}

type headerTemplate struct {
	name   string
	tmpl   *compiled
	static string
	isStat bool
}

// TemplateError is a template that does not parse or execute.
type TemplateError struct {
	Field string // e.g. "operation.body"
	Err   error
}

// Error names the field once: text/template's own errors already start
// with "template: FIELD:LINE:".
func (e *TemplateError) Error() string {
	msg := e.Err.Error()
	if strings.HasPrefix(msg, "template: ") {
		return msg
	}
	return fmt.Sprintf("template: %s: %s", e.Field, msg)
}
func (e *TemplateError) Unwrap() error { return e.Err }

// EnvError is an env call in a template whose variable is unset (or empty)
// and that gives no default: a configuration error. Template errors wrap it
// (TemplateError names the field); find it with errors.As.
type EnvError struct {
	Name string // the environment variable
}

func (e *EnvError) Error() string {
	return fmt.Sprintf("environment variable %s is not set (give it a value, or a default: {{env %q \"default\"}})", e.Name, e.Name)
}

// env returns the template function env: {{env "NAME"}} is the variable's
// value, an EnvError when it is unset or empty; {{env "NAME" "default"}} is
// the default then. A nil getenv has no variable set. lenient (validation
// before a run, which does not see the environment) renders an unset
// variable as its default or "".
func envFunc(getenv func(string) string, lenient bool) func(string, ...string) (string, error) {
	return func(name string, def ...string) (string, error) {
		if len(def) > 1 {
			return "", fmt.Errorf("env %q takes at most one default, got %d", name, len(def))
		}
		if getenv != nil {
			if v := getenv(name); v != "" {
				return v, nil
			}
		}
		if len(def) == 1 {
			return def[0], nil
		}
		if lenient {
			// A stand-in that is valid JSON wherever the value goes, in
			// a string or bare: "amount": {{env "AMOUNT"}}.
			return envSample, nil
		}
		return "", &EnvError{Name: name}
	}
}

// envSample is what env renders as in validation when the variable has no
// default: the environment is not known then.
const envSample = "1"

// funcs returns the template functions. env reads the environment (secrets
// come from there, never from the file); it is injected so that this package
// never reads the environment itself.
func funcs(getenv func(string) string) template.FuncMap { return funcMap(getenv, false) }

// sampleFuncs are the functions validation renders templates with: env
// never fails, as the environment is not known yet (MissingEnv checks it).
func sampleFuncs() template.FuncMap { return funcMap(nil, true) }

func funcMap(getenv func(string) string, lenient bool) template.FuncMap {
	return template.FuncMap{
		"env": envFunc(getenv, lenient),
		// randInt returns a deterministic pseudo-random int in [min, max].
		"randInt": func(v Vars, min, max int) (int, error) {
			if max < min {
				return 0, fmt.Errorf("randInt: max %d < min %d", max, min)
			}
			r := v.Rand
			if r == nil {
				r = rand.New(rand.NewPCG(uint64(v.Seq), 0x1de))
			}
			return min + r.IntN(max-min+1), nil
		},
		// uuid returns a deterministic random UUID v4.
		"uuid": func(v Vars) string {
			r := v.Rand
			if r == nil {
				r = rand.New(rand.NewPCG(uint64(v.Seq), 0x1de))
			}
			return NewKey(r)
		},
		"mod": func(a, b int) int {
			if b == 0 {
				return 0
			}
			return a % b
		},
		"add": func(a, b int) int { return a + b },
		"div": func(a, b int) int {
			if b == 0 {
				return 0
			}
			return a / b
		},
	}
}

// NewKey draws a UUID v4 from r, so keys follow the run's seed.
func NewKey(r *rand.Rand) string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	u, _ := uuid.FromBytes(b[:])
	u[6] = (u[6] & 0x0f) | 0x40 // version 4
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u.String()
}

// parse parses text for inspection only (its parse tree); compile
// parses a template to render.
func parse(field, text string, fm template.FuncMap) (*template.Template, error) {
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
	return t, nil
}

// NewTemplate compiles r. field names it in errors ("operation", "setup[0]",
// "oracles[1].effects.per_key"). defaultMethod is used when r.Method is empty.
func NewTemplate(field string, r Request, defaultMethod string, env func(string) string) (*Template, error) {
	fm := funcs(env)
	t := &Template{method: strings.ToUpper(r.Method)}
	if t.method == "" {
		t.method = defaultMethod
	}
	var err error
	if strings.Contains(r.Path, "{{") {
		if t.path, err = compile(field+".path", r.Path, fm); err != nil {
			return nil, err
		}
	} else {
		t.pathStatic, t.staticPath = true, r.Path
	}
	for name, val := range r.Headers {
		h := headerTemplate{name: name}
		if strings.Contains(val, "{{") {
			if h.tmpl, err = compile(field+".headers."+name, val, fm); err != nil {
				return nil, err
			}
		} else {
			h.isStat, h.static = true, val
		}
		t.headers = append(t.headers, h)
	}
	if r.Body != "" {
		t.hasBody = true
		if strings.Contains(r.Body, "{{") {
			if t.body, err = compile(field+".body", r.Body, fm); err != nil {
				return nil, err
			}
		} else {
			t.bodyStatic, t.staticBody = true, r.Body
		}
	}
	return t, nil
}

// Text is a compiled one-line template, such as operation.key.value.
type Text struct {
	tmpl   *compiled
	static string
}

// NewText compiles text; field names it in errors ("operation.key.value").
// Text without "{{" renders as itself.
func NewText(field, text string, env func(string) string) (*Text, error) {
	if !strings.Contains(text, "{{") {
		return &Text{static: text}, nil
	}
	t, err := compile(field, text, funcs(env))
	if err != nil {
		return nil, err
	}
	return &Text{tmpl: t}, nil
}

// Render executes the template with v, within MaxRender and MaxSteps,
// until ctx ends.
func (t *Text) Render(ctx context.Context, v Vars) (string, error) {
	if t.tmpl == nil {
		return t.static, nil
	}
	return t.tmpl.exec(ctx, v)
}

// Method is the request method.
func (t *Template) Method() string { return t.method }

// Path renders the path. Every render is bounded (MaxRender, MaxSteps)
// and ends with ctx.
func (t *Template) Path(ctx context.Context, v Vars) (string, error) {
	if t.pathStatic {
		return t.staticPath, nil
	}
	return t.path.exec(ctx, v)
}

// Body renders the body; nil when the request has none.
func (t *Template) Body(ctx context.Context, v Vars) ([]byte, error) {
	if !t.hasBody {
		return nil, nil
	}
	if t.bodyStatic {
		return []byte(t.staticBody), nil
	}
	s, err := t.body.exec(ctx, v)
	return []byte(s), err
}

// Build renders the request against base. The body, if any, is replayable
// (GetBody is set) so it can be retried and duplicated.
func (t *Template) Build(ctx context.Context, base *url.URL, v Vars) (*http.Request, error) {
	body, err := t.Body(ctx, v)
	if err != nil {
		return nil, err
	}
	return t.BuildWithBody(ctx, base, v, body)
}

// BuildWithBody is Build with an already rendered (and possibly edited) body.
func (t *Template) BuildWithBody(ctx context.Context, base *url.URL, v Vars, body []byte) (*http.Request, error) {
	p, err := t.Path(ctx, v)
	if err != nil {
		return nil, err
	}
	u, err := Join(base, p)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, t.method, u, rd)
	if err != nil {
		return nil, err
	}
	for _, h := range t.headers {
		val := h.static
		if !h.isStat {
			if val, err = h.tmpl.exec(ctx, v); err != nil {
				return nil, err
			}
		}
		req.Header.Set(h.name, val)
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Join resolves a templated path (which may hold a query) against base,
// keeping base's own path prefix: base http://h/api + /charges → http://h/api/charges.
func Join(base *url.URL, p string) (string, error) {
	if base == nil {
		return "", fmt.Errorf("no target URL: set target in the scenario, --target or IDEMCHECK_TARGET")
	}
	ref, err := url.Parse(p)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", p, err)
	}
	if ref.IsAbs() || ref.Host != "" {
		return "", fmt.Errorf("path %q: must be relative to the target, like /charges", p)
	}
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + "/" + strings.TrimPrefix(ref.Path, "/")
	u.RawPath = ""
	u.RawQuery = ref.RawQuery
	return u.String(), nil
}

// ChargeCents is what each op of sc charges, in cents: the amount of its
// rendered JSON body when the body also names a currency (the built-in
// charges send {"amount":100,"currency":"usd",…}); 0 when it charges
// nothing or its body does not render without the environment.
func (sc *Scenario) ChargeCents() int64 {
	t, err := NewTemplate("operation", sc.Operation.Request, http.MethodPost, func(string) string { return "" })
	if err != nil {
		return 0
	}
	body, err := t.Body(context.Background(), Vars{})
	var charge struct {
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
	}
	if err != nil || json.Unmarshal(body, &charge) != nil || charge.Currency == "" {
		return 0
	}
	return max(charge.Amount, 0)
}

// ObjectText compiles sc's operation.object; nil when it names none.
func ObjectText(sc *Scenario, env func(string) string) (*Text, error) {
	if sc.Operation.Object == "" {
		return nil, nil
	}
	return NewText("operation.object", sc.Operation.Object, env)
}

// ObjectOf renders the object op updates (operation.object compiled by
// ObjectText, from the op's id, key and user and the run's token); "" when
// t is nil.
func ObjectOf(ctx context.Context, t *Text, op history.Op, run string) (string, error) {
	if t == nil {
		return "", nil
	}
	return t.Render(ctx, Vars{Seq: op.ID, Key: op.Key, User: op.User, Run: run})
}
