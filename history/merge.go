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
	"strconv"
	"strings"
	"time"
)

// ErrMixedRuns is wrapped by MergeShards' error when the histories are not
// the shards of one run.
var ErrMixedRuns = errors.New("histories of different runs")

// ParseShard parses a Meta.Shard, "i/n" with 0 <= i < n.
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("shard %q: want i/n with 0 <= i < n", s)
	}
	return i, n, nil
}

// MergeShards merges the histories of the shards of one run into the
// history of the whole run, as one process would have recorded it.
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
func MergeShards(hs []*History) (*History, error) {
	if len(hs) == 0 {
		return nil, errors.New("no history to merge")
	}
	type part struct {
		h    *History
		i, n int
	}
	parts := make([]part, len(hs))
	for k, h := range hs {
		i, n, err := ParseShard(h.Meta.Shard)
		if err != nil {
			return nil, fmt.Errorf("history of run %s: %w", h.Meta.RunID, err)
		}
		parts[k] = part{h, i, n}
		if h.Meta.RunID != hs[0].Meta.RunID {
			return nil, fmt.Errorf("%w: run %s and run %s", ErrMixedRuns, hs[0].Meta.RunID, h.Meta.RunID)
		}
		if n != parts[0].n {
			return nil, fmt.Errorf("%w: shard %s and shard %s of run %s", ErrMixedRuns, hs[0].Meta.Shard, h.Meta.Shard, h.Meta.RunID)
		}
	}
	sort.Slice(parts, func(a, b int) bool { return parts[a].i < parts[b].i })
	for k := 1; k < len(parts); k++ {
		if parts[k].i == parts[k-1].i {
			return nil, fmt.Errorf("shard %s of run %s given twice", parts[k].h.Meta.Shard, parts[k].h.Meta.RunID)
		}
	}
	n := parts[0].n
	// The header and the time origin come from the shards that sent
	// something: one that stopped before its start has neither a target
	// nor a meaningful start time.
	first := parts[0].h
	for _, p := range parts {
		if len(p.h.Attempts) > 0 {
			first = p.h
			break
		}
	}
	out := &History{Meta: first.Meta}
	out.Meta.Shard = ""
	nOps, nAtt := 0, 0
	for _, p := range parts {
		m := p.h.Meta
		if len(p.h.Attempts) > 0 && m.Started.Before(out.Meta.Started) {
			out.Meta.Started = m.Started
		}
		if m.Ended.After(out.Meta.Ended) {
			out.Meta.Ended = m.Ended
		}
		out.Meta.Interrupted = out.Meta.Interrupted || m.Interrupted
		nOps += len(p.h.Ops)
		nAtt += len(p.h.Attempts)
	}
	if len(parts) < n {
		idx := make([]string, len(parts))
		for k, p := range parts {
			idx[k] = strconv.Itoa(p.i)
		}
		out.Meta.Shard = fmt.Sprintf("%s of %d", strings.Join(idx, ","), n)
	}
	// The run's number of every op, then a dense renumbering in that
	// order (the identity when the shards made every op up to the last).
	type ref struct{ part, local, global int }
	refs := make([]ref, 0, nOps)
	for k, p := range parts {
		for _, o := range p.h.Ops {
			refs = append(refs, ref{k, o.ID, p.i + o.ID*n})
		}
	}
	sort.Slice(refs, func(a, b int) bool { return refs[a].global < refs[b].global })
	ids := make([]map[int]int, len(parts))
	for k := range ids {
		ids[k] = make(map[int]int, len(parts[k].h.Ops))
	}
	out.Ops = make([]Op, len(refs))
	for id, r := range refs {
		ids[r.part][r.local] = id
	}
	for k, p := range parts {
		for _, o := range p.h.Ops {
			id := ids[k][o.ID]
			o.ID = id
			out.Ops[id] = o
		}
	}
	out.Attempts = make([]Attempt, 0, nAtt)
	for k, p := range parts {
		shift := p.h.Meta.Started.Sub(out.Meta.Started)
		for _, a := range p.h.Attempts {
			id, ok := ids[k][a.Op]
			if !ok {
				return nil, fmt.Errorf("%w: shard %s: attempt for unknown op %d", ErrFormat, p.h.Meta.Shard, a.Op)
			}
			a.Op = id
			a.Intended += shift
			a.Start += shift
			a.End += shift
			if len(a.Answers) > 0 {
				a.Answers = append([]Answer(nil), a.Answers...)
				for x := range a.Answers {
					a.Answers[x].End += shift
				}
			}
			out.Attempts = append(out.Attempts, a)
		}
	}
	out.Sort()
	return out, nil
}

// Missing returns the shards MergeShards' result lacks (from its
// Meta.Shard), or nil when it is a whole run.
func Missing(h *History) []int { return MissingShards(h.Meta.Shard) }

// MissingShards returns the shards a merged history's Meta.Shard says it
// lacks ("0,1,3 of 4" lacks 2), or nil for a whole run.
func MissingShards(shard string) []int {
	have, total, ok := strings.Cut(shard, " of ")
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(total)
	if err != nil {
		return nil
	}
	seen := map[int]bool{}
	for s := range strings.SplitSeq(have, ",") {
		if i, err := strconv.Atoi(s); err == nil {
			seen[i] = true
		}
	}
	var out []int
	for i := range n {
		if !seen[i] {
			out = append(out, i)
		}
	}
	return out
}

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

// MergeShardFiles merges the shard histories in files as MergeShards
// does, reading them one record at a time: the merged ops and attempts
// are written to a file in dir ("": the system's temporary directory) and
// the history returned holds them there (History.Spill; the caller
// removes it). Every record is checked as Decode checks it.
func MergeShardFiles(files []string, dir string) (*History, error) {
	if len(files) == 0 {
		return nil, errors.New("no history to merge")
	}
	type part struct {
		path string
		meta Meta
		t    Trailer
		i, n int
	}
	parts := make([]part, len(files))
	for k, path := range files {
		m, t, err := ShardEnds(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		i, n, err := ParseShard(m.Shard)
		if err != nil {
			return nil, fmt.Errorf("%s: history of run %s: %w", path, m.RunID, err)
		}
		parts[k] = part{path, m, t, i, n}
		if m.RunID != parts[0].meta.RunID {
			return nil, fmt.Errorf("%w: run %s and run %s", ErrMixedRuns, parts[0].meta.RunID, m.RunID)
		}
		if n != parts[0].n {
			return nil, fmt.Errorf("%w: shard %s and shard %s of run %s", ErrMixedRuns, parts[0].meta.Shard, m.Shard, m.RunID)
		}
	}
	sort.Slice(parts, func(a, b int) bool { return parts[a].i < parts[b].i })
	for k := 1; k < len(parts); k++ {
		if parts[k].i == parts[k-1].i {
			return nil, fmt.Errorf("shard %s of run %s given twice", parts[k].meta.Shard, parts[k].meta.RunID)
		}
	}
	n := parts[0].n
	first := parts[0].meta
	for _, p := range parts {
		if p.t.Attempts > 0 {
			first = p.meta
			break
		}
	}
	meta := first
	meta.Shard = ""
	for _, p := range parts {
		if p.t.Attempts > 0 && p.meta.Started.Before(meta.Started) {
			meta.Started = p.meta.Started
		}
		if p.meta.Ended.After(meta.Ended) {
			meta.Ended = p.meta.Ended
		}
		meta.Interrupted = meta.Interrupted || p.meta.Interrupted
	}
	if len(parts) < n {
		idx := make([]string, len(parts))
		for k, p := range parts {
			idx[k] = strconv.Itoa(p.i)
		}
		meta.Shard = fmt.Sprintf("%s of %d", strings.Join(idx, ","), n)
	}
	// rank is the id in the run of shard part k's op local: how many ops
	// of the delivered shards come before it in the run's order (shard i
	// made the run's ops i, i+n, i+2n, …), as MergeShards numbers them.
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
	out, err := CreateSpill(dir)
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
		return nil, err
	}
	return &History{Meta: meta, Spill: sp}, nil
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
		for x := range a.Answers {
			a.Answers[x].End += shift
		}
		if err := write(recs.Attempt(&a)); err != nil {
			return err
		}
	}
}
