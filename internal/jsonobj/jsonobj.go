// Package jsonobj reads and writes the top-level members of a JSON object
// in their order, which encoding/json's maps forget: the audit varies a
// request body one member at a time, reorders and re-spaces it, and names
// the members two answers disagree on.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Member is one top-level member of a JSON object, in its order.
type Member struct {
	Name  string
	Value json.RawMessage
}

// Members decodes body as one JSON object and returns its top-level
// members in order; ok is false for anything else.
func Members(body []byte) (ms []Member, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, isName := tok.(string)
		if !isName {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		ms = append(ms, Member{Name: name, Value: v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	if ms == nil {
		ms = []Member{}
	}
	return ms, true
}

// Encode writes ms as a compact JSON object, in their order; indent
// spreads it over lines with two-space indentation and a final newline.
func Encode(ms []Member, indent bool) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(m.Name)
		b.Write(name)
		b.WriteByte(':')
		if err := json.Compact(&b, m.Value); err != nil {
			b.Write(m.Value)
		}
	}
	b.WriteByte('}')
	if !indent {
		return b.Bytes()
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return b.Bytes()
	}
	out.WriteByte('\n')
	return out.Bytes()
}
