package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/yamlstrict"
	"github.com/theory/jsonpath"
)

var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func (c *checker) key() {
	k := c.s.Operation.Key
	n := 0
	if k.Header != "" {
		n++
		if !headerName.MatchString(k.Header) {
			c.add("operation.key.header", fmt.Sprintf("%q is not a valid header name", k.Header), "key: {header: Idempotency-Key}")
		}
	}
	if k.BodyField != "" {
		n++
		if strings.TrimSpace(k.BodyField) != k.BodyField {
			c.add("operation.key.body_field", "the field name has surrounding spaces", "key: {body_field: op_id}")
		}
		if c.s.Operation.Body == "" {
			c.add("operation.body", "key.body_field needs a JSON object body to put the key in", "body: '{}' sends {\"op_id\": KEY}", "operation.key.body_field")
		}
	}
	if k.None {
		n++
	}
	if k.Value != "" {
		c.keyValue(k.Value)
	}
	if k.FromAnswer != nil {
		c.keyFromAnswer(k)
		if n == 0 {
			n++ // the key goes to the answer's header, or Idempotency-Key
		}
	}
	switch {
	case c.s.IsQueue():
		// the message id is the key (operation.publish checks the rest)
	case n == 0:
		c.add("operation.key", "say where the op's key goes: exactly one of header, body_field or none",
			"key: {header: Idempotency-Key}, key: {body_field: op_id}, or key: {none: true} for an endpoint that takes no key",
			"operation.key.header", "operation.key.body_field", "operation.key.none")
	case n > 1:
		c.add("operation.key", "set exactly one of header, body_field or none", "the key goes to one place",
			"operation.key.header", "operation.key.body_field", "operation.key.none")
	}
}

// keyFromAnswer checks operation.key.from_answer: one place in the
// answer, a header name or a JSONPath, with a key sent somewhere.
func (c *checker) keyFromAnswer(k KeyPlace) {
	const at = "operation.key.from_answer"
	fa := k.FromAnswer
	switch {
	case k.None:
		c.add(at, "a key taken from the answers must be sent: none sends no key", "drop none: true", "operation.key.none")
	case (fa.Header == "") == (fa.JSON == ""):
		c.add(at, "set exactly one of header or json", "from_answer: {header: Idempotency-Key} or from_answer: {json: $.idempotency_key}")
	case fa.Header != "" && !headerName.MatchString(fa.Header):
		c.add(at+".header", fmt.Sprintf("%q is not a valid header name", fa.Header), "from_answer: {header: Idempotency-Key}")
	case fa.JSON != "":
		c.jsonPath(at+".json", fa.JSON)
	}
	if _, ok := c.s.Response.Fields[history.MintedKeyField]; ok {
		c.add("response.fields."+history.MintedKeyField, "the name is where the key from the answers is kept", "name the field otherwise", at)
	}
}

// keyValue checks operation.key.value: it compiles and renders with sample
// values to a usable key, and does not read .Key, which it defines.
func (c *checker) keyValue(text string) {
	const at = "operation.key.value"
	if keyRef.MatchString(text) {
		c.add(at, "the key template reads .Key, the value it defines", `build it from .Seq, .User and the functions: "order-{{.Seq}}", "shared-{{div .Seq 2}}"`)
		return
	}
	sample := Vars{Seq: 1}
	if len(c.s.Users) > 0 {
		sample.User = c.s.Users[0]
	}
	key, ok := c.render(at, text, sample)
	if !ok {
		return
	}
	if strings.TrimSpace(key) == "" {
		c.add(at, "the key template renders an empty key", `value: "order-{{.Seq}}"`)
	}
}

var keyRef = regexp.MustCompile(`\.Key\b`)

// object checks operation.object: it compiles and renders a non-empty
// name with sample values, and does not read .Object, which it defines.
func (c *checker) object() {
	text := c.s.Operation.Object
	if text == "" {
		return
	}
	const at = "operation.object"
	if strings.Contains(text, ".Object") {
		c.add(at, "the object template reads .Object, the value it defines", `build it from .Seq or .Key: "cus_{{div .Seq 4}}"`)
		return
	}
	sample := Vars{Seq: 1, Key: "00000000-0000-4000-8000-000000000000"}
	if len(c.s.Users) > 0 {
		sample.User = c.s.Users[0]
	}
	if name, ok := c.render(at, text, sample); ok && strings.TrimSpace(name) == "" {
		c.add(at, "the object template renders an empty name", `object: "cus_{{div .Seq 4}}"`)
	}
}

// replay checks operation.replay: a count, a wait within the retention,
// and a body that renders to JSON.
func (c *checker) replay() {
	rp := c.s.Operation.Replay
	if rp == nil {
		return
	}
	const at = "operation.replay"
	if rp.Count < 1 {
		c.add(at+".count", fmt.Sprintf("count must be at least 1, got %d", rp.Count), "count is how many replays follow each acknowledged op; leave it out for 1")
	}
	if rp.After < 0 {
		c.add(at+".after", "negative duration", "after: 1500ms")
	}
	if ret := c.s.Retention; ret > 0 && rp.After >= ret {
		c.add(at+".after", fmt.Sprintf("replay after %s is not within the retention of %s", rp.After, ret),
			"a replay after the retention may rightly be executed again: wait less than retention, or raise retention to what the API promises",
			"retention")
	}
	if rp.Body == "" {
		return
	}
	sample := Vars{Key: "00000000-0000-4000-8000-000000000000", Attempt: 2}
	if len(c.s.Users) > 0 {
		sample.User = c.s.Users[0]
	}
	if b := c.s.Operation.Before; b != nil {
		sample.Vars = map[string]string{}
		for name := range b.Vars {
			sample.Vars[name] = "0"
		}
	}
	r := c.s.Operation.Request
	r.Body = rp.Body
	c.body(at+".body", r, sample, c.s.Operation.Key.BodyField != "")
}

// requests compiles every request template and renders it once with sample
// values, so a typo like {{.Kye}} is found before the run.
func (c *checker) requests() {
	s := c.s
	for i, r := range s.Setup {
		c.request(fmt.Sprintf("setup[%d]", i), r, Vars{}, false)
	}
	op := s.Operation
	sample := Vars{Key: "00000000-0000-4000-8000-000000000000", Seq: 0, Attempt: 1}
	if len(s.Users) > 0 {
		sample.User = s.Users[0]
	}
	if b := op.Before; b != nil {
		c.request("operation.before", b.Request, sample, false)
		if len(b.Vars) == 0 {
			c.add("operation.before.vars", "before captures nothing", "vars: {version: $.version} makes {{.Vars.version}} available to the operation")
		}
		sample.Vars = map[string]string{}
		for name, p := range b.Vars {
			at := "operation.before.vars." + name
			if !ident.MatchString(name) {
				c.add(at, fmt.Sprintf("variable name %q is not an identifier", name), "use letters, digits and _: version, etag")
			}
			c.jsonPath(at, p)
			sample.Vars[name] = "0"
		}
	}
	c.request("operation", op.Request, sample, op.Key.BodyField != "")
}

// ValidHeaderValue reports whether v may be sent as an HTTP header value:
// no control character but the tab (RFC 9110 field-value), so no CR or LF
// that would split the header.
func ValidHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var methodName = regexp.MustCompile(`^[A-Z]+$`)

// request checks one request: path present, every template part compiles
// (as NewTemplate compiles it) and renders with sample values, and a JSON
// body renders to JSON (an object when wantObject).
func (c *checker) request(at string, r Request, sample Vars, wantObject bool) {
	if r.Method != "" && !methodName.MatchString(strings.ToUpper(r.Method)) {
		c.add(at+".method", fmt.Sprintf("bad method %q", r.Method), "method: POST")
	}
	if strings.TrimSpace(r.Path) == "" {
		c.add(at+".path", "path is required", "path: /charges (joined to the target)")
	} else if p, ok := c.render(at+".path", r.Path, sample); ok {
		if _, err := Join(&url.URL{Scheme: "http", Host: "target.invalid"}, p); err != nil {
			c.add(at+".path", err.Error(), "write a path relative to the target: /charges?limit=1")
		} else if strings.HasPrefix(p, "//") {
			c.add(at+".path", fmt.Sprintf("path %q names a host", p), "write a path relative to the target: /charges?limit=1")
		}
	}
	for name, v := range r.Headers {
		if !headerName.MatchString(name) {
			c.add(at+".headers."+name, fmt.Sprintf("%q is not a valid header name", name), "headers: {Authorization: 'Bearer {{.User}}'}")
		}
		if out, ok := c.render(at+".headers."+name, v, sample); ok && !ValidHeaderValue(out) {
			c.add(at+".headers."+name, "the value holds a line break or another control character, which HTTP does not allow in a header",
				"write the value on one line; a token from the environment must not end in a newline")
		}
	}
	c.body(at+".body", r, sample, wantObject)
}

// render compiles and executes one template part with sample values,
// reporting a template error at field.
func (c *checker) render(field, text string, sample Vars) (string, bool) {
	if !strings.Contains(text, "{{") {
		return text, true
	}
	t, err := compile(field, text, sampleFuncs())
	if err == nil {
		var out string
		if out, err = t.exec(context.Background(), sample); err == nil {
			return out, true
		}
	}
	c.templateErr(field, err)
	return "", false
}

// body checks r.Body, reported at field: it renders with sample values and,
// unless r's Content-Type says otherwise, to JSON (an object when
// wantObject).
func (c *checker) body(field string, r Request, sample Vars, wantObject bool) {
	if r.Body == "" {
		return
	}
	body, ok := c.render(field, r.Body, sample)
	if !ok {
		return
	}
	for name, v := range r.Headers {
		if strings.EqualFold(name, "Content-Type") && !strings.Contains(strings.ToLower(v), "json") {
			return
		}
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		c.add(field, fmt.Sprintf("the body is not JSON once rendered (%v): %s", err, clip(body)),
			`quote strings, including templated ones: '{"customer":"cus_{{.Seq}}"}'`)
		return
	}
	if _, ok := v.(map[string]any); wantObject && !ok {
		c.add(field, "key.body_field needs the body to be a JSON object", `body: '{}'`, "operation.key.body_field")
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

func (c *checker) templateErr(field string, err error) {
	msg := err.Error()
	var te *TemplateError
	if errors.As(err, &te) {
		field = te.Field
		msg = strings.TrimPrefix(te.Err.Error(), "template: ")
		msg = strings.TrimPrefix(msg, te.Field+":")
		msg = "bad template: " + msg
	}
	c.add(field, msg, c.templateHint(msg))
}

var (
	badField = regexp.MustCompile(`can't evaluate field (\w+)`)
	badVar   = regexp.MustCompile(`map has no entry for key "([^"]*)"`)
)

func (c *checker) templateHint(msg string) string {
	const all = "templates see .Key .Seq .User .Attempt .Run .Vars.NAME and the functions env, randInt, uuid, add, mod, div: {{.Key}}, {{randInt . 1 100}}"
	if m := badField.FindStringSubmatch(msg); m != nil {
		if best, ok := yamlstrict.Closest(m[1], []string{"Key", "Seq", "User", "Attempt", "Vars"}); ok {
			return "did you mean ." + best + "? " + all
		}
	}
	if m := badVar.FindStringSubmatch(msg); m != nil {
		b := c.s.Operation.Before
		if b == nil || len(b.Vars) == 0 {
			return "only the operation sees .Vars, filled by operation.before.vars: {" + m[1] + ": $.path}"
		}
		names := make([]string, 0, len(b.Vars))
		for n := range b.Vars {
			names = append(names, n)
		}
		slices.Sort(names)
		return "operation.before.vars captures " + strings.Join(names, ", ") + "; setup and oracles see no .Vars"
	}
	return all
}

func (c *checker) jsonPath(at, p string) {
	if strings.TrimSpace(p) == "" {
		c.add(at, "a JSONPath is required", "write an RFC 9535 JSONPath: $.id")
		return
	}
	if _, err := jsonpath.Parse(p); err != nil {
		c.add(at, fmt.Sprintf("bad JSONPath %q: %v", p, err), "write an RFC 9535 JSONPath: $.id, $.counts, $.items[0].amount")
	}
}

func (c *checker) response() {
	for name, p := range c.s.Response.Fields {
		c.jsonPath("response.fields."+name, p)
	}
	for i, p := range c.s.Response.Volatile {
		c.jsonPath(fmt.Sprintf("response.volatile[%d]", i), p)
	}
}

// oracles checks each oracle and returns the kind of each, by name.
