package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"
)

// MaxDocBytes bounds every document read: the spec and each file or URL
// a $ref names.
const MaxDocBytes = 32 << 20

// ErrSpec is wrapped by every error Load returns for a document that
// cannot be used at all (unreadable, not OpenAPI, not parsed).
var ErrSpec = errors.New("openapi document")

// Spec is a loaded document: OpenAPI 3.0, 3.1 or 3.2, or Swagger 2.0
// converted to 3.0.
type Spec struct {
	// Doc is the document, its $refs resolved.
	Doc *openapi3.T
	// Source is where it was read from (a path or a URL).
	Source string
	// Version is the version it declared: "2.0", "3.0.3", "3.1.0"…
	Version string
	// Broken are the operations left out because a $ref in them does not
	// resolve: each says which, where.
	Broken []Skipped
}

// Skipped is an operation left out of the plan, and why.
type Skipped struct {
	Method, Path, OperationID string
	// Pointer is the JSON pointer, in the document, of what made it be
	// left out ("" when the reason is not a place in the document).
	Pointer string
	Reason  string
}

// Name is the operation as a line names it: its operationId, or
// "METHOD /path".
func (s Skipped) Name() string {
	if s.Method == "*" {
		return "every operation at " + s.Path // a path item that did not resolve
	}
	return opName(s.OperationID, s.Method, s.Path)
}

func opName(id, method, path string) string {
	if id != "" {
		return id + " (" + method + " " + path + ")"
	}
	return method + " " + path
}

// Load reads the document at src, a file path or an http(s) URL read with
// client (nil: a client without a timeout of its own; ctx bounds it).
// $refs may name the same document, or files beside it (a document read
// from a URL: URLs on its host); any other $ref is refused. An operation
// whose $refs do not all resolve is left out and named in Spec.Broken,
// the rest loaded.
func Load(ctx context.Context, src string, client *http.Client) (*Spec, error) {
	r := &reader{ctx: ctx, client: client, cache: map[string]any{}}
	if client == nil {
		r.client = http.DefaultClient
	}
	base, err := r.locate(src)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSpec, src, err)
	}
	r.base = base
	raw, err := r.read(base)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSpec, src, err)
	}
	root, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s: not an OpenAPI document (want an object with \"openapi\" or \"swagger\" at its top)", ErrSpec, src)
	}
	s := &Spec{Source: src}
	switch {
	case str(root["swagger"]) != "":
		s.Version = str(root["swagger"])
		if !strings.HasPrefix(s.Version, "2.") {
			return nil, fmt.Errorf("%w: %s: swagger %q: want 2.0, or an OpenAPI 3 document", ErrSpec, src, s.Version)
		}
	case str(root["openapi"]) != "":
		s.Version = str(root["openapi"])
		if !strings.HasPrefix(s.Version, "3.") {
			return nil, fmt.Errorf("%w: %s: openapi %q: want 3.0, 3.1 or 3.2", ErrSpec, src, s.Version)
		}
	default:
		return nil, fmt.Errorf("%w: %s: no \"openapi\" or \"swagger\" version at its top: not an OpenAPI document", ErrSpec, src)
	}
	s.Broken = r.prune(root)
	data, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSpec, src, err)
	}
	if strings.HasPrefix(s.Version, "2.") {
		var v2 openapi2.T
		if err := json.Unmarshal(data, &v2); err != nil {
			return nil, fmt.Errorf("%w: %s: swagger 2.0: %w", ErrSpec, src, err)
		}
		if s.Doc, err = openapi2conv.ToV3(&v2); err != nil {
			return nil, fmt.Errorf("%w: %s: converting swagger 2.0 to OpenAPI 3: %w", ErrSpec, src, err)
		}
		data, err = json.Marshal(s.Doc)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrSpec, src, err)
		}
	}
	l := openapi3.NewLoader()
	l.Context = ctx
	l.IsExternalRefsAllowed = true
	l.ReadFromURIFunc = func(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
		if r.base.Scheme != "file" && !u.IsAbs() {
			u = r.base.ResolveReference(u) // the loader drops the host of a document read from a URL
		}
		if err := r.allowed(u); err != nil {
			return nil, err
		}
		return r.bytes(u)
	}
	if s.Doc, err = l.LoadFromDataWithPath(data, base); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSpec, src, err)
	}
	return s, nil
}

// reader reads a document and the documents its $refs name, each once.
type reader struct {
	ctx    context.Context
	client *http.Client
	base   *url.URL
	cache  map[string]any // parsed documents by URL, without fragment
	raw    map[string][]byte
}

// locate is src as a URL: http(s) as it is, a path as a file URL.
func (r *reader) locate(src string) (*url.URL, error) {
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		u, err := url.Parse(src)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("not a URL")
		}
		return u, nil
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}, nil
}

// allowed refuses a document the spec may not name: a file when the spec
// came from a URL, a URL on another host, anything but a file beside a
// spec read from a file.
func (r *reader) allowed(u *url.URL) error {
	switch {
	case r.base.Scheme == "file" && (u.Scheme == "file" || u.Scheme == ""):
		return nil
	case r.base.Scheme != "file" && u.Scheme == r.base.Scheme && u.Host == r.base.Host:
		return nil
	case u.Scheme == "http" || u.Scheme == "https":
		return fmt.Errorf("%s is off this document's host: a $ref may name files beside the document (or URLs on its host); download it and refer to the copy", u.Redacted())
	}
	return fmt.Errorf("%s: a document read from a URL may refer to URLs on its host only", u.Redacted())
}

// bytes reads the document at u (no fragment), at most MaxDocBytes.
func (r *reader) bytes(u *url.URL) ([]byte, error) {
	k := *u
	k.Fragment = ""
	key := k.String()
	if b, ok := r.raw[key]; ok {
		return b, nil
	}
	var rc io.ReadCloser
	if k.Scheme == "file" || k.Scheme == "" {
		f, err := os.Open(filepath.FromSlash(k.Path))
		if err != nil {
			return nil, err
		}
		rc = f
	} else {
		req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, key, nil)
		if err != nil {
			return nil, err
		}
		resp, err := r.client.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode/100 != 2 {
			resp.Body.Close()
			return nil, fmt.Errorf("GET %s: %s", k.Redacted(), resp.Status)
		}
		rc = resp.Body
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxDocBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxDocBytes {
		return nil, fmt.Errorf("%s is over %d MiB", k.Redacted(), MaxDocBytes>>20)
	}
	if r.raw == nil {
		r.raw = map[string][]byte{}
	}
	r.raw[key] = b
	return b, nil
}

// read parses the document at u (JSON or YAML).
func (r *reader) read(u *url.URL) (any, error) {
	k := *u
	k.Fragment = ""
	if v, ok := r.cache[k.String()]; ok {
		return v, nil
	}
	b, err := r.bytes(&k)
	if err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("not JSON or YAML: %w", err)
	}
	untime(&n)
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON or YAML: %w", err)
	}
	v = plain(v)
	r.cache[k.String()] = v
	return v, nil
}

// untime keeps YAML's dates and times (an example's 2024-01-31) the
// strings they are written as, as JSON has them: decoded as timestamps
// they would be written back as 2024-01-31T00:00:00Z.
func untime(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!timestamp" {
		n.Tag = "!!str"
	}
	for _, c := range n.Content {
		untime(c)
	}
}

// plain turns YAML's maps with non-string keys (status codes such as 201)
// into map[string]any, as JSON would have them.
func plain(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = plain(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = plain(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = plain(e)
		}
	}
	return v
}

// Methods are the methods an operation may have in a path item.
var Methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// prune deletes, from root, the operations with a $ref that does not
// resolve (or that names a document the spec may not), and the components
// that hold one, and returns the operations it deleted.
func (r *reader) prune(root map[string]any) []Skipped {
	var out []Skipped
	paths, _ := root["paths"].(map[string]any)
	for _, p := range sortedKeys(paths) {
		item, _ := paths[p].(map[string]any)
		if item == nil {
			continue
		}
		itemPtr := "#/paths/" + escape(p)
		if _, ok := item["$ref"]; ok {
			// a path item kept elsewhere: when it does not resolve, its
			// operations are unknown; the path is left out, not the
			// document
			if b := r.brokenIn(item, r.base, itemPtr, map[string]bool{}); b.ptr != "" {
				out = append(out, Skipped{Method: "*", Path: p, Pointer: b.ptr, Reason: b.why})
				delete(paths, p)
			}
			continue
		}
		shared := r.brokenIn(item["parameters"], r.base, itemPtr+"/parameters", map[string]bool{})
		for _, m := range Methods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			ptr, why := shared.ptr, shared.why
			if ptr == "" {
				b := r.brokenIn(op, r.base, itemPtr+"/"+m, map[string]bool{})
				ptr, why = b.ptr, b.why
			}
			if ptr == "" {
				continue
			}
			out = append(out, Skipped{Method: strings.ToUpper(m), Path: p, OperationID: str(op["operationId"]), Pointer: ptr, Reason: why})
			delete(item, m)
		}
		if shared.ptr != "" {
			delete(item, "parameters")
		}
	}
	comps, _ := root["components"].(map[string]any)
	for _, kind := range sortedKeys(comps) {
		group, _ := comps[kind].(map[string]any)
		for _, name := range sortedKeys(group) {
			ptr := "#/components/" + escape(kind) + "/" + escape(name)
			if b := r.brokenIn(group[name], r.base, ptr, map[string]bool{}); b.ptr != "" {
				delete(group, name)
			}
		}
	}
	// Swagger 2.0 keeps its components at the top.
	for _, kind := range []string{"definitions", "parameters", "responses"} {
		group, _ := root[kind].(map[string]any)
		for _, name := range sortedKeys(group) {
			if b := r.brokenIn(group[name], r.base, "#/"+kind+"/"+escape(name), map[string]bool{}); b.ptr != "" {
				delete(group, name)
			}
		}
	}
	return out
}

// broken is the first $ref found that does not resolve: where it is, and
// why.
type broken struct{ ptr, why string }

// brokenIn walks v, a part of the document at doc found at ptr, following
// each $ref (seen stops cycles), and returns the first that does not
// resolve.
func (r *reader) brokenIn(v any, doc *url.URL, ptr string, seen map[string]bool) broken {
	switch t := v.(type) {
	case map[string]any:
		if ref, ok := t["$ref"].(string); ok {
			if b := r.follow(ref, doc, ptr+"/$ref", seen); b.ptr != "" {
				return b
			}
		}
		for _, k := range sortedKeys(t) {
			if k == "$ref" || k == "example" || k == "examples" && !isExamplesMap(t[k]) {
				continue
			}
			if b := r.brokenIn(t[k], doc, ptr+"/"+escape(k), seen); b.ptr != "" {
				return b
			}
		}
	case []any:
		for i, e := range t {
			if b := r.brokenIn(e, doc, fmt.Sprintf("%s/%d", ptr, i), seen); b.ptr != "" {
				return b
			}
		}
	}
	return broken{}
}

// isExamplesMap reports whether v is an examples object of Example
// objects (which may be $refs), not a 3.1 schema's list of values.
func isExamplesMap(v any) bool { _, ok := v.(map[string]any); return ok }

// follow resolves ref, found at ptr in the document doc, and walks what
// it names.
func (r *reader) follow(ref string, doc *url.URL, ptr string, seen map[string]bool) broken {
	if strings.HasPrefix(ref, "#") && !strings.HasPrefix(ref, "#/") && ref != "#" {
		return broken{} // a 3.1 anchor: the loader resolves it
	}
	rel, err := url.Parse(ref)
	if err != nil {
		return broken{ptr, fmt.Sprintf("$ref %q is not a URI reference", ref)}
	}
	target := doc.ResolveReference(rel)
	if rel.Scheme == "" && rel.Host == "" && rel.Path == "" {
		target = &url.URL{Scheme: doc.Scheme, Host: doc.Host, Path: doc.Path, Fragment: rel.Fragment}
	}
	key := target.String()
	if seen[key] {
		return broken{}
	}
	seen[key] = true
	if err := r.allowed(target); err != nil {
		return broken{ptr, fmt.Sprintf("$ref %q is refused: %v", ref, err)}
	}
	whole, err := r.read(target)
	if err != nil {
		return broken{ptr, fmt.Sprintf("$ref %q does not resolve: %v", ref, err)}
	}
	v, ok := pointTo(whole, target.Fragment)
	if !ok {
		return broken{ptr, fmt.Sprintf("$ref %q does not resolve: nothing at %q in %s", ref, "#"+target.Fragment, docName(target, r.base))}
	}
	next := &url.URL{Scheme: target.Scheme, Host: target.Host, Path: target.Path}
	return r.brokenIn(v, next, ptr, seen)
}

// docName is the document of u as an error names it: "the document" when
// it is the spec itself, else its file name or URL.
func docName(u, base *url.URL) string {
	if u.Scheme == base.Scheme && u.Host == base.Host && u.Path == base.Path {
		return "the document"
	}
	if u.Scheme == "file" {
		return filepath.Base(u.Path)
	}
	k := *u
	k.Fragment = ""
	return k.Redacted()
}

// pointTo is what the JSON pointer frag (without '#') names in v.
func pointTo(v any, frag string) (any, bool) {
	if frag == "" {
		return v, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch t := v.(type) {
		case map[string]any:
			e, ok := t[tok]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			var i int
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// escape is s as a JSON pointer token.
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func str(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64, int:
		return fmt.Sprint(t)
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// compact is v as JSON without HTML escapes ({{ and < stay as they are).
func compact(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
