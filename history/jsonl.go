package history

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"

	"github.com/idemcheck/idemcheck/internal/hint"
)

// FormatVersion is the version of the JSON Lines format written by Encode.
// Decode reads this version and version 2 (the same records, with every
// op before the first attempt); version 1 histories (which kept the
// oracle readings in report.json) are refused with ErrOldFormat.
//
// A history is, one JSON object a line:
//
//	{"type":"header","format_version":3,"run_id":…,"scenario":…,"judge":{…},…}
//	{"type":"op","op":0,"key":…,"user":…}                 one per op, ids 0 to N-1 in any order
//	{"type":"attempt","op":0,"n":1,"outcome":"ok",…}      every attempt, after its op's line
//	{"type":"reading","oracle":…,"kind":"effects",…}       per oracle; a large effects map over several lines
//	{"type":"end","ops":N,"attempts":M,"readings":R}       the trailer: the history is whole
//
// A long run writes each op with its attempts as it ends (the history
// spills to disk), so ops come in the order they ended.
const FormatVersion = 3

// oldestFormat is the oldest format Decode reads.
const oldestFormat = 2

// ErrFormat is wrapped by every error Decode returns for malformed input.
var ErrFormat = errors.New("malformed history")

// ErrTruncated is wrapped by Decode's error when the history has no
// trailer record: it was cut short (a crash, a full disk, a copy that
// did not finish) and would be judged on part of the run.
var ErrTruncated error = hint.New("judging part of a run could accuse a correct API or pass a broken one: run it again", errors.New("history is incomplete"))

// ErrOldFormat is wrapped by Decode's error for a history written in an
// older format than this idemcheck reads.
var ErrOldFormat error = hint.New("run the scenario again with this idemcheck to judge it; its report.json gives the seed and key nonce to resend the same requests: idemcheck run NAME --seed S --key-nonce N --out DIR",
	errors.New("history written by an older idemcheck"))

type header struct {
	Type          string `json:"type"`
	FormatVersion int    `json:"format_version"`
	Meta
}

type opLine struct {
	Type  string `json:"type"`
	ID    int    `json:"op"`
	Key   string `json:"key"`
	User  string `json:"user,omitempty"`
	Check string `json:"check,omitempty"`
	// Object: operation.object rendered for the op.
	Object string `json:"object,omitempty"`
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
// Readings counts oracles, however many lines each took.
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
// run's metadata and what it is judged against, each op followed by its
// attempts, the readings, then the trailer.
func Encode(w io.Writer, h *History) error {
	e := NewEncoder(w, h.Meta)
	if h.Spill != nil {
		if err := e.copySpill(h.Spill); err != nil {
			return err
		}
	}
	if h.Sorted() {
		for i := range h.Ops {
			if err := e.Op(h.Ops[i], h.AttemptsOf(i)); err != nil {
				return err
			}
		}
	} else {
		for i := range h.Ops {
			if err := e.Op(h.Ops[i], nil); err != nil {
				return err
			}
		}
		for i := range h.Attempts {
			if err := e.attempt(&h.Attempts[i]); err != nil {
				return err
			}
		}
	}
	return e.Close(h.Readings)
}

// Encoder writes a history as its ops end, so that a run need not hold
// it: the header first, then each op with its attempts, then (Close) the
// readings and the trailer.
type Encoder struct {
	bw  *bufio.Writer
	enc *json.Encoder
	t   Trailer
	err error
}

// NewEncoder writes the header of the history of the run m describes.
func NewEncoder(w io.Writer, m Meta) *Encoder {
	bw := bufio.NewWriterSize(w, 64<<10)
	e := &Encoder{bw: bw, enc: json.NewEncoder(bw)}
	e.err = e.enc.Encode(header{Type: "header", FormatVersion: FormatVersion, Meta: m})
	return e
}

// Op writes op and its attempts.
func (e *Encoder) Op(op Op, atts []Attempt) error {
	if e.err != nil {
		return e.err
	}
	if e.err = e.enc.Encode(opLine{Type: "op", ID: op.ID, Key: op.Key, User: op.User, Check: op.Check, Object: op.Object}); e.err != nil {
		return e.err
	}
	e.t.Ops++
	for i := range atts {
		if err := e.attempt(&atts[i]); err != nil {
			return err
		}
	}
	return nil
}

func (e *Encoder) attempt(a *Attempt) error {
	if e.err == nil {
		e.err = e.enc.Encode(attemptLine{Type: "attempt", Attempt: *a})
		e.t.Attempts++
	}
	return e.err
}

// copySpill writes the records of s.
func (e *Encoder) copySpill(s *Spill) error {
	if e.err != nil {
		return e.err
	}
	if _, err := io.Copy(e.bw, s.reader()); err != nil {
		e.err = fmt.Errorf("copying the spilled history: %w", err)
		return e.err
	}
	e.t.Ops += s.Ops
	e.t.Attempts += s.Attempts
	return nil
}

// Records writes op and attempt records of format 3 (an Encoder's,
// without header, readings or trailer) to w: what a run spills.
type Records struct {
	e *Encoder
}

// NewRecords returns a Records writing to w.
func NewRecords(w io.Writer) *Records {
	bw := bufio.NewWriterSize(w, 64<<10)
	return &Records{e: &Encoder{bw: bw, enc: json.NewEncoder(bw)}}
}

// Op writes op and its attempts.
func (r *Records) Op(op Op, atts []Attempt) error { return r.e.Op(op, atts) }

// Attempt writes one attempt, of an op written before.
func (r *Records) Attempt(a *Attempt) error { return r.e.attempt(a) }

// Flush writes what is buffered and returns the counts written.
func (r *Records) Flush() (Trailer, error) {
	if r.e.err == nil {
		r.e.err = r.e.bw.Flush()
	}
	return r.e.t, r.e.err
}

// readingKeys is the most keys of an effects map one reading line holds:
// a reading of millions of keys spans many lines, each a few MB.
const readingKeys = 50_000

// Close writes the readings and the trailer, and flushes.
func (e *Encoder) Close(readings []Reading) error {
	for i := range readings {
		for _, l := range readingLines(readings[i]) {
			if e.err != nil {
				return e.err
			}
			e.err = e.enc.Encode(readingLine{Type: "reading", Reading: l})
		}
	}
	e.t.Readings = len(readings)
	if e.err == nil {
		e.err = e.enc.Encode(trailerLine{Type: "end", Trailer: e.t})
	}
	if e.err == nil {
		e.err = e.bw.Flush()
	}
	return e.err
}

// readingLines splits a reading whose effects maps or account log hold
// more than readingKeys entries into lines of that many: the first with
// every other field, each next one (a continuation) with the oracle, the
// kind and more of the maps and the log, nothing else.
func readingLines(r Reading) []Reading {
	applied := 0
	if r.Account != nil {
		applied = len(r.Account.Applied)
	}
	if len(r.Effects)+len(r.EffectsBefore)+len(r.States) <= readingKeys && applied <= readingKeys {
		return []Reading{r}
	}
	chunks := func(m map[string]int) []map[string]int {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []map[string]int
		for len(keys) > 0 {
			n := min(len(keys), readingKeys)
			c := make(map[string]int, n)
			for _, k := range keys[:n] {
				c[k] = m[k]
			}
			out = append(out, c)
			keys = keys[n:]
		}
		return out
	}
	fx, before, states := chunks(r.Effects), chunks(r.EffectsBefore), chunks(r.States)
	var log [][]Applied
	if r.Account != nil {
		for a := r.Account.Applied; len(a) > 0; {
			n := min(len(a), readingKeys)
			log = append(log, a[:n])
			a = a[n:]
		}
	}
	var out []Reading
	for i := 0; i < max(len(fx), len(before), len(states), len(log), 1); i++ {
		l := Reading{Oracle: r.Oracle, Kind: r.Kind}
		if i == 0 {
			l = r
			l.Effects, l.EffectsBefore, l.States = nil, nil, nil
			if r.Account != nil {
				acc := *r.Account
				acc.Applied = nil
				l.Account = &acc
			}
		}
		if i < len(fx) {
			l.Effects = fx[i]
		}
		if i < len(before) {
			l.EffectsBefore = before[i]
		}
		if i < len(states) {
			l.States = states[i]
		}
		if i < len(log) {
			if l.Account == nil {
				l.Account = &Account{}
			}
			l.Account.Applied = log[i]
		}
		out = append(out, l)
	}
	return out
}

// attemptPrefix starts every attempt line Encode writes: such lines are
// decoded straight into an Attempt, without a first pass for the type.
var attemptPrefix = []byte(`{"type":"attempt",`)

// maxIDGap bounds how far ahead of the ops before it an op's id may be,
// when the history's size is not known: a hostile id (10^12) must not make
// a reader allocate for every id below. A run's ops end out of order by no
// more than the ops it holds in memory (runner.MaxSpillAfter). When the
// size is known, an id below size/minOpLine is allowed too: no history of
// that size holds more ops (a merged sharded run writes each shard's ops
// in turn, far from their places).
const minOpLine = 20 // {"type":"op","op":0} and its newline

var maxIDGap = 1 << 24 // a variable for tests

// record kinds lineReader.next returns.
const (
	recOp = iota + 1
	recAttempt
)

// lineReader reads the records of a history line by line: it checks and
// keeps the header, readings and trailer itself, and hands op and attempt
// lines to its caller.
type lineReader struct {
	sc        *bufio.Scanner
	line      int
	sawHeader bool
	meta      Meta
	readings  []Reading
	oracles   map[string]bool // the oracles of readings
	trailer   *Trailer
	// ops and attempts count the records handed out; seen holds the ids of
	// the ops seen (a bit each), maxID the largest.
	ops, attempts int
	seen          []uint64
	maxID         int
	// idLimit is the size of the input over minOpLine: no id can reach it.
	idLimit int
}

// newLineReader reads r, size bytes long (-1 when not known).
func newLineReader(r io.Reader, size int64) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	d := &lineReader{sc: sc, maxID: -1}
	if size > 0 {
		d.idLimit = int(min(size/minOpLine, math.MaxInt32))
	}
	return d
}

// sizeOf is r's length when r knows it (a file, a bytes or strings
// reader), else -1.
func sizeOf(r io.Reader) int64 {
	switch x := r.(type) {
	case interface{ Stat() (os.FileInfo, error) }:
		if fi, err := x.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	case interface{ Size() int64 }:
		return x.Size()
	}
	return -1
}

func (d *lineReader) bad(format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrFormat, d.line, fmt.Sprintf(format, args...))
}

// next returns the next op or attempt line, or 0 at the end of a whole
// history; the line is valid until the next call.
func (d *lineReader) next() (int, []byte, error) {
	for d.sc.Scan() {
		d.line++
		b := d.sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if d.trailer != nil {
			return 0, nil, d.bad("a record after the trailer (\"end\")")
		}
		if d.sawHeader && bytes.HasPrefix(b, attemptPrefix) {
			d.attempts++
			return recAttempt, b, nil
		}
		var kind struct {
			Type          string `json:"type"`
			FormatVersion int    `json:"format_version"`
		}
		if err := json.Unmarshal(b, &kind); err != nil {
			return 0, nil, d.bad("%v", err)
		}
		if !d.sawHeader && kind.Type != "header" {
			return 0, nil, d.bad("first line must be the header, got type %q", kind.Type)
		}
		switch kind.Type {
		case "header":
			if d.sawHeader {
				return 0, nil, d.bad("a second header")
			}
			if kind.FormatVersion < oldestFormat {
				return 0, nil, fmt.Errorf("%w: %w: line %d: format_version %d; this idemcheck reads %d and %d, which also keep the oracles' readings and what the run is judged against",
					ErrFormat, ErrOldFormat, d.line, kind.FormatVersion, oldestFormat, FormatVersion)
			}
			if kind.FormatVersion > FormatVersion {
				return 0, nil, d.bad("format_version %d, this idemcheck reads %d and %d: upgrade idemcheck", kind.FormatVersion, oldestFormat, FormatVersion)
			}
			var l header
			if err := json.Unmarshal(b, &l); err != nil {
				return 0, nil, d.bad("%v", err)
			}
			d.meta = l.Meta
			d.sawHeader = true
		case "op":
			d.ops++
			return recOp, b, nil
		case "attempt":
			d.attempts++
			return recAttempt, b, nil
		case "reading":
			var l readingLine
			if err := json.Unmarshal(b, &l); err != nil {
				return 0, nil, d.bad("%v", err)
			}
			if err := d.addReading(l.Reading); err != nil {
				return 0, nil, err
			}
		case "end":
			var l trailerLine
			if err := json.Unmarshal(b, &l); err != nil {
				return 0, nil, d.bad("%v", err)
			}
			got := Trailer{Ops: d.ops, Attempts: d.attempts, Readings: len(d.readings)}
			if l.Trailer != got {
				return 0, nil, d.bad("the trailer counts %d ops, %d attempts, %d readings, but the history holds %d, %d, %d",
					l.Ops, l.Attempts, l.Readings, got.Ops, got.Attempts, got.Readings)
			}
			if d.maxID != d.ops-1 {
				return 0, nil, d.bad("the op ids run to %d but there are %d ops: ids must be 0 to %d", d.maxID, d.ops, d.ops-1)
			}
			d.trailer = &l.Trailer
		default:
			return 0, nil, d.bad("unknown record type %q", kind.Type)
		}
	}
	if err := d.sc.Err(); err != nil {
		return 0, nil, fmt.Errorf("reading history: line %d: %w", d.line+1, err)
	}
	if !d.sawHeader {
		return 0, nil, fmt.Errorf("%w: empty input, no header line", ErrFormat)
	}
	if d.trailer == nil {
		return 0, nil, fmt.Errorf("%w: %w: it ends at line %d without its trailer record (\"end\"): the run that wrote it did not finish writing",
			ErrFormat, ErrTruncated, d.line)
	}
	return 0, nil, nil
}

// addReading keeps a reading. A line right after one of the same oracle
// is its continuation (readingLines), holding more of its effects maps and
// account log and nothing else; an oracle read twice otherwise is an
// error.
func (d *lineReader) addReading(r Reading) error {
	if n := len(d.readings); n > 0 && d.readings[n-1].Oracle == r.Oracle {
		if !continuation(&r) || r.Kind != d.readings[n-1].Kind {
			return d.bad("a second reading of oracle %q", r.Oracle)
		}
		p := &d.readings[n-1]
		p.Effects = mergeCounts(p.Effects, r.Effects)
		p.EffectsBefore = mergeCounts(p.EffectsBefore, r.EffectsBefore)
		p.States = mergeCounts(p.States, r.States)
		if r.Account != nil {
			if p.Account == nil {
				return d.bad("oracle %q: an account log after a reading without an account", r.Oracle)
			}
			p.Account.Applied = append(p.Account.Applied, r.Account.Applied...)
		}
		return nil
	}
	if d.oracles == nil {
		d.oracles = map[string]bool{}
	}
	if d.oracles[r.Oracle] {
		return d.bad("a second reading of oracle %q", r.Oracle)
	}
	d.oracles[r.Oracle] = true
	d.readings = append(d.readings, r)
	return nil
}

// continuation reports whether r holds nothing but more of a reading's
// effects maps and account log.
func continuation(r *Reading) bool {
	acc := r.Account == nil || (r.Account.BalanceBefore == 0 && r.Account.BalanceAfter == 0 &&
		r.Account.VersionBefore == 0 && r.Account.VersionAfter == 0)
	return acc && r.Strangers == 0 && len(r.StrangerKeys) == 0 && r.Before == nil && r.After == nil && r.Err == ""
}

func mergeCounts(into, m map[string]int) map[string]int {
	if len(m) == 0 {
		return into
	}
	if into == nil {
		into = make(map[string]int, len(m))
	}
	for k, v := range m {
		into[k] += v
	}
	return into
}

// op decodes an op line and checks its id is new.
func (d *lineReader) op(b []byte) (Op, error) {
	var l opLine
	if err := json.Unmarshal(b, &l); err != nil {
		return Op{}, d.bad("%v", err)
	}
	if l.ID < 0 {
		return Op{}, d.bad("op id %d: ids are 0 or more", l.ID)
	}
	if l.ID >= d.ops+maxIDGap && l.ID >= d.idLimit {
		return Op{}, d.bad("op id %d after only %d ops: an op comes at most %d places after its id (ops are written as they end)", l.ID, d.ops-1, maxIDGap)
	}
	if d.has(l.ID) {
		return Op{}, d.bad("op %d given twice", l.ID)
	}
	w := l.ID / 64
	if w >= len(d.seen) {
		d.seen = append(d.seen, make([]uint64, w+1-len(d.seen))...)
	}
	d.seen[w] |= 1 << (l.ID % 64)
	d.maxID = max(d.maxID, l.ID)
	return Op{ID: l.ID, Key: l.Key, User: l.User, Check: l.Check, Object: l.Object}, nil
}

// has reports whether op id was seen.
func (d *lineReader) has(id int) bool {
	return id >= 0 && id/64 < len(d.seen) && d.seen[id/64]&(1<<(id%64)) != 0
}

// attempt decodes an attempt line and checks it is one a run records,
// for an op already seen.
func (d *lineReader) attempt(b []byte) (Attempt, error) {
	var l attemptLine
	if err := json.Unmarshal(b, &l); err != nil {
		return Attempt{}, d.bad("%v", err)
	}
	if !d.has(l.Op) {
		return Attempt{}, d.bad("attempt for unknown op %d (an op's line comes before its attempts)", l.Op)
	}
	if err := checkAttempt(&l.Attempt); err != nil {
		return Attempt{}, d.bad("%v", err)
	}
	return l.Attempt, nil
}

// Decode reads a history written by Encode. Errors name the line and wrap
// ErrFormat; a history without its trailer also wraps ErrTruncated, one
// of an older format ErrOldFormat.
func Decode(r io.Reader) (*History, error) {
	d := newLineReader(r, sizeOf(r))
	h := &History{}
	for {
		kind, b, err := d.next()
		if err != nil {
			return nil, err
		}
		if kind == 0 {
			break
		}
		if kind == recOp {
			op, err := d.op(b)
			if err != nil {
				return nil, err
			}
			h.Ops = append(h.Ops, op)
			continue
		}
		a, err := d.attempt(b)
		if err != nil {
			return nil, err
		}
		h.Attempts = append(h.Attempts, a)
	}
	h.Meta, h.Readings = d.meta, d.readings
	if !slices.IsSortedFunc(h.Ops, func(a, b Op) int { return cmp.Compare(a.ID, b.ID) }) {
		slices.SortFunc(h.Ops, func(a, b Op) int { return cmp.Compare(a.ID, b.ID) })
	}
	h.Sort()
	return h, nil
}

// checkAttempt rejects an attempt that no run records: one without an
// outcome, or numbered below 1.
func checkAttempt(a *Attempt) error {
	switch {
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
