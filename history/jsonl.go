package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// FormatVersion is the version of the JSON Lines format written by Encode.
// Decode accepts this version only.
const FormatVersion = 1

// ErrFormat is wrapped by every error Decode returns for malformed input.
var ErrFormat = errors.New("malformed history")

type header struct {
	Type          string `json:"type"`
	FormatVersion int    `json:"format_version"`
	Meta
}

type opLine struct {
	Type string `json:"type"`
	ID   int    `json:"op"`
	Key  string `json:"key"`
	User string `json:"user,omitempty"`
}

// attemptLine is an attempt as written: its own JSON tags, after the type.
type attemptLine struct {
	Type string `json:"type"`
	Attempt
}

// anyLine is any line as read: the header's, op's and attempt's fields in one
// struct, so each line is parsed once. An op line's "op" (its ID) lands in
// Attempt.Op.
type anyLine struct {
	Type          string `json:"type"`
	FormatVersion int    `json:"format_version"`
	Meta
	Key  string `json:"key"`
	User string `json:"user"`
	Attempt
}

// Encode writes h as JSON Lines: a header line with the format version and
// the run's metadata, one line per op, then one line per attempt.
func Encode(w io.Writer, h *History) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(header{Type: "header", FormatVersion: FormatVersion, Meta: h.Meta}); err != nil {
		return err
	}
	for _, op := range h.Ops {
		if err := enc.Encode(opLine{Type: "op", ID: op.ID, Key: op.Key, User: op.User}); err != nil {
			return err
		}
	}
	for i := range h.Attempts {
		if err := enc.Encode(attemptLine{Type: "attempt", Attempt: h.Attempts[i]}); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Decode reads a history written by Encode. Errors name the line and wrap
// ErrFormat.
func Decode(r io.Reader) (*History, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	h := &History{}
	line := 0
	sawHeader := false
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var l anyLine
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, line, err)
		}
		if !sawHeader && l.Type != "header" {
			return nil, fmt.Errorf("%w: line %d: first line must be the header, got type %q", ErrFormat, line, l.Type)
		}
		switch l.Type {
		case "header":
			if l.FormatVersion != FormatVersion {
				return nil, fmt.Errorf("%w: line %d: format_version %d, this idemcheck reads %d", ErrFormat, line, l.FormatVersion, FormatVersion)
			}
			h.Meta = l.Meta
			sawHeader = true
		case "op":
			if l.Op != len(h.Ops) {
				return nil, fmt.Errorf("%w: line %d: op %d out of order, expected %d", ErrFormat, line, l.Op, len(h.Ops))
			}
			h.Ops = append(h.Ops, Op{ID: l.Op, Key: l.Key, User: l.User})
		case "attempt":
			if l.Op < 0 || l.Op >= len(h.Ops) {
				return nil, fmt.Errorf("%w: line %d: attempt for unknown op %d", ErrFormat, line, l.Op)
			}
			h.Attempts = append(h.Attempts, l.Attempt)
		default:
			return nil, fmt.Errorf("%w: line %d: unknown line type %q", ErrFormat, line, l.Type)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading history: %w", err)
	}
	if !sawHeader {
		return nil, fmt.Errorf("%w: empty input, no header line", ErrFormat)
	}
	h.Sort()
	return h, nil
}
