package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// FormatVersion is the version of the JSON Lines format written by Encode.
// Decode reads this version only; version 1 histories (which kept the
// oracle readings in report.json) are refused with ErrOldFormat.
//
// A history is, one JSON object a line:
//
//	{"type":"header","format_version":2,"run_id":…,"scenario":…,"judge":{…},…}
//	{"type":"op","op":0,"key":…,"user":…}                 one per op, in id order
//	{"type":"attempt","op":0,"n":1,"outcome":"ok",…}      every attempt
//	{"type":"reading","oracle":…,"kind":"effects",…}       one per oracle
//	{"type":"end","ops":N,"attempts":M,"readings":R}       the trailer: the history is whole
const FormatVersion = 2

// ErrFormat is wrapped by every error Decode returns for malformed input.
var ErrFormat = errors.New("malformed history")

// ErrTruncated is wrapped by Decode's error when the history has no
// trailer record: it was cut short (a crash, a full disk, a copy that
// did not finish) and would be judged on part of the run.
var ErrTruncated = errors.New("history is incomplete")

// ErrOldFormat is wrapped by Decode's error for a history written in an
// older format than this idemcheck reads.
var ErrOldFormat = errors.New("history written by an older idemcheck")

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

type readingLine struct {
	Type string `json:"type"`
	Reading
}

// Trailer is the last record of a whole history: what it holds, counted.
type Trailer struct {
	Ops      int `json:"ops"`
	Attempts int `json:"attempts"`
	Readings int `json:"readings"`
}

type trailerLine struct {
	Type string `json:"type"`
	Trailer
}

// Encode writes h as JSON Lines: a header with the format version, the
// run's metadata and what it is judged against, one line per op, one per
// attempt, one per reading, then the trailer.
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
	for i := range h.Readings {
		if err := enc.Encode(readingLine{Type: "reading", Reading: h.Readings[i]}); err != nil {
			return err
		}
	}
	t := Trailer{Ops: len(h.Ops), Attempts: len(h.Attempts), Readings: len(h.Readings)}
	if err := enc.Encode(trailerLine{Type: "end", Trailer: t}); err != nil {
		return err
	}
	return bw.Flush()
}

// attemptPrefix starts every attempt line Encode writes: such lines are
// decoded straight into an Attempt, without a first pass for the type.
var attemptPrefix = []byte(`{"type":"attempt",`)

// Decode reads a history written by Encode. Errors name the line and wrap
// ErrFormat; a history without its trailer also wraps ErrTruncated, one
// of an older format ErrOldFormat.
func Decode(r io.Reader) (*History, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	h := &History{}
	line := 0
	sawHeader := false
	var trailer *Trailer
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrFormat, line, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if trailer != nil {
			return nil, bad("a record after the trailer (\"end\")")
		}
		if sawHeader && bytes.HasPrefix(b, attemptPrefix) {
			var l attemptLine
			if err := json.Unmarshal(b, &l); err != nil {
				return nil, bad("%v", err)
			}
			if err := checkAttempt(&l.Attempt, len(h.Ops)); err != nil {
				return nil, bad("%v", err)
			}
			h.Attempts = append(h.Attempts, l.Attempt)
			continue
		}
		var kind struct {
			Type          string `json:"type"`
			FormatVersion int    `json:"format_version"`
		}
		if err := json.Unmarshal(b, &kind); err != nil {
			return nil, bad("%v", err)
		}
		if !sawHeader && kind.Type != "header" {
			return nil, bad("first line must be the header, got type %q", kind.Type)
		}
		switch kind.Type {
		case "header":
			if sawHeader {
				return nil, bad("a second header")
			}
			if kind.FormatVersion < FormatVersion {
				return nil, fmt.Errorf("%w: %w: line %d: format_version %d; this idemcheck reads %d, which also keeps the oracles' readings and what the run is judged against",
					ErrFormat, ErrOldFormat, line, kind.FormatVersion, FormatVersion)
			}
			if kind.FormatVersion != FormatVersion {
				return nil, bad("format_version %d, this idemcheck reads %d: upgrade idemcheck", kind.FormatVersion, FormatVersion)
			}
			var l header
			if err := json.Unmarshal(b, &l); err != nil {
				return nil, bad("%v", err)
			}
			h.Meta = l.Meta
			sawHeader = true
		case "op":
			var l opLine
			if err := json.Unmarshal(b, &l); err != nil {
				return nil, bad("%v", err)
			}
			if l.ID != len(h.Ops) {
				return nil, bad("op %d out of order, expected %d", l.ID, len(h.Ops))
			}
			h.Ops = append(h.Ops, Op{ID: l.ID, Key: l.Key, User: l.User})
		case "attempt":
			var l attemptLine
			if err := json.Unmarshal(b, &l); err != nil {
				return nil, bad("%v", err)
			}
			if err := checkAttempt(&l.Attempt, len(h.Ops)); err != nil {
				return nil, bad("%v", err)
			}
			h.Attempts = append(h.Attempts, l.Attempt)
		case "reading":
			var l readingLine
			if err := json.Unmarshal(b, &l); err != nil {
				return nil, bad("%v", err)
			}
			h.Readings = append(h.Readings, l.Reading)
		case "end":
			var l trailerLine
			if err := json.Unmarshal(b, &l); err != nil {
				return nil, bad("%v", err)
			}
			got := Trailer{Ops: len(h.Ops), Attempts: len(h.Attempts), Readings: len(h.Readings)}
			if l.Trailer != got {
				return nil, bad("the trailer counts %d ops, %d attempts, %d readings, but the history holds %d, %d, %d",
					l.Ops, l.Attempts, l.Readings, got.Ops, got.Attempts, got.Readings)
			}
			trailer = &l.Trailer
		default:
			return nil, bad("unknown record type %q", kind.Type)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading history: line %d: %w", line+1, err)
	}
	if !sawHeader {
		return nil, fmt.Errorf("%w: empty input, no header line", ErrFormat)
	}
	if trailer == nil {
		return nil, fmt.Errorf("%w: %w: it ends at line %d without its trailer record (\"end\"): the run that wrote it did not finish writing",
			ErrFormat, ErrTruncated, line)
	}
	h.Sort()
	return h, nil
}

// checkAttempt rejects an attempt that no run records: one for an unknown
// op, without an outcome, or numbered below 1.
func checkAttempt(a *Attempt, ops int) error {
	switch {
	case a.Op < 0 || a.Op >= ops:
		return fmt.Errorf("attempt for unknown op %d", a.Op)
	case a.N < 1:
		return fmt.Errorf("attempt %d of op %d: attempts are numbered from 1", a.N, a.Op)
	case a.Outcome == 0:
		return fmt.Errorf("attempt %d of op %d has no outcome", a.N, a.Op)
	}
	for _, x := range a.Answers {
		if x.Outcome == 0 {
			return fmt.Errorf("attempt %d of op %d: an answer has no outcome", a.N, a.Op)
		}
	}
	return nil
}
