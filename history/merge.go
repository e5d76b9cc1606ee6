package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// ErrMixedRuns is wrapped by MergeShardFiles' error when the histories
// are not the shards of one run.
var ErrMixedRuns = errors.New("histories of different runs")

// ShardEnds reads the header and the trailer of a shard's history file,
// not what lies between (MergeShardFiles reads and checks it all): whose
// shard it is, and that it was written whole (else ErrTruncated).
func ShardEnds(path string) (Meta, Trailer, error) {
	f, err := os.Open(path)
	if err != nil {
		return Meta{}, Trailer{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var first []byte
	for sc.Scan() {
		if first = bytes.TrimSpace(sc.Bytes()); len(first) > 0 {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return Meta{}, Trailer{}, fmt.Errorf("reading history: line 1: %w", err)
	}
	// The header alone, read as Decode reads it: the rest of what that
	// says (no trailer after it) is not about this file.
	d := newLineReader(bytes.NewReader(first), -1)
	if _, _, err := d.next(); !d.sawHeader {
		return Meta{}, Trailer{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		return Meta{}, Trailer{}, err
	}
	const tail = 4 << 10
	off := max(fi.Size()-tail, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return Meta{}, Trailer{}, err
	}
	b = bytes.TrimRight(b, " \t\r\n")
	last := b[bytes.LastIndexByte(b, '\n')+1:]
	var l trailerLine
	if json.Unmarshal(last, &l) != nil || l.Type != "end" {
		return Meta{}, Trailer{}, fmt.Errorf("%w: %w: it ends without its trailer record (\"end\"): the run that wrote it did not finish writing", ErrFormat, ErrTruncated)
	}
	return d.meta, l.Trailer, nil
}

// MergeShardFiles merges the histories of the shards of one run, in
// files, into the history of the whole run, as one process would have
// recorded it, reading them one record at a time: the merged ops and
// attempts are written to a file in dir ("": the system's temporary
// directory) and the history returned holds them there (History.Spill;
// the caller removes it). Every record is checked as Decode checks it.
//
// Shard i of n made the run's ops i, i+n, i+2n, … and numbered them 0, 1,
// 2, …; the merged history gives each op its number in the run back, so
// keys, faults and evidence name the same op as a run in one process
// with the same seed. When the shards made different numbers of ops (a
// load bound by its duration, an interruption), the ops are renumbered
// densely in that order. Times are moved to the earliest shard's start
// (Meta.Started), so that every offset is from one origin.
//
// Every history must carry the same run id and shard count, each shard
// once. Missing shards are no error here: the result's Meta.Shard then
// says which shards it holds ("0,1,3 of 4"), and the caller decides.
// The merged history has no readings: the oracles read the state of the
// whole run once, after every shard.
func MergeShardFiles(files []string, dir string) (*History, error) {
	if len(files) == 0 {
		return nil, errors.New("no history to merge")
	}
	type part struct {
		path string
		meta Meta
		t    Trailer
	}
	parts := make([]part, len(files))
	for k, path := range files {
		m, t, err := ShardEnds(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := oneShard(m.Shard); err != nil {
			return nil, fmt.Errorf("%s: history of run %s: %w", path, m.RunID, err)
		}
		parts[k] = part{path, m, t}
		if m.RunID != parts[0].meta.RunID {
			return nil, fmt.Errorf("%w: run %s and run %s", ErrMixedRuns, parts[0].meta.RunID, m.RunID)
		}
		if m.Shard.Count != parts[0].meta.Shard.Count {
			return nil, fmt.Errorf("%w: shard %s and shard %s of run %s", ErrMixedRuns, parts[0].meta.Shard, m.Shard, m.RunID)
		}
	}
	sort.Slice(parts, func(a, b int) bool { return parts[a].meta.Shard.Index < parts[b].meta.Shard.Index })
	for k := 1; k < len(parts); k++ {
		if parts[k].meta.Shard.Index == parts[k-1].meta.Shard.Index {
			return nil, fmt.Errorf("shard %s of run %s given twice", parts[k].meta.Shard, parts[k].meta.RunID)
		}
	}
	n := parts[0].meta.Shard.Count
	// The header and the time origin come from the shards that sent
	// something: one that stopped before its start has neither a target
	// nor a meaningful start time.
	first := parts[0].meta
	for _, p := range parts {
		if p.t.Attempts > 0 {
			first = p.meta
			break
		}
	}
	meta := first
	meta.Shard = Shard{}
	meta.Aborted, meta.AbortedAt = "", 0 // named with its shard below
	for _, p := range parts {
		if p.t.Attempts > 0 && p.meta.Started.Before(meta.Started) {
			meta.Started = p.meta.Started
		}
		if p.meta.Ended.After(meta.Ended) {
			meta.Ended = p.meta.Ended
		}
		if p.meta.Interrupted {
			meta.Interrupt(p.meta.InterruptedIn)
		}
		if p.meta.Aborted != "" && meta.Aborted == "" {
			meta.Aborted, meta.AbortedAt = fmt.Sprintf("shard %d: %s", p.meta.Shard.Index, p.meta.Aborted), p.meta.AbortedAt
		}
	}
	if len(parts) < n {
		meta.Shard = Shard{Count: n, Delivered: make([]int, len(parts))}
		for k, p := range parts {
			meta.Shard.Delivered[k] = p.meta.Shard.Index
		}
	}
	// rank is the id in the run of shard part k's op local: how many ops
	// of the delivered shards come before it in the run's order (shard i
	// made the run's ops i, i+n, i+2n, …), the delivered ops numbered
	// densely in that order.
	rank := func(k, local int) int {
		r := 0
		for j, p := range parts {
			r += min(p.t.Ops, local)
			if j < k && p.t.Ops > local {
				r++
			}
		}
		return r
	}
	// The ids are the run's own (shard i's op local is local·n+i) unless
	// a shard is missing or the shards made unequal shares; then an op's
	// id is not the Seq its templates saw.
	for k, p := range parts {
		if p.t.Ops > 0 && rank(k, p.t.Ops-1) != (p.t.Ops-1)*n+p.meta.Shard.Index {
			meta.Renumbered = true
		}
	}
	out, err := createMerge(dir)
	if err != nil {
		return nil, err
	}
	for k, p := range parts {
		shift := p.meta.Started.Sub(meta.Started)
		if err := mergeShardFile(p.path, out.Records(), func(local int) int { return rank(k, local) }, shift); err != nil {
			out.Abandon()
			if errors.Is(err, ErrSpill) {
				return nil, err // the disk's fault, not the shard's
			}
			return nil, fmt.Errorf("%s: %w", p.path, err)
		}
	}
	sp, err := out.Finish()
	if err != nil {
		out.Abandon()
		return nil, err
	}
	return &History{Meta: meta, Spill: sp}, nil
}

// oneShard says why s is not one shard of a run, the only thing a shard's
// history can be.
func oneShard(s Shard) error {
	if s.IsZero() {
		return errors.New("not a shard's history (no shard in its header)")
	}
	return s.Check()
}

// mergeShardFile copies the ops and attempts of one shard's history to
// recs, ops renumbered by id and times moved by shift.
func mergeShardFile(path string, recs *Records, id func(local int) int, shift time.Duration) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	d := newLineReader(f, sizeOf(f))
	write := func(err error) error {
		if err != nil {
			return fmt.Errorf("%w: %w", ErrSpill, err)
		}
		return nil
	}
	for {
		kind, b, err := d.next()
		switch {
		case err != nil:
			return err
		case kind == 0:
			return nil
		case kind == recOp:
			op, err := d.op(b)
			if err != nil {
				return err
			}
			op.ID = id(op.ID)
			if err := write(recs.Op(op, nil)); err != nil {
				return err
			}
			continue
		}
		a, err := d.attempt(b)
		if err != nil {
			return err
		}
		a.Op = id(a.Op)
		a.Intended += shift
		a.Start += shift
		a.End += shift
		if a.Sent != 0 {
			a.Sent += shift
		}
		for x := range a.Answers {
			a.Answers[x].End += shift
		}
		if err := write(recs.Attempt(&a)); err != nil {
			return err
		}
	}
}
