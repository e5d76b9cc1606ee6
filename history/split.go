package history

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"
)

// DefaultPartBytes is how much of a saved history Split puts in one part:
// judging holds one part at a time, a few times its size on disk.
const DefaultPartBytes = 64 << 20

// maxParts is the most parts Split makes.
const maxParts = 256

// Parts is a saved history split by key (PartOf) into parts, on disk
// when it is larger than one part, so that it is judged one part at a
// time (checks.Judger, measure.Acc) in memory that does not grow with the
// run.
type Parts struct {
	Meta     Meta
	Readings []Reading
	Trailer  Trailer
	// Span is when the last attempt ended (or was meant to start), from
	// the run's start.
	Span time.Duration

	whole *History // a history small enough to hold whole
	files []*tempFile
}

// Len is how many parts there are.
func (p *Parts) Len() int {
	if p.whole != nil {
		return 1
	}
	return len(p.files)
}

// Split reads a history from r, size bytes long (-1: the size r knows,
// as a file or a bytes or strings reader does, else unknown), and splits
// it into parts of about partBytes each, files in tmp ("": the system's
// temporary directory). A history of at most partBytes is held whole.
// Split reads r once, checks every record a part does not (the header,
// the op ids, the trailer), and fails as Decode does: errors name the line
// and wrap ErrFormat, ErrTruncated or ErrOldFormat. Close removes the
// parts.
//
// Split stops, with ctx's error, when ctx ends. The parts' files are named
// by no path (where the system allows), so nothing is left behind however
// the process ends.
func Split(ctx context.Context, r io.Reader, size int64, tmp string, partBytes int64) (*Parts, error) {
	if partBytes <= 0 {
		partBytes = DefaultPartBytes
	}
	if size < 0 {
		size = sizeOf(r)
	}
	if size >= 0 && size <= partBytes {
		h, err := Decode(r)
		if err != nil {
			return nil, err
		}
		return wholeParts(h), nil
	}
	n := maxParts
	if size > 0 {
		// at most maxParts files open at once, well below a process's
		// usual limit of 1024; past 16 GB (of 64 MB parts) parts grow
		n = int(min((size+partBytes-1)/partBytes, maxParts))
	}
	p := &Parts{}
	if err := p.split(ctx, r, n, size, tmp); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// PartsOf is h in parts: h whole, or when its ops and attempts are
// spilled to disk (h.Spill), split by key into parts of partBytes in tmp.
func PartsOf(ctx context.Context, h *History, tmp string, partBytes int64) (*Parts, error) {
	if h.Spill == nil {
		if !h.Sorted() {
			h.Sort()
		}
		return wholeParts(h), nil
	}
	size := h.Spill.size
	if partBytes <= 0 {
		partBytes = DefaultPartBytes
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(Encode(pw, h))
	}()
	// Split holds a history of at most partBytes whole: give it the size
	// only past that. The spill holds every op line, so its size bounds
	// the ids as the whole stream's would.
	p, err := Split(ctx, pr, max(size, partBytes+1), tmp, partBytes)
	pr.Close()
	<-done // the encoder reads the spill: done before anyone removes it
	return p, err
}

// EachOp calls fn with every op of h, in id order when h holds them, in
// the order they ended when they are spilled (h.Spill).
func EachOp(h *History, fn func(Op) error) error {
	if h.Spill == nil {
		for _, op := range h.Ops {
			if err := fn(op); err != nil {
				return err
			}
		}
		return nil
	}
	sc := bufio.NewScanner(h.Spill.reader())
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		b := sc.Bytes()
		if bytes.HasPrefix(b, attemptPrefix) {
			continue
		}
		var l opLine
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("reading the spilled history: %w", err)
		}
		if l.Type != "op" {
			continue
		}
		if err := fn(Op{ID: l.ID, Key: l.Key, User: l.User, Check: l.Check, Object: l.Object}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the spilled history: %w", err)
	}
	return nil
}

// wholeParts is sorted h as its one part.
func wholeParts(h *History) *Parts {
	return &Parts{Meta: h.Meta, Readings: h.Readings, Span: Span(h.Attempts),
		Trailer: Trailer{Ops: len(h.Ops), Attempts: len(h.Attempts), Readings: len(h.Readings)}, whole: h}
}

// SplitFile splits the history in the file at path (Split).
func SplitFile(ctx context.Context, path, tmp string, partBytes int64) (*Parts, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Split(ctx, f, -1, tmp, partBytes)
}

func (p *Parts) split(ctx context.Context, r io.Reader, n int, size int64, tmp string) error {
	ws := make([]*bufio.Writer, n)
	for i := range ws {
		f, err := createTemp(tmp, "idemcheck-part-*.jsonl")
		if err != nil {
			return fmt.Errorf("splitting the history: %w", err)
		}
		p.files = append(p.files, f)
		ws[i] = bufio.NewWriterSize(f, 32<<10)
	}
	// partOf[id] is the part of op id; a saved history may give every op
	// before the first attempt (format 2), so this cannot be only the
	// last op's.
	var partOf []uint8
	d := newLineReader(r, size)
	var num []byte
	for {
		kind, b, err := d.next()
		if err != nil {
			return err
		}
		if kind == 0 {
			break
		}
		if d.line%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		var to int
		if kind == recOp {
			op, err := d.op(b)
			if err != nil {
				return err
			}
			to = PartOf(op.Key, n)
			if op.ID >= len(partOf) {
				partOf = append(partOf, make([]uint8, op.ID+1-len(partOf))...)
			}
			partOf[op.ID] = uint8(to)
		} else {
			// read as Decode reads them (a null or absent op is 0)
			var t struct {
				Op       int           `json:"op"`
				Intended time.Duration `json:"intended_ns"`
				End      time.Duration `json:"end_ns"`
			}
			if err := json.Unmarshal(b, &t); err != nil {
				return d.bad("%v", err)
			}
			if !d.has(t.Op) {
				return d.bad("attempt for unknown op %d (an op's line comes before its attempts)", t.Op)
			}
			p.Span = max(p.Span, t.Intended, t.End)
			to = int(partOf[t.Op])
		}
		// Each line goes with its kind and number, for load and its errors.
		num = append(num[:0], "ao"[kind&1])
		num = strconv.AppendInt(num, int64(d.line), 10)
		w := ws[to]
		w.Write(num)
		w.WriteByte('\t')
		w.Write(b)
		if err := w.WriteByte('\n'); err != nil {
			return fmt.Errorf("splitting the history: %w", err)
		}
	}
	for _, w := range ws {
		if err := w.Flush(); err != nil {
			return fmt.Errorf("splitting the history: %w", err)
		}
	}
	p.Meta, p.Readings = d.meta, d.readings
	p.Trailer = Trailer{Ops: d.ops, Attempts: d.attempts, Readings: len(d.readings)}
	return nil
}

// Each calls fn with every part in turn, as Partition makes them: every
// op of the part's keys in id order, at its index in the part with its
// id in Op.ID, and their attempts naming that index, sorted. Parts carry
// the run's Meta and no readings. A part is not used after fn returns.
func (p *Parts) Each(fn func(*History) error) error {
	if p.whole != nil {
		return fn(p.whole)
	}
	for _, f := range p.files {
		h, err := p.load(f)
		if err != nil {
			return err
		}
		if err := fn(h); err != nil {
			return err
		}
	}
	return nil
}

// load reads one part's file.
func (p *Parts) load(f *tempFile) (*History, error) {
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("reading a part of the history: %w", err)
	}
	sc := bufio.NewScanner(io.NewSectionReader(f.File, 0, size))
	sc.Buffer(make([]byte, 64<<10), 64<<20+32)
	h := &History{Meta: p.Meta}
	local := map[int]int{}
	for sc.Scan() {
		num, b, ok := bytes.Cut(sc.Bytes(), []byte{'\t'})
		if !ok || len(num) < 2 {
			return nil, fmt.Errorf("reading a part of the history: a line without its kind and number")
		}
		line, _ := strconv.Atoi(string(num[1:]))
		bad := func(err error) error { return fmt.Errorf("%w: line %d: %v", ErrFormat, line, err) }
		if num[0] == 'a' {
			var l attemptLine
			if err := json.Unmarshal(b, &l); err != nil {
				return nil, bad(err)
			}
			if err := checkAttempt(&l.Attempt); err != nil {
				return nil, bad(err)
			}
			h.Attempts = append(h.Attempts, l.Attempt)
			continue
		}
		var l opLine
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, bad(err)
		}
		local[l.ID] = len(h.Ops)
		h.Ops = append(h.Ops, Op{ID: l.ID, Key: l.Key, User: l.User, Check: l.Check, Object: l.Object})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading a part of the history: %w", err)
	}
	if !slices.IsSortedFunc(h.Ops, func(a, b Op) int { return cmp.Compare(a.ID, b.ID) }) {
		slices.SortFunc(h.Ops, func(a, b Op) int { return cmp.Compare(a.ID, b.ID) })
		for i, op := range h.Ops {
			local[op.ID] = i
		}
	}
	for i := range h.Attempts {
		h.Attempts[i].Op = local[h.Attempts[i].Op]
	}
	h.Sort()
	return h, nil
}

// Close removes the parts' files.
func (p *Parts) Close() error {
	var errs []error
	for _, f := range p.files {
		errs = append(errs, f.remove())
	}
	p.files = nil
	return errors.Join(errs...)
}

// Span is when the last of atts ended (or was meant to start), from the
// run's start.
func Span(atts []Attempt) time.Duration {
	var s time.Duration
	for i := range atts {
		s = max(s, atts[i].End, atts[i].Intended)
	}
	return s
}
