package oracles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/theory/jsonpath"
)

// Errors wrapped by Select and by oracle reads; test with errors.Is.
var (
	// ErrNoMatch: a JSONPath selected nothing.
	ErrNoMatch = errors.New("matched nothing")
	// ErrManyMatches: a JSONPath selected more than one node where one was
	// expected.
	ErrManyMatches = errors.New("matched more than one node")
	// ErrNotJSON: an answer is not valid JSON.
	ErrNotJSON = errors.New("invalid json")
	// ErrType: a selected value has the wrong type (e.g. not a number).
	ErrType = errors.New("unexpected type")
	// ErrStatus: an oracle's request got a non-2xx answer.
	ErrStatus = errors.New("non-2xx answer")
)

// snippetLen is how much of a body an error quotes.
const snippetLen = 200

// Select decodes the JSON body and returns the single node that path (an
// RFC 9535 JSONPath) selects in it. Numbers are returned as json.Number.
// It fails when body is not JSON, when path does not parse, and when path
// selects nothing or more than one node; errors quote the start of body.
func Select(body []byte, path string) (any, error) {
	p, err := compile(path)
	if err != nil {
		return nil, err
	}
	doc, err := decode(body)
	if err != nil {
		return nil, err
	}
	return selectOne(doc, p, body)
}

// path is a compiled JSONPath that names itself as the user wrote it.
type path struct {
	*jsonpath.Path
	src string
}

func (p *path) String() string { return p.src }

func compile(src string) (*path, error) {
	p, err := jsonpath.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("bad path %q: %w", src, err)
	}
	return &path{Path: p, src: src}, nil
}

func decode(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w (%v) in %s", ErrNotJSON, err, snippet(body))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w (data after the first value) in %s", ErrNotJSON, snippet(body))
	}
	return doc, nil
}

// selectOne selects exactly one node of doc; raw is quoted in errors (nil:
// doc is marshalled).
func selectOne(doc any, p *path, raw []byte) (any, error) {
	nodes := p.Select(doc)
	switch len(nodes) {
	case 1:
		return nodes[0], nil
	case 0:
		return nil, fmt.Errorf("%s %w in %s", p, ErrNoMatch, snippetOf(doc, raw))
	}
	return nil, fmt.Errorf("%s %w (%d nodes) in %s", p, ErrManyMatches, len(nodes), snippetOf(doc, raw))
}

func snippetOf(doc any, raw []byte) string {
	if raw == nil {
		raw, _ = json.Marshal(doc)
	}
	return snippet(raw)
}

// snippet is the start of b as one printable line.
func snippet(b []byte) string {
	cut := len(b) > snippetLen
	if cut {
		b = b[:snippetLen]
	}
	s := strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(b), " "))
	if cut {
		s += "…"
	}
	if s == "" {
		return "an empty body"
	}
	return s
}

// toInt64 reads an integer from a selected value: a JSON number with no
// fractional part, or a string holding one.
func toInt64(v any, path fmt.Stringer) (int64, error) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = string(x)
	case string:
		s = strings.TrimSpace(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x), nil
		}
		return 0, fmt.Errorf("%s is %v, %w: want an integer", path, x, ErrType)
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	default:
		return 0, fmt.Errorf("%s is %s, %w: want an integer", path, describe(v), ErrType)
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		return 0, fmt.Errorf("%s is %s, %w: want an integer", path, describe(v), ErrType)
	}
	return int64(f), nil
}

// describe names a decoded JSON value for an error.
func describe(v any) string {
	var kind string
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		kind = "a boolean"
	case string:
		kind = "a string"
	case json.Number, float64, int, int64:
		kind = "a number"
	case []any:
		kind = "an array"
	case map[string]any:
		kind = "an object"
	default:
		kind = fmt.Sprintf("a %T", v)
	}
	b, _ := json.Marshal(v)
	return snippet(b) + " (" + kind + ")"
}
