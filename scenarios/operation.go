package scenarios

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/idemcheck/idemcheck/internal/hint"
	redaction "github.com/idemcheck/idemcheck/internal/redact"
)

// OperationArgs are one operation as a command line gives it: the method
// and URL arguments and the request flags (-d, -H, --key-header,
// --key-field, --target), the same in every command that takes one.
type OperationArgs struct {
	Method, URL string
	Data        string   // the body template
	Headers     []string // 'Name: value', values are templates
	KeyHeader   string   // the header that carries the key (default Idempotency-Key)
	KeyField    string   // or: the top-level JSON body field that carries it
	Targets     []string // base URLs (replicas) the path is sent to instead of the URL's
}

// CommandOp is what OperationArgs describe, checked.
type CommandOp struct {
	Method string
	// Base is the scheme, host and port of the URL argument: the target.
	Base *url.URL
	// Path is the URL's path and query, sent to every target.
	Path    string
	Headers map[string]string
	Body    string
	Key     KeyPlace
	Targets []string
}

// ArgError is a bad command-line argument: what is wrong, and what to
// write instead (hint.Error).
type ArgError = hint.Error

func argError(h, format string, args ...any) error {
	return hint.New(h, fmt.Errorf(format, args...))
}

// ParseOperation checks a and returns its operation, or an *ArgError that
// says what to fix. Secrets in the arguments are never quoted.
func ParseOperation(a OperationArgs) (*CommandOp, error) {
	m := strings.ToUpper(a.Method)
	if !ValidMethod(m) {
		return nil, argError("write the method first, then the URL: POST https://api.example.com/v1/charges", "%q is not an HTTP method", a.Method)
	}
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, argError("e.g. https://staging.example.com/v1/charges", "%q is not an http(s) URL", redaction.Arg(a.URL))
	}
	if a.KeyHeader != "" && a.KeyField != "" {
		return nil, argError("the key goes in a header or in a JSON body field, not both", "--key-header and --key-field both set")
	}
	op := &CommandOp{Method: m, Body: a.Data, Headers: map[string]string{}, Targets: a.Targets}
	op.Base = &url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User}
	op.Path = u.EscapedPath()
	if op.Path == "" {
		op.Path = "/"
	}
	if u.RawQuery != "" {
		op.Path += "?" + u.RawQuery
	}
	for _, h := range a.Headers {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, argError(`e.g. -H 'Authorization: Bearer {{env "API_TOKEN"}}'`, "-H %q: want 'Name: value'", redaction.HeaderArg(h))
		}
		op.Headers[name] = strings.TrimSpace(value)
	}
	switch {
	case a.KeyField != "":
		op.Key.BodyField = a.KeyField
	case a.KeyHeader != "":
		op.Key.Header = a.KeyHeader
	default:
		op.Key.Header = "Idempotency-Key"
	}
	return op, nil
}

// Spec is the operation as a scenario's request; a command adds the
// sections it needs (load, invariants, oracles) and builds it with
// FromRequest.
func (op *CommandOp) Spec(name string) RequestSpec {
	spec := RequestSpec{Name: name, Request: Request{Method: op.Method, Path: op.Path, Body: op.Body}, Key: op.Key, Targets: op.Targets}
	if len(op.Headers) > 0 {
		spec.Request.Headers = op.Headers
	}
	if len(spec.Targets) == 0 {
		spec.Targets = []string{op.Base.String()}
	}
	return spec
}

// EffectsPath is an --effects argument ('GET /path?k={{.Key}}', a path,
// or a URL on the operation's target) as a method ("" for GET) and a path
// on the operation's target; "" when raw is empty.
func (op *CommandOp) EffectsPath(raw string) (method, path string, err error) {
	if method, raw = SplitMethod(raw); raw == "" {
		return "", "", nil
	}
	if method == http.MethodGet {
		method = ""
	}
	if !strings.Contains(raw, "{{.Key}}") && !strings.Contains(raw, "{{ .Key }}") {
		return "", "", argError("it is read once per key: 'GET /internal/charges?idempotency_key={{.Key}}'", "--effects %q does not use {{.Key}}", redaction.Arg(raw))
	}
	if strings.HasPrefix(raw, "/") {
		return method, raw, nil
	}
	// a URL: same scheme and host as the operation, since the oracle reads
	// from the scenario's target
	scheme, rest, ok := strings.Cut(raw, "://")
	host, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = host[i+1:] // its userinfo may hold a password
	}
	if !ok || (scheme != "http" && scheme != "https") {
		return "", "", argError("e.g. --effects 'GET /internal/charges?idempotency_key={{.Key}}'", "--effects %q: want a path or an http(s) URL, a method first if not GET", redaction.Arg(raw))
	}
	if scheme != op.Base.Scheme || host != op.Base.Host {
		return "", "", argError("the oracle reads from the scenario's target: give --effects as a path on it",
			"--effects is on %s://%s, the operation on %s://%s", scheme, host, op.Base.Scheme, op.Base.Host)
	}
	return method, "/" + path, nil
}

// ValidMethod reports whether m (upper case) is a method an operation can
// have.
func ValidMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}

// SplitMethod splits a request written as 'GET /path' into its method,
// upper-cased ("" when none comes first), and the rest.
func SplitMethod(spec string) (method, rest string) {
	spec = strings.TrimSpace(spec)
	if m, r, ok := strings.Cut(spec, " "); ok && ValidMethod(strings.ToUpper(m)) {
		return strings.ToUpper(m), strings.TrimSpace(r)
	}
	return "", spec
}

// AuditSpec is the operation as the scenario of an audit: one op, no
// load, judged by same_response; with effects (an --effects request,
// 'GET /path?k={{.Key}}' or '/path…'), by at_most_once on an effects
// oracle that reads the count at effectsPath ("$", the whole answer or
// the array whose length is, when empty), summed across keys when across
// is set, sending the operation's headers (its credentials, usually).
func (op *CommandOp) AuditSpec(profile, effects, effectsPath, across string) (RequestSpec, error) {
	spec := op.Spec("audit")
	spec.ProfileName = profile
	spec.Load = Load{Ops: 1, Concurrency: 1}
	spec.Invariants = []Invariant{{Check: "same_response"}}
	if effects == "" {
		if effectsPath != "" {
			return spec, argError("--effects says which request counts the effects, --effects-path where the count is in its answer", "--effects-path without --effects")
		}
		return spec, nil
	}
	probe, err := EffectsProbe(effects, effectsPath, op.Headers)
	if err != nil {
		return spec, err
	}
	spec.Oracles = []Oracle{{Name: "effects", Effects: &EffectsOracle{PerKey: probe, Across: across}}}
	spec.Invariants = []Invariant{{Check: "at_most_once", Oracle: "effects"}}
	return spec, nil
}

// EffectsProbe parses an --effects request ('GET /path' or '/path') into
// a per-key probe that sends headers, reading the count at path ("$" when
// empty: the whole answer, or the array whose length is).
func EffectsProbe(spec, path string, headers map[string]string) (*Probe, error) {
	method, p := SplitMethod(spec)
	if !strings.HasPrefix(p, "/") {
		return nil, argError("a path that resolves against the audited URL's scheme, host and port: --effects 'GET /charges?idempotency_key={{.Key}}'",
			"--effects %q: want a path", redaction.Arg(p))
	}
	if !strings.Contains(p, "{{") {
		return nil, argError("put {{.Key}} where the key goes: --effects 'GET /charges?idempotency_key={{.Key}}'", "--effects %q does not name the key", redaction.Arg(p))
	}
	if method == "" {
		method = http.MethodGet
	}
	if path == "" {
		path = "$"
	}
	return &Probe{Request: Request{Method: method, Path: p, Headers: headers}, Value: path}, nil
}

// ParseHeaders parses 'Name: value' arguments of flag (--as) into a map;
// a bad one is an *ArgError naming the flag, never quoting the value.
func ParseHeaders(flag string, list []string) (map[string]string, error) {
	out := map[string]string{}
	for _, h := range list {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, argError(fmt.Sprintf(`e.g. %s 'Authorization: Bearer {{env "OTHER_TOKEN"}}'`, flag), "%s %q: want 'Name: value'", flag, redaction.HeaderArg(h))
		}
		out[name] = strings.TrimSpace(value)
	}
	return out, nil
}

// SetAcross sums every effects oracle's count across keys as across says
// (audit --across); "" leaves them.
func (sc *Scenario) SetAcross(across string) {
	if across == "" {
		return
	}
	for i := range sc.Oracles {
		if sc.Oracles[i].Effects != nil {
			sc.Oracles[i].Effects.Across = across
		}
	}
}
