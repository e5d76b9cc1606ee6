package history

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard says which part of a run a history holds.
//
// The zero Shard is the whole run, made in one process or merged from
// every shard. Index of Count is one shard of a run made by several
// processes: shard i of n makes the run's ops i, i+n, i+2n, … (Global),
// and its history numbers them 0, 1, 2, … (Local). A merged run that
// lacks shards holds the Delivered ones of Count; the others are Missing.
//
// Its text form, in a history's header, is "" for the whole run, "i/n"
// for one shard, and "0,1,3 of 4" for a merged run without shard 2.
type Shard struct {
	Index, Count int
	// Delivered, for a merged run that lacks shards, are the shards it
	// holds, ascending; nil for one shard or the whole run.
	Delivered []int
}

// ParseShard parses one shard of a run, "i/n" (0 <= i < n): what one
// load process makes.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	si, err1 := strconv.Atoi(i)
	sn, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/n, e.g. 0/4", s)
	}
	if sn < 1 {
		return Shard{}, fmt.Errorf("shard %q: want at least one shard", s)
	}
	sh := Shard{Index: si, Count: sn}
	if err := sh.Check(); err != nil {
		return Shard{}, err
	}
	return sh, nil
}

// UnmarshalText implements encoding.TextUnmarshaler: it reads any text
// form ("", "i/n" as ParseShard does, "0,1,3 of 4"), and refuses a shard
// outside its run.
func (s *Shard) UnmarshalText(b []byte) error {
	text := string(b)
	if text == "" {
		*s = Shard{}
		return nil
	}
	if have, total, ok := strings.Cut(text, " of "); ok {
		return s.parseMerged(text, have, total)
	}
	sh, err := ParseShard(text)
	if err != nil {
		return err
	}
	*s = sh
	return nil
}

// parseMerged reads "0,1,3 of 4" (have and total around " of ").
func (s *Shard) parseMerged(text, have, total string) error {
	n, err := strconv.Atoi(total)
	if err != nil || n < 1 {
		return fmt.Errorf("shard %q: want the shards a merged run holds, e.g. 0,1,3 of 4", text)
	}
	var got []int
	for f := range strings.SplitSeq(have, ",") {
		i, err := strconv.Atoi(f)
		if err != nil || i < 0 || i >= n || (len(got) > 0 && i <= got[len(got)-1]) {
			return fmt.Errorf("shard %q: want the shards a merged run holds, ascending from 0 to %d, e.g. 0,1,3 of 4", text, n-1)
		}
		got = append(got, i)
	}
	*s = Shard{Count: n, Delivered: got}
	return nil
}

// MarshalText implements encoding.TextMarshaler: the text form.
func (s Shard) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// String returns the text form: "" for the whole run, "i/n" for one
// shard, "0,1,3 of 4" for a merged run that lacks shards.
func (s Shard) String() string {
	switch {
	case s.Delivered != nil:
		idx := make([]string, len(s.Delivered))
		for k, i := range s.Delivered {
			idx[k] = strconv.Itoa(i)
		}
		return fmt.Sprintf("%s of %d", strings.Join(idx, ","), s.Count)
	case s.Count == 0:
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// IsZero reports whether s is the whole run (and a history's header
// leaves it out).
func (s Shard) IsZero() bool { return s.Index == 0 && s.Count == 0 && s.Delivered == nil }

// Check reports whether s is one shard of a run, 0 <= Index < Count, or
// the whole run: what one process can make.
func (s Shard) Check() error {
	switch {
	case s.Delivered != nil:
		return fmt.Errorf("shard %q: a merged run, not one shard: want i/n, e.g. 0/4", s)
	case s.IsZero():
		return nil
	case s.Count < 1:
		return fmt.Errorf("shard %d/%d: want at least one shard", s.Index, s.Count)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("shard %d/%d: the index goes from 0 to %d", s.Index, s.Count, s.Count-1)
	}
	return nil
}

// Missing returns the shards a merged run lacks, or nil when it lacks
// none (or s is one shard).
func (s Shard) Missing() []int {
	if s.Delivered == nil {
		return nil
	}
	have := map[int]bool{}
	for _, i := range s.Delivered {
		have[i] = true
	}
	var out []int
	for i := range s.Count {
		if !have[i] {
			out = append(out, i)
		}
	}
	return out
}

// n is the number of shards, 1 for the whole run.
func (s Shard) n() int { return max(s.Count, 1) }

// Global is the run's number of the shard's k-th op (from 0).
func (s Shard) Global(k int) int { return s.Index + k*s.n() }

// Local is the shard's number of the run's op id (one of its own).
func (s Shard) Local(id int) int { return (id - s.Index) / s.n() }

// Ops is how many of the run's first ops ops the shard makes.
func (s Shard) Ops(ops int) int {
	if ops <= s.Index {
		return 0
	}
	return (ops - s.Index + s.n() - 1) / s.n()
}
