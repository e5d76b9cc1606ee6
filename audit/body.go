package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/idemcheck/idemcheck/internal/jsonobj"
)

// setField sets the top-level member field of the JSON object body to
// key, keeping the order of the others; a body with no content becomes
// {"field": key}.
func setField(body []byte, field, key string) ([]byte, error) {
	var ms []jsonobj.Member
	if len(bytes.TrimSpace(body)) > 0 {
		var ok bool
		if ms, ok = jsonobj.Members(body); !ok {
			return nil, fmt.Errorf("the key goes in body field %q, but the body is not a JSON object", field)
		}
	}
	v, _ := json.Marshal(key)
	for i := range ms {
		if ms[i].Name == field {
			ms[i].Value = v
			return jsonobj.Encode(ms, false), nil
		}
	}
	return jsonobj.Encode(append(ms, jsonobj.Member{Name: field, Value: v}), false), nil
}

// withoutField returns body, a JSON object, without its member field.
func withoutField(body []byte, field string) ([]byte, error) {
	ms, ok := jsonobj.Members(body)
	if !ok {
		return nil, fmt.Errorf("the key goes in body field %q, but the body is not a JSON object", field)
	}
	ms = slices.DeleteFunc(ms, func(m jsonobj.Member) bool { return m.Name == field })
	return jsonobj.Encode(ms, false), nil
}

// mutate returns body with one value changed, n (>= 1) steps away: the
// first number member (but skip) plus n, else the first string member with
// "-n" appended, else a new member "idemcheck_probe": n. ok is false when
// body is not a JSON object.
func mutate(body []byte, skip string, n int) ([]byte, bool) {
	ms, ok := jsonobj.Members(body)
	if !ok {
		return nil, false
	}
	for i, m := range ms {
		if m.Name == skip {
			continue
		}
		var num json.Number
		dec := json.NewDecoder(bytes.NewReader(m.Value))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			continue
		}
		switch x := v.(type) {
		case json.Number:
			num = x
			if iv, err := num.Int64(); err == nil {
				ms[i].Value = json.RawMessage(strconv.FormatInt(iv+int64(n), 10))
			} else {
				ms[i].Value = json.RawMessage(string(num) + strconv.Itoa(n))
			}
			return jsonobj.Encode(ms, false), true
		case string:
			s, _ := json.Marshal(x + "-" + strconv.Itoa(n))
			ms[i].Value = s
			return jsonobj.Encode(ms, false), true
		}
	}
	ms = append(ms, jsonobj.Member{Name: "idemcheck_probe", Value: json.RawMessage(strconv.Itoa(n))})
	return jsonobj.Encode(ms, false), true
}

// equivalents returns the same JSON object as body written other ways:
// its members in reverse order, and spread over indented lines. Forms
// that come out byte for byte as body are left out.
func equivalents(body []byte) (reordered, respaced []byte) {
	ms, ok := jsonobj.Members(body)
	if !ok {
		return nil, nil
	}
	if len(ms) >= 2 {
		rev := make([]jsonobj.Member, len(ms))
		for i, m := range ms {
			rev[len(ms)-1-i] = m
		}
		if r := jsonobj.Encode(rev, false); !bytes.Equal(r, body) {
			reordered = r
		}
	}
	if r := jsonobj.Encode(ms, true); !bytes.Equal(r, body) {
		respaced = r
	}
	return reordered, respaced
}
