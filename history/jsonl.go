package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
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

type attemptLine struct {
	Type        string            `json:"type"`
	Op          int               `json:"op"`
	N           int               `json:"n"`
	Fault       string            `json:"fault,omitempty"`
	Outcome     Outcome           `json:"outcome"`
	Status      int               `json:"status,omitempty"`
	IntendedNS  int64             `json:"intended_ns"`
	StartNS     int64             `json:"start_ns"`
	EndNS       int64             `json:"end_ns"`
	Fingerprint Fingerprint       `json:"fingerprint,omitempty"`
	Fields      map[string]string `json:"fields,omitempty"`
	Err         string            `json:"error,omitempty"`
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
		a := &h.Attempts[i]
		l := attemptLine{
			Type: "attempt", Op: a.Op, N: a.N, Fault: a.Fault, Outcome: a.Outcome, Status: a.Status,
			IntendedNS: int64(a.Intended), StartNS: int64(a.Start), EndNS: int64(a.End),
			Fingerprint: a.Fingerprint, Fields: a.Fields, Err: a.Err,
		}
		if err := enc.Encode(l); err != nil {
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
		var probe struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, line, err)
		}
		if !sawHeader && probe.Type != "header" {
			return nil, fmt.Errorf("%w: line %d: first line must be the header, got type %q", ErrFormat, line, probe.Type)
		}
		switch probe.Type {
		case "header":
			var hd header
			if err := json.Unmarshal(b, &hd); err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, line, err)
			}
			if hd.FormatVersion != FormatVersion {
				return nil, fmt.Errorf("%w: line %d: format_version %d, this idemcheck reads %d", ErrFormat, line, hd.FormatVersion, FormatVersion)
			}
			h.Meta = hd.Meta
			sawHeader = true
		case "op":
			var o opLine
			if err := json.Unmarshal(b, &o); err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, line, err)
			}
			if o.ID != len(h.Ops) {
				return nil, fmt.Errorf("%w: line %d: op %d out of order, expected %d", ErrFormat, line, o.ID, len(h.Ops))
			}
			h.Ops = append(h.Ops, Op{ID: o.ID, Key: o.Key, User: o.User})
		case "attempt":
			var l attemptLine
			if err := json.Unmarshal(b, &l); err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, line, err)
			}
			if l.Op < 0 || l.Op >= len(h.Ops) {
				return nil, fmt.Errorf("%w: line %d: attempt for unknown op %d", ErrFormat, line, l.Op)
			}
			a := Attempt{
				Op: l.Op, N: l.N, Fault: l.Fault, Outcome: l.Outcome, Status: l.Status,
				Intended: time.Duration(l.IntendedNS), Start: time.Duration(l.StartNS), End: time.Duration(l.EndNS),
				Fingerprint: l.Fingerprint, Fields: l.Fields, Err: l.Err,
			}
			h.Attempts = append(h.Attempts, a)
		default:
			return nil, fmt.Errorf("%w: line %d: unknown line type %q", ErrFormat, line, probe.Type)
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
