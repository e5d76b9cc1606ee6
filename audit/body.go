package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// member is one top-level member of a JSON object body, in its order.
type member struct {
	name  string
	value json.RawMessage
}

// members decodes body as one JSON object and returns its top-level
// members in order; ok is false for anything else.
func members(body []byte) (ms []member, ok bool) {
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
		ms = append(ms, member{name: name, value: v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	if ms == nil {
		ms = []member{}
	}
	return ms, true
}

// encodeMembers writes ms as a compact JSON object, in their order; indent
// spreads it over lines with two-space indentation and a final newline.
func encodeMembers(ms []member, indent bool) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(m.name)
		b.Write(name)
		b.WriteByte(':')
		if err := json.Compact(&b, m.value); err != nil {
			b.Write(m.value)
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

// setField sets the top-level member field of the JSON object body to
// key, keeping the order of the others; a body with no content becomes
// {"field": key}.
func setField(body []byte, field, key string) ([]byte, error) {
	var ms []member
	if len(bytes.TrimSpace(body)) > 0 {
		var ok bool
		if ms, ok = members(body); !ok {
			return nil, fmt.Errorf("the key goes in body field %q, but the body is not a JSON object", field)
		}
	}
	v, _ := json.Marshal(key)
	for i := range ms {
		if ms[i].name == field {
			ms[i].value = v
			return encodeMembers(ms, false), nil
		}
	}
	return encodeMembers(append(ms, member{name: field, value: v}), false), nil
}

// mutate returns body with one value changed, n (>= 1) steps away: the
// first number member (but skip) plus n, else the first string member with
// "-n" appended, else a new member "idemcheck_probe": n. ok is false when
// body is not a JSON object.
func mutate(body []byte, skip string, n int) ([]byte, bool) {
	ms, ok := members(body)
	if !ok {
		return nil, false
	}
	for i, m := range ms {
		if m.name == skip {
			continue
		}
		var num json.Number
		dec := json.NewDecoder(bytes.NewReader(m.value))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			continue
		}
		switch x := v.(type) {
		case json.Number:
			num = x
			if iv, err := num.Int64(); err == nil {
				ms[i].value = json.RawMessage(strconv.FormatInt(iv+int64(n), 10))
			} else {
				ms[i].value = json.RawMessage(string(num) + strconv.Itoa(n))
			}
			return encodeMembers(ms, false), true
		case string:
			s, _ := json.Marshal(x + "-" + strconv.Itoa(n))
			ms[i].value = s
			return encodeMembers(ms, false), true
		}
	}
	ms = append(ms, member{name: "idemcheck_probe", value: json.RawMessage(strconv.Itoa(n))})
	return encodeMembers(ms, false), true
}

// equivalents returns the same JSON object as body written other ways:
// its members in reverse order, and spread over indented lines. Forms
// that come out byte for byte as body are left out.
func equivalents(body []byte) (reordered, respaced []byte) {
	ms, ok := members(body)
	if !ok {
		return nil, nil
	}
	if len(ms) >= 2 {
		rev := make([]member, len(ms))
		for i, m := range ms {
			rev[len(ms)-1-i] = m
		}
		if r := encodeMembers(rev, false); !bytes.Equal(r, body) {
			reordered = r
		}
	}
	if r := encodeMembers(ms, true); !bytes.Equal(r, body) {
		respaced = r
	}
	return reordered, respaced
}
