package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// errNotText is wrapped by the errors of storableText and storableBody.
var errNotText = errors.New("not storable as text")

// storableText returns an error naming field unless s can be stored in a
// text column of every ledger: Postgres text holds neither a NUL byte nor
// invalid UTF-8. The memory ledger could store either; the lab rejects
// them on every backend, before anything is charged, so that it answers
// the same on all of them (400, never a 503 after the charge).
func storableText(field, s string) error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Errorf("%s holds a NUL byte (U+0000) at byte %d: %w (text cannot hold NUL)", field, i, errNotText)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8: %w", field, errNotText)
	}
	return nil
}

// storableBody returns an error unless body is valid UTF-8, naming the
// top-level field of a JSON object that holds the invalid bytes when it can.
// A JSON decoder would quietly turn them into U+FFFD.
func storableBody(body []byte) error {
	if utf8.Valid(body) {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) == nil {
		for name, raw := range obj {
			if !utf8.Valid(raw) {
				return storableText(name, string(raw))
			}
		}
	}
	return fmt.Errorf("the body is not valid UTF-8: %w", errNotText)
}

// rejectText answers 400 with title, naming the field and why, and returns
// true when one of fields (name, value pairs) cannot be stored as text.
func rejectText(w http.ResponseWriter, title string, fields ...string) bool {
	for i := 0; i+1 < len(fields); i += 2 {
		if err := storableText(fields[i], fields[i+1]); err != nil {
			problem(w, http.StatusBadRequest, title, err.Error())
			return true
		}
	}
	return false
}
