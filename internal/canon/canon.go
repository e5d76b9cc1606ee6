package canon

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/spec"
)

// Fingerprint returns the fingerprint of a response body, the 64-bit FNV-1a
// hash of its normal form:
//
//   - a JSON body is re-encoded canonically (see the package doc), the
//     members and array elements selected by the volatile JSONPaths removed
//     first;
//   - any other body (not JSON, or truncated) is hashed as it is: its
//     fingerprint is FNV1a(body);
//   - an empty body gives 0.
//
// So the same answer with its keys in another order or spaced differently
// has the same fingerprint, and any other difference changes it. A Buffer
// does the same with its scratch space reused.
func Fingerprint(body []byte, volatile []*jsonpath.Path) uint64 {
	var c Buffer
	return c.Fingerprint(body, volatile)
}

// maxDepth bounds the nesting of JSON values the normaliser follows; deeper
// bodies are hashed as they are.
const maxDepth = 256

// Buffer writes the canonical encoding of JSON values. Its scratch space is
// reused from one body to the next: one Buffer per goroutine, as it is not
// safe for concurrent use. The zero value is ready to use.
type Buffer struct {
	out   []byte
	tmp   []byte
	mem   []member
	depth int
}

// member is an object member written to out: its key (quotes included) is
// out[k0:k1] and the member ends at end (exclusive, comma not included).
type member struct{ k0, k1, end int }

// Fingerprint returns the fingerprint of body (see the function
// Fingerprint).
func (c *Buffer) Fingerprint(body []byte, volatile []*jsonpath.Path) uint64 {
	if len(body) == 0 {
		return 0
	}
	if len(volatile) > 0 {
		doc, ok := Decode(body)
		if !ok {
			return FNV1a(body)
		}
		return c.HashDoc(doc, volatile)
	}
	if !c.canonical(body) {
		return FNV1a(body)
	}
	return FNV1a(c.out)
}

// HashDoc returns the fingerprint of the document doc, a value returned by
// Decode, with the nodes selected by the volatile paths removed. doc is
// modified in place.
func (c *Buffer) HashDoc(doc any, volatile []*jsonpath.Path) uint64 {
	doc = remove(doc, volatile)
	c.reset()
	c.encode(doc)
	return FNV1a(c.out)
}

// Canonical returns the canonical form of body, which must be one JSON
// value, optionally surrounded by whitespace. It reports false when body is
// not JSON (or nests deeper than 256 levels). The result is valid until the
// next call on c.
func (c *Buffer) Canonical(body []byte) ([]byte, bool) {
	if !c.canonical(body) {
		return nil, false
	}
	return c.out, true
}

// canonical parses body as one JSON value and writes its canonical form to
// c.out. It reports false when body is not JSON.
func (c *Buffer) canonical(body []byte) bool {
	c.reset()
	i, ok := c.value(body, 0)
	if !ok {
		return false
	}
	return skipWS(body, i) == len(body)
}

func (c *Buffer) reset() {
	c.out = c.out[:0]
	c.mem = c.mem[:0]
	c.depth = 0
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value parses the JSON value at b[i:] (after optional whitespace), appends
// its canonical form and returns the index just past it.
func (c *Buffer) value(b []byte, i int) (int, bool) {
	i = skipWS(b, i)
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '{':
		return c.object(b, i)
	case '[':
		return c.array(b, i)
	case '"':
		return c.str(b, i)
	case 't':
		return c.literal(b, i, "true")
	case 'f':
		return c.literal(b, i, "false")
	case 'n':
		return c.literal(b, i, "null")
	default:
		return c.number(b, i)
	}
}

func (c *Buffer) literal(b []byte, i int, lit string) (int, bool) {
	if !bytes.HasPrefix(b[i:], []byte(lit)) {
		return i, false
	}
	c.out = append(c.out, lit...)
	return i + len(lit), true
}

// number copies a number literal as it is, after checking the JSON grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (c *Buffer) number(b []byte, i int) (int, bool) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	c.out = append(c.out, b[start:i]...)
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// str copies the string at b[i:] (b[i] is the opening quote). A string
// without escapes or control characters, in valid UTF-8, is already in its
// canonical form; any other is decoded and re-encoded.
func (c *Buffer) str(b []byte, i int) (int, bool) {
	ascii := true
	for j := i + 1; j < len(b); j++ {
		ch := b[j]
		switch {
		case ch == '"':
			if !ascii && !utf8.Valid(b[i+1:j]) {
				return c.slowStr(b, i)
			}
			c.out = append(c.out, b[i:j+1]...)
			return j + 1, true
		case ch == '\\':
			return c.slowStr(b, i)
		case ch < 0x20:
			return j, false
		case ch >= utf8.RuneSelf:
			ascii = false
		}
	}
	return len(b), false
}

// slowStr decodes a string with escapes (or invalid UTF-8) and writes it
// back canonically.
func (c *Buffer) slowStr(b []byte, i int) (int, bool) {
	j := i + 1
	for ; j < len(b); j++ {
		if b[j] == '\\' {
			j++
			continue
		}
		if b[j] == '"' {
			break
		}
	}
	if j >= len(b) {
		return j, false
	}
	var s string
	if err := json.Unmarshal(b[i:j+1], &s); err != nil {
		return j, false
	}
	c.out = appendString(c.out, s)
	return j + 1, true
}

// appendString writes s as a canonical JSON string: only '"', '\\' and
// control characters are escaped (\n \r \t \b \f, else \u00XX); everything
// else is written as UTF-8, invalid bytes as U+FFFD.
func appendString(out []byte, s string) []byte {
	out = append(out, '"')
	for _, r := range s {
		switch {
		case r == '"':
			out = append(out, '\\', '"')
		case r == '\\':
			out = append(out, '\\', '\\')
		case r == '\n':
			out = append(out, '\\', 'n')
		case r == '\r':
			out = append(out, '\\', 'r')
		case r == '\t':
			out = append(out, '\\', 't')
		case r == '\b':
			out = append(out, '\\', 'b')
		case r == '\f':
			out = append(out, '\\', 'f')
		case r < 0x20:
			out = append(out, '\\', 'u', '0', '0', hexDigit[r>>4], hexDigit[r&0xf])
		default:
			out = utf8.AppendRune(out, r)
		}
	}
	return append(out, '"')
}

const hexDigit = "0123456789abcdef"

func (c *Buffer) array(b []byte, i int) (int, bool) {
	if c.depth++; c.depth > maxDepth {
		return i, false
	}
	defer func() { c.depth-- }()
	c.out = append(c.out, '[')
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		c.out = append(c.out, ']')
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = c.value(b, i); !ok {
			return i, false
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			c.out = append(c.out, ',')
			i++
		case ']':
			c.out = append(c.out, ']')
			return i + 1, true
		default:
			return i, false
		}
	}
}

func (c *Buffer) object(b []byte, i int) (int, bool) {
	if c.depth++; c.depth > maxDepth {
		return i, false
	}
	defer func() { c.depth-- }()
	start := len(c.out)
	base := len(c.mem)
	c.out = append(c.out, '{')
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		c.out = append(c.out, '}')
		return i + 1, true
	}
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		k0 := len(c.out)
		var ok bool
		if i, ok = c.str(b, i); !ok {
			return i, false
		}
		k1 := len(c.out)
		i = skipWS(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		c.out = append(c.out, ':')
		if i, ok = c.value(b, i+1); !ok {
			return i, false
		}
		c.mem = append(c.mem, member{k0, k1, len(c.out)})
		i = skipWS(b, i)
		if i >= len(b) {
			return i, false
		}
		if b[i] == ',' {
			c.out = append(c.out, ',')
			i++
			continue
		}
		if b[i] != '}' {
			return i, false
		}
		c.sortMembers(start, base)
		c.out = append(c.out, '}')
		return i + 1, true
	}
}

// sortMembers puts the members written since out[start] ('{') and
// mem[base] in key order, unless they already are. Keys compare by their
// canonical encoding, byte by byte; equal keys keep their order.
func (c *Buffer) sortMembers(start, base int) {
	ms := c.mem[base:]
	key := func(m member) []byte { return c.out[m.k0+1 : m.k1-1] }
	sorted := true
	for j := 1; j < len(ms); j++ {
		if bytes.Compare(key(ms[j-1]), key(ms[j])) > 0 {
			sorted = false
			break
		}
	}
	if !sorted {
		slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(key(a), key(b)) })
		c.tmp = append(c.tmp[:0], c.out[start:]...)
		c.out = c.out[:start+1]
		for j, m := range ms {
			if j > 0 {
				c.out = append(c.out, ',')
			}
			c.out = append(c.out, c.tmp[m.k0-start:m.end-start]...)
		}
	}
	c.mem = c.mem[:base]
}

// Encode returns the canonical form of v, a value returned by Decode: the
// same bytes Canonical gives for the body it was decoded from (unless that
// body repeats an object key). The result is valid until the next call on
// c.
func (c *Buffer) Encode(v any) []byte {
	c.reset()
	c.encode(v)
	return c.out
}

// encode writes a decoded JSON value (Decode's output) canonically, in the
// same form as value.
func (c *Buffer) encode(v any) {
	switch v := v.(type) {
	case nil:
		c.out = append(c.out, "null"...)
	case bool:
		c.out = strconv.AppendBool(c.out, v)
	case json.Number:
		c.out = append(c.out, v...)
	case float64:
		c.out = strconv.AppendFloat(c.out, v, 'g', -1, 64)
	case string:
		c.out = appendString(c.out, v)
	case []any:
		c.out = append(c.out, '[')
		for j, e := range v {
			if j > 0 {
				c.out = append(c.out, ',')
			}
			c.encode(e)
		}
		c.out = append(c.out, ']')
	case map[string]any:
		start, base := len(c.out), len(c.mem)
		c.out = append(c.out, '{')
		first := true
		for k, e := range v {
			if !first {
				c.out = append(c.out, ',')
			}
			first = false
			k0 := len(c.out)
			c.out = appendString(c.out, k)
			k1 := len(c.out)
			c.out = append(c.out, ':')
			c.encode(e)
			c.mem = append(c.mem, member{k0, k1, len(c.out)})
		}
		c.sortMembers(start, base)
		c.out = append(c.out, '}')
	default:
		// Decode yields only the types above.
		c.out = append(c.out, "null"...)
	}
}

// Decode decodes body as one JSON value, numbers kept as written
// (json.Number), objects as map[string]any and arrays as []any. It reports
// false when body is not exactly one JSON value.
func Decode(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// remove deletes the nodes selected by paths from doc and returns it.
// Removing the root leaves null.
func remove(doc any, paths []*jsonpath.Path) any {
	for _, p := range paths {
		located := p.SelectLocated(doc)
		if len(located) == 0 {
			continue
		}
		// Delete the last paths first so array indexes stay valid.
		located = located.Deduplicate()
		located.Sort()
		for j := len(located) - 1; j >= 0; j-- {
			np := located[j].Path
			if len(np) == 0 {
				return nil
			}
			doc = removeAt(doc, np)
		}
	}
	return doc
}

// removeAt deletes the node at the normalized path np (non-empty) from doc.
func removeAt(doc any, np spec.NormalizedPath) any {
	parent := doc
	for _, sel := range np[:len(np)-1] {
		switch s := sel.(type) {
		case spec.Name:
			m, ok := parent.(map[string]any)
			if !ok {
				return doc
			}
			parent = m[string(s)]
		case spec.Index:
			a, ok := parent.([]any)
			if !ok || int(s) < 0 || int(s) >= len(a) {
				return doc
			}
			parent = a[s]
		default:
			return doc
		}
	}
	switch s := np[len(np)-1].(type) {
	case spec.Name:
		if m, ok := parent.(map[string]any); ok {
			delete(m, string(s))
		}
	case spec.Index:
		if a, ok := parent.([]any); ok && int(s) >= 0 && int(s) < len(a) {
			// The array is shared with its parent: rebuild it there.
			return replaceAt(doc, np[:len(np)-1], slices.Delete(slices.Clone(a), int(s), int(s)+1))
		}
	}
	return doc
}

// replaceAt sets the node at np to v and returns the new doc.
func replaceAt(doc any, np spec.NormalizedPath, v any) any {
	if len(np) == 0 {
		return v
	}
	parent := doc
	for _, sel := range np[:len(np)-1] {
		switch s := sel.(type) {
		case spec.Name:
			parent = parent.(map[string]any)[string(s)]
		case spec.Index:
			parent = parent.([]any)[s]
		}
	}
	switch s := np[len(np)-1].(type) {
	case spec.Name:
		parent.(map[string]any)[string(s)] = v
	case spec.Index:
		parent.([]any)[s] = v
	}
	return doc
}

// render writes a selected JSON node as a string: strings as they are,
// numbers as written, true, false, null, objects and arrays canonically.
func (c *Buffer) render(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	}
	c.reset()
	c.encode(v)
	return string(c.out)
}

// Select renders what p selects in doc, a value returned by Decode, as a
// string: the node itself when p selects one, a JSON array of them when
// several; false when none. A string is rendered as it is, a number as
// written, true, false and null as such, objects and arrays canonically.
func (c *Buffer) Select(p *jsonpath.Path, doc any) (string, bool) {
	nodes := p.Select(doc)
	switch len(nodes) {
	case 0:
		return "", false
	case 1:
		return c.render(nodes[0]), true
	}
	return c.render([]any(nodes)), true
}

// FNV1a returns the standard 64-bit FNV-1a hash of b (hash/fnv's New64a),
// the hash of every fingerprint.
func FNV1a(b []byte) uint64 { return uint64(NewHash().Add(b)) }

// Hash is a 64-bit FNV-1a hash computed in pieces, for a body too long to
// hold: NewHash().Add(a).Add(b) equals NewHash().Add(a+b), and Sum gives
// what FNV1a gives for the whole.
type Hash uint64

// NewHash returns the hash of no bytes.
func NewHash() Hash { return offset64 }

const (
	offset64 = 14695981039346656037
	prime64  = 1099511628211
)

// Add returns h continued with b.
func (h Hash) Add(b []byte) Hash {
	for _, x := range b {
		h ^= Hash(x)
		h *= prime64
	}
	return h
}

// Sum returns the hash value.
func (h Hash) Sum() uint64 { return uint64(h) }
