package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemcheck/idemcheck/scenarios"
)

// KeyHeaders are the header names taken for an idempotency key where a
// spec declares one, compared without case.
var KeyHeaders = []string{"Idempotency-Key", "X-Idempotency-Key", "PayPal-Request-Id", "Idempotent-Key", "X-Request-Idempotency-Key"}

// KeyExtension marks where the key goes, on an operation ({in: header,
// name: X}, {in: body, name: op_id}, or a header name), on a header
// parameter, or on a body property (true).
const KeyExtension = "x-idempotency-key"

// PlanOptions say which operations to plan and how to fill them in.
type PlanOptions struct {
	// Include, when set, selects operations by operationId, tag, or
	// "METHOD /path" glob (* matches anything): any method then. Without
	// it POST, PUT, PATCH and DELETE are planned.
	Include []string
	// Exclude leaves out the operations it matches, as Include does.
	Exclude []string
	// KeyHeader and KeyField name a key the spec does not declare: taken
	// where an operation declares none, and recognised where one does.
	KeyHeader, KeyField string
	// Fixtures override what the spec gives, per operation.
	Fixtures *Fixtures
	// Auth are values of the spec's security schemes, by scheme name
	// (templates: 'Bearer {{env "TOKEN"}}').
	Auth map[string]string
}

// Plan is what an audit of the spec sends: the operations, by path and
// then method (get, put, post, delete, options, head, patch, trace), and
// those left out.
type Plan struct {
	Ops     []Operation
	Skipped []Skipped
}

// Operation is one planned operation.
type Operation struct {
	ID, Method string
	// Path is the spec's path template ("/accounts/{id}/debit").
	Path string
	Tags []string
	// Pointer is the operation's JSON pointer in the document.
	Pointer string
	// Request is what is sent: Path with its parameters filled in and
	// required query parameters, headers, body.
	Request scenarios.Request
	Key     scenarios.KeyPlace
	// KeyRequired is whether the spec requires the key; KeyFrom says
	// where the plan found it.
	KeyRequired bool
	KeyFrom     string
	// BodyFrom says where the body came from: "example", "schema",
	// "fixtures", or "" (no body).
	BodyFrom string
	// Effects, when known, reads a key's effects.
	Effects *Effects
	// ErrorBody is a body the API fails on, from the fixtures (C12).
	ErrorBody string
	// Notes are what the plan could not fill in (a security scheme
	// without --auth).
	Notes []string

	// Anonymous is true when the document declares the operation without
	// security (security: []): no principals to tell apart.
	Anonymous bool
	// Chains are the path parameters an earlier operation's answer gives
	// (links): Request.Path keeps {name} for each until Fill.
	Chains []Chain

	// op is the document's operation: its declared responses judge the
	// answers (Spec.Conformance).
	op *openapi3.Operation
}

// Name is the operation as a line names it.
func (o Operation) Name() string { return opName(o.ID, o.Method, o.Path) }

// Effects is how a key's effects are read: a request on the target
// ({{.Key}} where the key goes) and where in its answer the count is.
type Effects struct {
	Request string // 'GET /charges?idempotency_key={{.Key}}'
	Value   string // '$.count'
	From    string // "fixtures" or "links <name>"
}

// Plan selects the spec's operations and makes the request of each.
// Operations that cannot be planned are in Plan.Skipped with the reason,
// and the JSON pointer of what stopped them.
func (s *Spec) Plan(o PlanOptions) (*Plan, error) {
	inc, err := globs(o.Include)
	if err != nil {
		return nil, fmt.Errorf("--include: %w", err)
	}
	exc, err := globs(o.Exclude)
	if err != nil {
		return nil, fmt.Errorf("--exclude: %w", err)
	}
	p := &Plan{Skipped: slices.Clone(s.Broken)}
	if s.Doc.Paths == nil {
		return p, nil
	}
	for _, path := range sortedKeys(s.Doc.Paths.Map()) {
		item := s.Doc.Paths.Value(path)
		for _, m := range Methods {
			op := item.GetOperation(strings.ToUpper(m))
			if op == nil {
				continue
			}
			method := strings.ToUpper(m)
			ptr := "#/paths/" + escape(path) + "/" + m
			skip := func(pointer, why string) {
				p.Skipped = append(p.Skipped, Skipped{Method: method, Path: path, OperationID: op.OperationID, Pointer: pointer, Reason: why})
			}
			name := method + " " + path
			switch {
			case len(inc) > 0 && !matches(inc, op, name):
				continue
			case len(inc) == 0 && !mutating(method):
				continue
			}
			if pat := firstMatch(exc, op, name); pat != "" {
				skip("", "left out by --exclude "+pat)
				continue
			}
			fx := o.Fixtures.For(op.OperationID, method, path)
			if fx != nil && fx.Skip != "" {
				skip("", "skipped by the fixtures: "+fx.Skip)
				continue
			}
			if op.Deprecated && len(inc) == 0 {
				skip(ptr+"/deprecated", "deprecated in the spec (--include it by its operationId to audit it anyway)")
				continue
			}
			planned, gerr := s.planOp(o, item, op, method, path, ptr, fx, false)
			if gerr != nil {
				skip(gerr.Pointer, gerr.Reason)
				continue
			}
			p.Ops = append(p.Ops, *planned)
		}
	}
	return p, nil
}

// mutating reports whether method changes state: the ones an audit
// plans by default.
func mutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// planOp makes the request of one operation.
// A source is an operation planned to be sent once for the answer a
// link takes a path parameter from: it may have no key, and its own path
// parameters are not chained.
func (s *Spec) planOp(o PlanOptions, item *openapi3.PathItem, op *openapi3.Operation, method, path, ptr string, fx *Fixture, source bool) (*Operation, *GenError) {
	out := &Operation{ID: op.OperationID, Method: method, Path: path, Tags: op.Tags, Pointer: ptr, op: op,
		Request: scenarios.Request{Method: method, Headers: map[string]string{}}}
	params := map[string]*openapi3.Parameter{} // in+name → the operation's, over the path item's
	var order []string
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, pr := range list {
			if pr == nil || pr.Value == nil {
				continue
			}
			k := pr.Value.In + " " + strings.ToLower(pr.Value.Name)
			if _, ok := params[k]; !ok {
				order = append(order, k)
			}
			params[k] = pr.Value
		}
	}
	// the body first: a key in a body field is one of its properties
	bodySchema, ctype, gerr := s.body(op, ptr, out, fx)
	if gerr != nil {
		return nil, gerr
	}
	if gerr := keyOf(o, op, params, order, bodySchema, ptr, out, fx); gerr != nil && !source {
		return nil, gerr
	}
	if ctype == "application/x-www-form-urlencoded" && out.Key.BodyField != "" {
		return nil, &GenError{ptr + "/requestBody", "the key goes in a body field of a form body: idemcheck puts keys in JSON bodies and headers only (--key-header, if the API takes one)"}
	}
	if out.Key.BodyField != "" && out.BodyFrom != "fixtures" && out.Request.Body != "" {
		// the audit sets the key's field, and leaves it out of a request
		// sent without a key: a generated or example value must not stand
		// in for it there
		body, err := withoutField(out.Request.Body, out.Key.BodyField)
		if err != nil {
			return nil, &GenError{ptr + "/requestBody", err.Error()}
		}
		out.Request.Body = body
	}
	// parameters
	pathVals := map[string]string{}
	var query []string
	for _, k := range order {
		pr := params[k]
		if out.Key.Header != "" && pr.In == "header" && strings.EqualFold(pr.Name, out.Key.Header) {
			continue
		}
		val, have := fx.param(pr.In, pr.Name)
		if !have && pr.In == "path" && !source && !hasExample(pr) {
			if ch := s.chainInto(o, op, pr.Name); ch != nil {
				// filled in from the source's answer before the audit
				out.Chains = append(out.Chains, *ch)
				pathVals[pr.Name] = "{" + pr.Name + "}"
				continue
			}
		}
		if !have {
			if pr.In != "path" && !pr.Required {
				continue
			}
			v, gerr := paramValue(pr, fmt.Sprintf("%s/parameters[%s]", ptr, pr.Name))
			if gerr != nil {
				return nil, gerr
			}
			val = v
		}
		switch pr.In {
		case "path":
			pathVals[pr.Name] = val
		case "query":
			query = append(query, url.QueryEscape(pr.Name)+"="+escapeTemplate(val))
		case "header":
			out.Request.Headers[http.CanonicalHeaderKey(pr.Name)] = val
		case "cookie":
			return nil, &GenError{ptr + "/parameters", fmt.Sprintf("cookie parameter %q is required: cookies are not sent; give a Cookie header with -H", pr.Name)}
		}
	}
	if fx != nil {
		for k, v := range fx.Query {
			if !slices.ContainsFunc(query, func(q string) bool { return strings.HasPrefix(q, url.QueryEscape(k)+"=") }) {
				query = append(query, url.QueryEscape(k)+"="+escapeTemplate(v))
			}
		}
		for k, v := range fx.Headers {
			out.Request.Headers[k] = v
		}
	}
	filled, gerr := fillPath(path, pathVals, ptr)
	if gerr != nil {
		return nil, gerr
	}
	slices.Sort(query)
	out.Request.Path = filled
	if len(query) > 0 {
		out.Request.Path += "?" + strings.Join(query, "&")
	}
	if ctype != "" && out.Request.Body != "" {
		out.Request.Headers["Content-Type"] = ctype
	}
	s.security(o, op, out)
	out.Anonymous = op.Security != nil && len(*op.Security) == 0
	if fx != nil {
		out.ErrorBody = fx.ErrorBody
	}
	if fx != nil && fx.Effects != nil {
		out.Effects = &Effects{Request: fx.Effects.Request, Value: fx.Effects.Value, From: "fixtures"}
	} else {
		out.Effects = s.linkedEffects(op, out)
	}
	if len(out.Request.Headers) == 0 {
		out.Request.Headers = nil
	}
	return out, nil
}

// body sets out's body from the fixtures, the media type's examples, or
// its schema, and returns the schema and the content type.
func (s *Spec) body(op *openapi3.Operation, ptr string, out *Operation, fx *Fixture) (*openapi3.SchemaRef, string, *GenError) {
	var media *openapi3.MediaType
	ctype := ""
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		content := op.RequestBody.Value.Content
		for _, ct := range sortedKeys(content) {
			base := strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))
			if base == "application/json" || strings.HasSuffix(base, "+json") {
				media, ctype = content[ct], base
				break
			}
		}
		if media == nil {
			for ct, m := range content {
				if strings.EqualFold(strings.Split(ct, ";")[0], "application/x-www-form-urlencoded") {
					media, ctype = m, "application/x-www-form-urlencoded"
				}
			}
		}
		if media == nil {
			// a body of any type (Swagger 2.0 without consumes converts
			// to */*): JSON is one
			for _, ct := range []string{"*/*", "application/*"} {
				if m, ok := content[ct]; ok {
					media, ctype = m, "application/json"
					break
				}
			}
		}
		if media == nil && len(content) > 0 && (fx == nil || fx.Body == "") {
			return nil, "", &GenError{ptr + "/requestBody/content", fmt.Sprintf("the body is %s only: idemcheck sends JSON and form bodies; give one in --fixtures", strings.Join(sortedKeys(content), ", "))}
		}
	}
	var schema *openapi3.SchemaRef
	if media != nil {
		schema = media.Schema
	}
	mptr := ptr + "/requestBody/content/" + escape(ctype)
	if fx != nil && fx.Body != "" {
		out.Request.Body, out.BodyFrom = fx.Body, "fixtures"
		if ctype == "" {
			ctype = "application/json"
		}
		return schema, ctype, nil
	}
	if media == nil {
		return nil, "", nil
	}
	var v any
	switch {
	case media.Example != nil:
		v, out.BodyFrom = media.Example, "example"
	case len(media.Examples) > 0:
		for _, name := range sortedKeys(media.Examples) {
			ex := media.Examples[name]
			if ex != nil && ex.Value != nil && ex.Value.Value != nil {
				v, out.BodyFrom = ex.Value.Value, "example"
				break
			}
		}
	}
	if v == nil && schema != nil && schema.Value != nil && schema.Value.Example != nil {
		v, out.BodyFrom = schema.Value.Example, "example"
	}
	if v == nil {
		var err error
		v, err = gen{seq: true}.value(schema, mptr+"/schema", 0)
		if err != nil {
			ge, _ := err.(*GenError)
			if ge == nil {
				ge = &GenError{mptr, err.Error()}
			}
			return nil, "", &GenError{ge.Pointer, "the body cannot be generated: " + ge.Reason}
		}
		out.BodyFrom = "schema"
	}
	var text string
	var err error
	if ctype == "application/x-www-form-urlencoded" {
		text, err = form(v)
	} else {
		text, err = compact(v)
	}
	if err != nil {
		return nil, "", &GenError{mptr, err.Error()}
	}
	out.Request.Body = text
	return schema, ctype, nil
}

// keyOf finds where op's key goes: the fixtures, the operation's
// x-idempotency-key, a header parameter, a body property, then
// --key-header or --key-field.
func keyOf(o PlanOptions, op *openapi3.Operation, params map[string]*openapi3.Parameter, order []string, body *openapi3.SchemaRef, ptr string, out *Operation, fx *Fixture) *GenError {
	if fx != nil && (fx.Key.Header != "" || fx.Key.Field != "") {
		out.Key = scenarios.KeyPlace{Header: fx.Key.Header, BodyField: fx.Key.Field}
		out.KeyFrom = "the fixtures"
		return nil
	}
	if ext, ok := op.Extensions[KeyExtension]; ok {
		in, name, required := "header", "", false
		switch t := ext.(type) {
		case string:
			name = t
		case map[string]any:
			in, name = str(t["in"]), str(t["name"])
			required, _ = t["required"].(bool)
		}
		switch {
		case name == "":
			return &GenError{ptr + "/" + KeyExtension, "want a header name, or {in: header|body, name: NAME}"}
		case in == "body":
			out.Key.BodyField = name
		case in == "header" || in == "":
			out.Key.Header = name
		default:
			return &GenError{ptr + "/" + KeyExtension, fmt.Sprintf("in: %q: want header or body", in)}
		}
		out.KeyRequired, out.KeyFrom = required, KeyExtension
		return nil
	}
	for _, k := range order {
		pr := params[k]
		if pr.In != "header" {
			continue
		}
		_, marked := pr.Extensions[KeyExtension]
		if marked || strings.EqualFold(pr.Name, o.KeyHeader) || slices.ContainsFunc(KeyHeaders, func(h string) bool { return strings.EqualFold(h, pr.Name) }) {
			out.Key.Header = http.CanonicalHeaderKey(pr.Name)
			out.KeyRequired = pr.Required
			out.KeyFrom = "header parameter " + pr.Name
			return nil
		}
	}
	if body != nil && body.Value != nil {
		for _, name := range sortedKeys(body.Value.Properties) {
			p := body.Value.Properties[name]
			_, marked := p.Value.Extensions[KeyExtension]
			if marked || name == o.KeyField && o.KeyField != "" {
				out.Key.BodyField = name
				out.KeyRequired = slices.Contains(body.Value.Required, name)
				out.KeyFrom = "body property " + name
				return nil
			}
		}
	}
	switch {
	case o.KeyHeader != "":
		out.Key.Header, out.KeyFrom = o.KeyHeader, "--key-header (the spec declares none)"
	case o.KeyField != "":
		out.Key.BodyField, out.KeyFrom = o.KeyField, "--key-field (the spec declares none)"
	default:
		return &GenError{ptr, "declares no idempotency key (an Idempotency-Key header parameter, or " + KeyExtension + "): give --key-header NAME or --key-field NAME to audit it with one"}
	}
	return nil
}

// paramValue is a value for pr: its example, its schema's, else one made
// from its schema (without a sequence number: a path parameter names a
// resource that must exist).
func paramValue(pr *openapi3.Parameter, ptr string) (string, *GenError) {
	var v any
	switch {
	case pr.Example != nil:
		v = pr.Example
	case len(pr.Examples) > 0:
		for _, name := range sortedKeys(pr.Examples) {
			if ex := pr.Examples[name]; ex != nil && ex.Value != nil && ex.Value.Value != nil {
				v = ex.Value.Value
				break
			}
		}
	}
	if v == nil {
		var err error
		if v, err = (gen{}).value(pr.Schema, ptr+"/schema", 0); err != nil {
			if ge, ok := err.(*GenError); ok {
				return "", &GenError{ge.Pointer, fmt.Sprintf("parameter %q cannot be generated: %s; give it in --fixtures", pr.Name, ge.Reason)}
			}
			return "", &GenError{ptr, err.Error()}
		}
	}
	switch t := v.(type) {
	case string:
		return t, nil
	case nil:
		return "", nil
	case map[string]any, []any:
		j, err := compact(t)
		if err != nil {
			return "", &GenError{ptr, err.Error()}
		}
		return j, nil
	}
	return fmt.Sprint(v), nil
}

// hasScheme matches a credential that names its scheme: "Bearer x",
// "Token x" (not a bare token, nor a template such as {{env "T"}}).
var hasScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]* [^ ]`)

var pathParam = regexp.MustCompile(`\{([^{}]+)\}`)

// fillPath puts vals into path's {name} segments, escaped.
func fillPath(path string, vals map[string]string, ptr string) (string, *GenError) {
	var missing string
	out := pathParam.ReplaceAllStringFunc(path, func(m string) string {
		name := m[1 : len(m)-1]
		v, ok := vals[name]
		if !ok {
			missing = name
			return m
		}
		if v == m {
			return m // a chained parameter, filled in later
		}
		if strings.Contains(v, "{{") {
			return v
		}
		return url.PathEscape(v)
	})
	if missing != "" {
		return "", &GenError{ptr, fmt.Sprintf("path parameter {%s} is not declared: declare it, or give it in --fixtures (path: {%s: VALUE})", missing, missing)}
	}
	return out, nil
}

// security adds the credentials of the first security requirement of op
// (or of the document) whose schemes all have a value in o.Auth; a
// requirement none satisfies is noted.
func (s *Spec) security(o PlanOptions, op *openapi3.Operation, out *Operation) {
	reqs := s.Doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	if len(reqs) == 0 {
		return
	}
	var wanted []string
	for _, req := range reqs {
		if len(req) == 0 {
			return // anonymous allowed
		}
		names := sortedKeys(req)
		ok := true
		for _, n := range names {
			if _, have := o.Auth[n]; !have {
				ok = false
			}
		}
		if !ok {
			wanted = append(wanted, strings.Join(names, "+"))
			continue
		}
		for _, n := range names {
			s.credential(n, o.Auth[n], out)
		}
		return
	}
	out.Notes = append(out.Notes, fmt.Sprintf("security %s: no --auth value given (sent without, unless -H gives one)", strings.Join(wanted, " or ")))
}

// credential puts the value of the scheme named name where the scheme
// says.
func (s *Spec) credential(name, value string, out *Operation) {
	var sc *openapi3.SecurityScheme
	if s.Doc.Components != nil {
		if ref := s.Doc.Components.SecuritySchemes[name]; ref != nil {
			sc = ref.Value
		}
	}
	switch {
	case sc == nil:
		out.Notes = append(out.Notes, fmt.Sprintf("security scheme %q is not in components.securitySchemes", name))
	case sc.Type == "apiKey" && sc.In == "query":
		sep := "?"
		if strings.Contains(out.Request.Path, "?") {
			sep = "&"
		}
		out.Request.Path += sep + url.QueryEscape(sc.Name) + "=" + escapeTemplate(value)
	case sc.Type == "apiKey" && sc.In == "cookie":
		out.Request.Headers["Cookie"] = sc.Name + "=" + value
	case sc.Type == "apiKey":
		out.Request.Headers[http.CanonicalHeaderKey(sc.Name)] = value
	case sc.Type == "http" && strings.EqualFold(sc.Scheme, "basic"):
		if !strings.HasPrefix(strings.ToLower(value), "basic ") {
			value = "Basic " + value
		}
		out.Request.Headers["Authorization"] = value
	default: // http bearer, oauth2, openIdConnect
		if !hasScheme.MatchString(value) {
			value = "Bearer " + value
		}
		out.Request.Headers["Authorization"] = value
	}
}

// linkedEffects reads a key's effects through a link of a 2xx answer to
// a GET operation that takes the key as a parameter
// ($request.header.<key header> or $request.body#/<key field>), whose
// answer holds a count or a list.
func (s *Spec) linkedEffects(op *openapi3.Operation, out *Operation) *Effects {
	if op.Responses == nil {
		return nil
	}
	keyExpr := ""
	switch {
	case out.Key.Header != "":
		keyExpr = "$request.header." + strings.ToLower(out.Key.Header)
	case out.Key.BodyField != "":
		keyExpr = "$request.body#/" + strings.ToLower(escape(out.Key.BodyField))
	}
	for _, code := range sortedKeys(op.Responses.Map()) {
		if !strings.HasPrefix(code, "2") {
			continue
		}
		resp := op.Responses.Value(code)
		if resp == nil || resp.Value == nil {
			continue
		}
		for _, lname := range sortedKeys(resp.Value.Links) {
			l := resp.Value.Links[lname]
			if l == nil || l.Value == nil {
				continue
			}
			keyParam := ""
			for p, e := range l.Value.Parameters {
				if es, ok := e.(string); ok && strings.ToLower(strings.TrimSpace(es)) == keyExpr {
					keyParam = p
				}
			}
			if keyParam == "" {
				continue
			}
			tpath, tmethod, top := s.linkTarget(l.Value)
			if top == nil || tmethod != http.MethodGet {
				continue
			}
			if eff := readBack(tpath, top, keyParam, "links "+lname); eff != nil {
				return eff
			}
		}
	}
	return nil
}

// linkTarget is the operation a link names: by operationId, or by an
// operationRef that points into this document ("#/paths/~1orders~1{id}/get",
// with or without the document's name before the #); "", "", nil for a
// link to another document or to nothing.
func (s *Spec) linkTarget(l *openapi3.Link) (string, string, *openapi3.Operation) {
	if l.OperationID != "" {
		return s.operationByID(l.OperationID)
	}
	_, frag, ok := strings.Cut(l.OperationRef, "#")
	rest, isPath := strings.CutPrefix(frag, "/paths/")
	if !ok || !isPath {
		return "", "", nil
	}
	i := strings.LastIndex(rest, "/")
	if i < 0 {
		return "", "", nil
	}
	path := strings.ReplaceAll(strings.ReplaceAll(rest[:i], "~1", "/"), "~0", "~")
	method := strings.ToUpper(rest[i+1:])
	item := s.Doc.Paths.Value(path)
	if item == nil {
		return "", "", nil
	}
	op := item.GetOperation(method)
	if op == nil {
		return "", "", nil
	}
	return path, method, op
}

// operationByID finds the operation with operationId id.
func (s *Spec) operationByID(id string) (string, string, *openapi3.Operation) {
	for _, path := range sortedKeys(s.Doc.Paths.Map()) {
		for method, op := range s.Doc.Paths.Value(path).Operations() {
			if op.OperationID == id {
				return path, method, op
			}
		}
	}
	return "", "", nil
}

// readBack is the effects read through GET path (op) with the key in its
// parameter keyParam: the count at the first integer property named
// count or total of its 200 answer, else the length of the list it is or
// holds.
func readBack(path string, op *openapi3.Operation, keyParam, from string) *Effects {
	in := ""
	name := keyParam
	if i := strings.Index(keyParam, "."); i > 0 && slices.Contains([]string{"path", "query", "header"}, keyParam[:i]) {
		in, name = keyParam[:i], keyParam[i+1:]
	}
	var found *openapi3.Parameter
	for _, pr := range op.Parameters {
		if pr.Value != nil && pr.Value.Name == name && (in == "" || pr.Value.In == in) {
			found = pr.Value
		}
	}
	if found == nil || (found.In != "path" && found.In != "query") {
		return nil
	}
	value := countPath(op)
	if value == "" {
		return nil
	}
	req := path
	if found.In == "path" {
		req = strings.ReplaceAll(req, "{"+found.Name+"}", "{{.Key}}")
		if pathParam.MatchString(req) {
			return nil // other path parameters: not known here
		}
	} else {
		if pathParam.MatchString(req) {
			return nil
		}
		req += "?" + url.QueryEscape(found.Name) + "={{.Key}}"
	}
	return &Effects{Request: "GET " + req, Value: value, From: from}
}

// countPath is where op's 200 JSON answer holds a count of effects.
func countPath(op *openapi3.Operation) string {
	resp := op.Responses.Value("200")
	if resp == nil || resp.Value == nil {
		return ""
	}
	var schema *openapi3.SchemaRef
	for _, ct := range sortedKeys(resp.Value.Content) {
		if strings.Contains(ct, "json") {
			schema = resp.Value.Content[ct].Schema
			break
		}
	}
	if schema == nil || schema.Value == nil {
		return ""
	}
	sc := schema.Value
	if schemaType(sc) == "array" {
		return "$"
	}
	for _, n := range []string{"count", "total", "total_count"} {
		if p := sc.Properties[n]; p != nil && p.Value != nil && (schemaType(p.Value) == "integer" || schemaType(p.Value) == "number") {
			return "$." + n
		}
	}
	for _, n := range sortedKeys(sc.Properties) {
		if p := sc.Properties[n]; p.Value != nil && schemaType(p.Value) == "array" {
			return "$." + n
		}
	}
	return ""
}

// glob is an --include or --exclude pattern.
type glob struct {
	text string
	re   *regexp.Regexp // "METHOD /path" with * for anything
}

func globs(pats []string) ([]glob, error) {
	var out []glob
	for _, p := range pats {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		g := glob{text: p}
		if m, rest, ok := strings.Cut(p, " "); ok {
			parts := strings.Split(strings.TrimSpace(rest), "*")
			for i := range parts {
				parts[i] = regexp.QuoteMeta(parts[i])
			}
			re, err := regexp.Compile("^" + regexp.QuoteMeta(strings.ToUpper(m)) + " " + strings.Join(parts, ".*") + "$")
			if err != nil {
				return nil, fmt.Errorf("%q: %w", p, err)
			}
			if m == "*" {
				re = regexp.MustCompile("^[A-Z]+ " + strings.Join(parts, ".*") + "$")
			}
			g.re = re
		}
		out = append(out, g)
	}
	return out, nil
}

func matches(gs []glob, op *openapi3.Operation, name string) bool {
	return firstMatch(gs, op, name) != ""
}

// firstMatch is the first pattern of gs that selects op (named "METHOD
// /path"): by operationId, tag, or glob.
func firstMatch(gs []glob, op *openapi3.Operation, name string) string {
	for _, g := range gs {
		switch {
		case g.re != nil && g.re.MatchString(name):
			return g.text
		case g.re == nil && (g.text == op.OperationID || slices.Contains(op.Tags, g.text)):
			return g.text
		}
	}
	return ""
}

// withoutField is the JSON object body without its top-level field.
func withoutField(body, field string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return "", fmt.Errorf("the key goes in body field %q, but the body is not a JSON object: %v", field, err)
	}
	delete(m, field)
	return compact(m)
}
