package runner

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
)

// Chunk sizes of the per-worker records: small at first so that hundreds of
// open-model workers cost little, then up to maxChunk items. Chunks are
// never copied while the run goes on, and the slack is at most one chunk
// per worker.
const (
	minChunk = 64
	maxChunk = 8192
)

// chunks is an append-only list stored in chunks of growing size.
type chunks[T any] struct {
	full [][]T
	cur  []T
	n    int
}

func (c *chunks[T]) add(v T) {
	if len(c.cur) == cap(c.cur) {
		size := min(max(2*cap(c.cur), minChunk), maxChunk)
		if c.cur != nil {
			c.full = append(c.full, c.cur)
		}
		c.cur = make([]T, 0, size)
	}
	c.cur = append(c.cur, v)
	c.n++
}

// drain calls f on every chunk in order and drops it, so its memory can be
// reclaimed while the merged copy grows.
func (c *chunks[T]) drain(f func([]T)) {
	for i, ch := range c.full {
		f(ch)
		c.full[i] = nil
	}
	if c.cur != nil {
		f(c.cur)
	}
	c.full, c.cur, c.n = nil, nil, 0
}

// recorder is what one worker recorded: its ops and their attempts, each
// op's attempts in order. Only its worker touches it until the merge.
type recorder struct {
	ops      chunks[history.Op]
	attempts attemptLog
}

// attemptLog keeps a worker's attempts while the load runs. The common
// attempt (an answer with no error, evidence, fields or other answers) is
// kept as a compact record that holds no pointer, so the garbage collector
// never scans the growing history; the rest are kept whole beside it.
type attemptLog struct {
	recs chunks[compactAttempt]
	rare []history.Attempt
	n    int
}

// compactAttempt is a history.Attempt without pointers: the fault as an
// index in faultKinds, the rare fields in attemptLog.rare (rare > 0).
type compactAttempt struct {
	op, n, target, copies, status int32
	outcome                       history.Outcome
	fault                         uint8
	intended, start, end          time.Duration
	fingerprint                   history.Fingerprint
	size                          int64
	rare                          int32 // 1 + the index in attemptLog.rare; 0 for a compact one
	bit                           bool
}

// faultKinds are the faults a compact attempt can name, index 0 being
// none: every kind package faults injects, then the replays. Any other
// name makes the attempt a rare one, kept whole.
var faultKinds = append(append([]string{""}, faults.Kinds()...), history.FaultReplay, history.FaultMismatch)

func faultIndex(kind string) (uint8, bool) {
	for i, k := range faultKinds {
		if k == kind {
			return uint8(i), true
		}
	}
	return 0, false
}

// fits32 reports whether every v fits an int32.
func fits32(vs ...int) bool {
	for _, v := range vs {
		if v < math.MinInt32 || v > math.MaxInt32 {
			return false
		}
	}
	return true
}

func (l *attemptLog) add(a history.Attempt) {
	l.n++
	fi, known := faultIndex(a.Fault)
	if !known || a.Err != "" || a.Body != "" || a.Fields != nil || a.Answers != nil || a.Headers != nil || a.Expired ||
		a.Label != "" || a.Synced != 0 || a.Sent != 0 || a.Request != nil || !fits32(a.Op, a.N, a.Target, a.Copies, a.Status) {
		l.rare = append(l.rare, a)
		l.recs.add(compactAttempt{op: int32(min(max(a.Op, -1), math.MaxInt32)), rare: int32(len(l.rare))})
		return
	}
	l.recs.add(compactAttempt{
		op: int32(a.Op), n: int32(a.N), target: int32(a.Target), copies: int32(a.Copies), status: int32(a.Status),
		outcome: a.Outcome, fault: fi, intended: a.Intended, start: a.Start, end: a.End,
		fingerprint: a.Fingerprint, size: a.Size, bit: a.Bit,
	})
}

// attempt is c as the history.Attempt it was made from.
func (l *attemptLog) attempt(c *compactAttempt) history.Attempt {
	if c.rare > 0 {
		return l.rare[c.rare-1]
	}
	return history.Attempt{
		Op: int(c.op), N: int(c.n), Target: int(c.target), Copies: int(c.copies), Status: int(c.status),
		Outcome: c.outcome, Fault: faultKinds[c.fault], Intended: c.intended, Start: c.start, End: c.end,
		Fingerprint: c.fingerprint, Size: c.size, Bit: c.bit,
	}
}

// merge builds the history from the workers' records: ops indexed by ID,
// attempts sorted by (op, attempt number) with a counting sort (each
// worker recorded an op's attempts in order).
func merge(recs []*recorder) (ops []history.Op, attempts []history.Attempt) {
	nOps, nAtt := 0, 0
	for _, r := range recs {
		if r == nil {
			continue
		}
		for _, ch := range r.ops.full {
			for i := range ch {
				nOps = max(nOps, ch[i].ID+1)
			}
		}
		for i := range r.ops.cur {
			nOps = max(nOps, r.ops.cur[i].ID+1)
		}
		nAtt += r.attempts.n
	}
	ops = make([]history.Op, nOps)
	for i := range ops {
		ops[i].ID = i
	}
	// first[op] is where op's attempts start in the merged slice.
	first := make([]int32, nOps+1)
	for _, r := range recs {
		if r == nil {
			continue
		}
		r.ops.drain(func(ch []history.Op) {
			for _, o := range ch {
				ops[o.ID] = o
			}
		})
		count := func(ch []compactAttempt) {
			for i := range ch {
				if op := int(ch[i].op); op >= 0 && op < nOps {
					first[op+1]++
				}
			}
		}
		for _, ch := range r.attempts.recs.full {
			count(ch)
		}
		count(r.attempts.recs.cur)
	}
	for i := 1; i <= nOps; i++ {
		first[i] += first[i-1]
	}
	attempts = make([]history.Attempt, 0, nAtt)[:first[nOps]]
	for _, r := range recs {
		if r == nil {
			continue
		}
		log := &r.attempts
		log.recs.drain(func(ch []compactAttempt) {
			for i := range ch {
				if op := int(ch[i].op); op >= 0 && op < nOps {
					attempts[first[op]] = log.attempt(&ch[i])
					first[op]++
				}
			}
		})
		log.rare, log.n = nil, 0
	}
	return ops, attempts
}

// spiller writes the ops and attempts that workers hand it to a file, so
// that a long run keeps a bounded number of attempts in memory: a worker
// holding each or more hands its whole record over between two ops (its
// ops before their attempts, as the file needs), and starts a new one.
// The file is made when the first record is handed over: a run that
// never passes the bound writes nothing to disk.
type spiller struct {
	dir   string
	each  int
	shard history.Shard
	file  *history.SpillFile // nil until the first record
	ch    chan *recorder
	done  chan struct{}
	on    atomic.Bool
	// stop ends the load at the first error (no file, a full disk): the
	// run ends then, not hours later. err is read after done.
	stop func()
	err  error
}

func newSpiller(dir string, each int, shard history.Shard, stop func()) *spiller {
	s := &spiller{dir: dir, each: each, shard: shard, ch: make(chan *recorder, 4), done: make(chan struct{}), stop: stop}
	go s.write()
	return s
}

// maybeSpill hands the worker's record to the spiller when it holds the
// spiller's bound of attempts; the worker goes on with a new one. A
// full queue makes the worker wait: memory stays bounded when the disk
// is slower than the load.
func (w *worker) maybeSpill() {
	s := w.r.spill
	if s == nil || w.rec.attempts.n < s.each {
		return
	}
	s.on.Store(true)
	rec := w.rec
	w.handedOps += rec.ops.n
	w.handedAttempts += rec.attempts.n
	w.rec = recorder{}
	s.ch <- &rec
}

// started reports whether any record was handed over.
func (s *spiller) started() bool { return s != nil && s.on.Load() }

// hand gives the spiller one more record (at the end of the load).
func (s *spiller) hand(rec *recorder) { s.ch <- rec }

func (s *spiller) write() {
	defer close(s.done)
	local := func(id int) int {
		if s.shard.Count <= 1 {
			return id
		}
		return s.shard.Local(id)
	}
	fail := func(err error) {
		if err != nil && s.err == nil {
			s.err = err
			s.stop()
		}
	}
	for rec := range s.ch {
		if s.file == nil && s.err == nil {
			f, err := history.CreateSpill(s.dir)
			s.file = f
			fail(err)
		}
		if s.err != nil {
			continue // drain: the workers must not block
		}
		recs := s.file.Records()
		rec.ops.drain(func(ch []history.Op) {
			for _, op := range ch {
				op.ID = local(op.ID)
				fail(recs.Op(op, nil))
			}
		})
		log := &rec.attempts
		log.recs.drain(func(ch []compactAttempt) {
			for i := range ch {
				a := log.attempt(&ch[i])
				a.Op = local(a.Op)
				fail(recs.Attempt(&a))
			}
		})
		log.rare, log.n = nil, 0
	}
}

// SpillError is a run whose history could not be written to disk (no
// file in the spill directory, a disk that filled): the load stopped at
// once, and what it sent is counted here, as the history cannot say it.
// It wraps history.ErrSpill.
type SpillError struct {
	// Ops and Attempts are what the load made: ops taken (sent, or
	// recorded as not sent) and attempts recorded, counted as they were.
	Ops, Attempts int
	// Path is the file that keeps what was written of the history (its op
	// and attempt records, without the header and trailer a saved history
	// has, cut after its last whole line), Size its length; "" when none
	// was (the file could not be made).
	Path string
	Size int64
	Err  error
}

func (e *SpillError) Error() string {
	kept := "nothing of it was kept"
	if e.Path != "" {
		kept = fmt.Sprintf("what was written of it (%d bytes of op and attempt records) is in %s", e.Size, e.Path)
	}
	return fmt.Sprintf("%v, after %d ops and %d attempts were sent; %s", e.Err, e.Ops, e.Attempts, kept)
}

func (e *SpillError) Unwrap() error { return e.Err }

// close writes what is left and returns the spill; on an error, a
// *SpillError with sent ops and attempts, and the file kept.
func (s *spiller) close(sentOps, sentAttempts int) (*history.Spill, error) {
	close(s.ch)
	<-s.done
	err := s.err
	if err == nil {
		sp, ferr := s.file.Finish()
		if ferr == nil {
			s.file = nil
			return sp, nil
		}
		err = ferr
	}
	if !errors.Is(err, history.ErrSpill) {
		err = fmt.Errorf("%w: %w", history.ErrSpill, err)
	}
	e := &SpillError{Ops: sentOps, Attempts: sentAttempts, Err: err}
	if s.file != nil {
		e.Path, e.Size = s.file.Keep()
		s.file = nil
	}
	return nil, e
}

// abandon removes the file of a spill that close did not hand out (a run
// that kept its history in memory, or failed).
func (s *spiller) abandon() {
	if s == nil {
		return
	}
	select {
	case <-s.done:
	default:
		close(s.ch)
		<-s.done
	}
	if s.file != nil {
		s.file.Abandon()
		s.file = nil
	}
}
