package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// shardOf is a history of shard ("i/n", unchecked, or "") of run.
func shardOf(run, shard string, started time.Time, ops ...string) *History {
	h := &History{Meta: Meta{RunID: run, Shard: shardAt(shard), Started: started, Ended: started.Add(time.Second)}}
	for i, k := range ops {
		h.Ops = append(h.Ops, Op{ID: i, Key: k})
		h.Attempts = append(h.Attempts, Attempt{Op: i, N: 1, Outcome: OK, Status: 201,
			Intended: time.Duration(i) * time.Millisecond, Start: time.Duration(i) * time.Millisecond, End: time.Duration(i+1) * time.Millisecond,
			Answers: []Answer{{Copy: 2, Outcome: OK, Status: 201, End: time.Duration(i+1) * time.Millisecond}}})
	}
	return h
}

// shardAt is the Shard "i/n" names, unchecked, so that a test can write
// a shard out of its run; "" is the whole run.
func shardAt(s string) Shard {
	var sh Shard
	fmt.Sscanf(s, "%d/%d", &sh.Index, &sh.Count)
	return sh
}

// mergeShards is what MergeShardFiles gives, merged in memory: the
// oracle the merge of files is held to. It merges the histories of the
// shards of one run into the history of the whole run, as one process
// would have recorded it.
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
func mergeShards(hs []*History) (*History, error) {
	if len(hs) == 0 {
		return nil, errors.New("no history to merge")
	}
	type part struct {
		h    *History
		i, n int
	}
	parts := make([]part, len(hs))
	for k, h := range hs {
		if err := oneShard(h.Meta.Shard); err != nil {
			return nil, fmt.Errorf("history of run %s: %w", h.Meta.RunID, err)
		}
		i, n := h.Meta.Shard.Index, h.Meta.Shard.Count
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
	out.Meta.Shard = Shard{}
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
		out.Meta.Shard = Shard{Count: n}
		for _, p := range parts {
			out.Meta.Shard.Delivered = append(out.Meta.Shard.Delivered, p.i)
		}
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
			if id != p.i+o.ID*n {
				out.Meta.Renumbered = true
			}
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
			if a.Sent != 0 {
				a.Sent += shift
			}
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

// mergedFiles merges hs as MergeShardFiles does, from files of their own,
// and reads the merged history back into memory.
func mergedFiles(t *testing.T, hs ...*History) (*History, error) {
	t.Helper()
	got, err := MergeShardFiles(writeShards(t, hs...), t.TempDir())
	if err != nil {
		return nil, err
	}
	defer got.Spill.Remove()
	var buf bytes.Buffer
	if err := Encode(&buf, got); err != nil {
		t.Fatal(err)
	}
	dec, err := Decode(&buf)
	if err != nil {
		t.Fatalf("the merged history does not decode: %v", err)
	}
	return dec, nil
}

func TestMergeShards(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// shard 1 of 2 made the run's ops 1 and 3, shard 0 ops 0, 2 and 4
	s0 := shardOf("r", "0/2", t0.Add(5*time.Millisecond), "k0", "k2", "k4")
	s1 := shardOf("r", "1/2", t0, "k1", "k3")
	s1.Meta.Interrupted = true
	m, err := mergedFiles(t, s1, s0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i, o := range m.Ops {
		if o.ID != i {
			t.Errorf("op %d has id %d", i, o.ID)
		}
		keys = append(keys, o.Key)
	}
	if got := strings.Join(keys, ","); got != "k0,k1,k2,k3,k4" {
		t.Errorf("merged keys %s, want k0..k4 in the run's order", got)
	}
	if !m.Meta.Started.Equal(t0) || !m.Meta.Interrupted || !m.Meta.Shard.IsZero() {
		t.Errorf("meta %+v: want the earliest start, interrupted, no shard", m.Meta)
	}
	if len(m.Attempts) != 5 {
		t.Fatalf("%d attempts, want 5", len(m.Attempts))
	}
	// op 2 is shard 0's second op: 1 ms into a shard that started 5 ms late
	a := m.AttemptsOf(2)[0]
	if a.Start != 6*time.Millisecond || a.End != 7*time.Millisecond || a.Answers[0].End != 7*time.Millisecond {
		t.Errorf("op 2's attempt %+v: times not moved to the run's origin", a)
	}
	if s0.Attempts[1].Start != time.Millisecond || s0.Attempts[1].Answers[0].End != 2*time.Millisecond {
		t.Errorf("merging changed a shard's own history: %+v", s0.Attempts[1])
	}
	if got := m.Meta.Shard.Missing(); got != nil {
		t.Errorf("Missing = %v, want none", got)
	}
}

func TestMergeShardsMissingAndUneven(t *testing.T) {
	t0 := time.Now()
	// shards 0 and 2 of 3; shard 0 made more ops (a duration-bound load)
	m, err := mergedFiles(t, shardOf("r", "0/3", t0, "a", "b", "c"), shardOf("r", "2/3", t0, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Meta.Shard.Missing(); len(got) != 1 || got[0] != 1 || m.Meta.Shard.String() != "0,2 of 3" {
		t.Errorf("Missing = %v (shard %q), want [1] (0,2 of 3)", got, m.Meta.Shard)
	}
	var keys []string
	for i, o := range m.Ops {
		if o.ID != i || m.AttemptsOf(i)[0].Op != i {
			t.Errorf("op %d: id %d: the merged ops are numbered densely", i, o.ID)
		}
		keys = append(keys, o.Key)
	}
	// run's ids: a=0 x=2 b=3 c=6
	if got := strings.Join(keys, ","); got != "a,x,b,c" {
		t.Errorf("keys %s, want a,x,b,c", got)
	}
}

func TestMergeShardsRefusesMixedRuns(t *testing.T) {
	t0 := time.Now()
	for name, hs := range map[string][]*History{
		"two runs":       {shardOf("r1", "0/2", t0, "a"), shardOf("r2", "1/2", t0, "b")},
		"two counts":     {shardOf("r", "0/2", t0, "a"), shardOf("r", "1/3", t0, "b")},
		"a shard twice":  {shardOf("r", "0/2", t0, "a"), shardOf("r", "0/2", t0, "b")},
		"not a shard":    {shardOf("r", "", t0, "a")},
		"a bad shard":    {shardOf("r", "2/2", t0, "a")},
		"nothing at all": nil,
	} {
		if _, err := mergedFiles(t, hs...); err == nil {
			t.Errorf("%s: merged", name)
		} else if name == "two runs" && !errors.Is(err, ErrMixedRuns) {
			t.Errorf("%s: %v, want ErrMixedRuns", name, err)
		}
	}
}

// A shard that sent nothing (stopped before its start) sets neither the
// header nor the time origin.
func TestMergeShardsEmptyShard(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	empty := &History{Meta: Meta{RunID: "r", Shard: Shard{Index: 0, Count: 2}, Started: t0.Add(-30 * time.Second), Interrupted: true}}
	ran := shardOf("r", "1/2", t0, "k1")
	ran.Meta.Target = "http://api"
	m, err := mergedFiles(t, empty, ran)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Meta.Started.Equal(t0) || m.Meta.Target != "http://api" || m.Attempts[0].Start != 0 {
		t.Errorf("merged meta %+v, first attempt %+v: want the origin and header of the shard that ran", m.Meta, m.Attempts[0])
	}
}

// writeShards saves each history to a file of its own, as load processes
// do, and returns the paths.
func writeShards(t *testing.T, hs ...*History) []string {
	t.Helper()
	var paths []string
	for k, h := range hs {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d.jsonl", k))
		if err := os.WriteFile(path, []byte(encoded(t, h)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	return paths
}

// TestMergeShardFilesAsInMemory: merging shard files one record at a time
// gives the history mergeShards gives of the same shards in memory: even,
// uneven, missing, empty and late shards.
func TestMergeShardFilesAsInMemory(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	keys := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%d", prefix, i))
		}
		return out
	}
	late := shardOf("r", "1/3", t0.Add(7*time.Millisecond), keys("b", 40)...)
	late.Meta.Interrupted = true
	cases := map[string][]*History{
		"even":    {shardOf("r", "0/2", t0, keys("a", 50)...), shardOf("r", "1/2", t0.Add(time.Millisecond), keys("b", 50)...)},
		"uneven":  {shardOf("r", "0/3", t0, keys("a", 50)...), late, shardOf("r", "2/3", t0, keys("c", 45)...)},
		"missing": {shardOf("r", "2/4", t0, keys("c", 30)...), shardOf("r", "0/4", t0.Add(3*time.Millisecond), keys("a", 33)...)},
		"empty":   {shardOf("r", "0/2", t0.Add(-time.Hour)), shardOf("r", "1/2", t0, keys("b", 10)...)},
	}
	for name, hs := range cases {
		want, err := mergeShards(hs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := MergeShardFiles(writeShards(t, hs...), t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var buf bytes.Buffer
		if err := Encode(&buf, got); err != nil {
			t.Fatal(err)
		}
		got.Spill.Remove()
		dec, err := Decode(&buf)
		if err != nil {
			t.Fatalf("%s: the merged history does not decode: %v", name, err)
		}
		if diff := cmp.Diff(want, dec, cmpopts.IgnoreUnexported(History{}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: merged from files (-in memory +files):\n%s", name, diff)
		}
	}
}

// TestMergeShardFilesRefuses: files of other runs, shards given twice, a
// file cut short or broken inside are refused, and leave no file behind.
func TestMergeShardFilesRefuses(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	a, b := shardOf("r", "0/2", t0, "k0", "k2"), shardOf("r", "1/2", t0, "k1")
	paths := writeShards(t, a, b)
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	whole, _ := os.ReadFile(paths[1])
	os.WriteFile(cut, whole[:bytes.LastIndex(bytes.TrimSpace(whole), []byte("\n"))+1], 0o644)
	broken := filepath.Join(t.TempDir(), "broken.jsonl")
	os.WriteFile(broken, bytes.Replace(whole, []byte(`"outcome":"ok"`), []byte(`"outcome":"maybe"`), 1), 0o644)
	dir := t.TempDir()
	for name, c := range map[string]struct {
		files []string
		is    error
	}{
		"another run": {append(writeShards(t, shardOf("other", "1/2", t0, "x")), paths[0]), ErrMixedRuns},
		"twice":       {[]string{paths[0], paths[0]}, nil},
		"cut short":   {[]string{paths[0], cut}, ErrTruncated},
		"broken":      {[]string{paths[0], broken}, ErrFormat},
	} {
		_, err := MergeShardFiles(c.files, dir)
		if err == nil || (c.is != nil && !errors.Is(err, c.is)) {
			t.Errorf("%s: %v, want an error wrapping %v", name, err, c.is)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left: %v", left)
	}
}

// TestMergedShardsFarFromTheirPlaces: a merged sharded run writes each
// shard's ops in turn, so an op comes far before its place; a reader that
// knows the file's size takes it (no file that size holds more ops), one
// that does not still refuses an id so far ahead.
func TestMergedShardsFarFromTheirPlaces(t *testing.T) {
	defer func(g int) { maxIDGap = g }(maxIDGap)
	maxIDGap = 16
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var hs []*History
	for i := range 3 {
		var keys []string
		for k := range 40 {
			keys = append(keys, fmt.Sprintf("s%d-%d", i, k))
		}
		hs = append(hs, shardOf("r", fmt.Sprintf("%d/3", i), t0, keys...))
	}
	want, err := mergeShards(hs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := MergeShardFiles(writeShards(t, hs...), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer got.Spill.Remove()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Encode(f, got); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, _ := os.ReadFile(path)
	dec, err := Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Decode of the merged history: %v", err)
	}
	if diff := cmp.Diff(want, dec, cmpopts.IgnoreUnexported(History{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-in memory +merged files):\n%s", diff)
	}
	p, err := SplitFile(context.Background(), path, t.TempDir(), 2<<10)
	if err != nil {
		t.Fatalf("Split of the merged history: %v", err)
	}
	p.Close()
	parts, err := PartsOf(context.Background(), got, t.TempDir(), 2<<10)
	if err != nil {
		t.Fatalf("PartsOf the merged history: %v", err)
	}
	parts.Close()
	// Without the size, an id 16 ahead is refused as before.
	if _, err := Decode(io.MultiReader(bytes.NewReader(b))); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "after only") {
		t.Errorf("Decode without the size: %v, want the id refused", err)
	}
}

// TestPartsOfFailsCleanly: PartsOf that cannot write its parts returns
// only once it no longer reads the spill, which may then be removed.
func TestPartsOfFailsCleanly(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	got, err := MergeShardFiles(writeShards(t, shardOf("r", "0/1", t0, "a", "b", "c")), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = PartsOf(context.Background(), got, filepath.Join(t.TempDir(), "gone"), 1)
	if err == nil {
		t.Fatal("PartsOf into a missing directory: no error")
	}
	if err := got.Spill.Remove(); err != nil {
		t.Fatal(err)
	}
}

// TestMergeWriteErrorIsTheDisks: a merge that cannot write its file says
// so (ErrSpill), naming no shard.
func TestMergeWriteErrorIsTheDisks(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	_, err := MergeShardFiles(writeShards(t, shardOf("r", "0/1", t0, "a")), filepath.Join(t.TempDir(), "gone"))
	if !errors.Is(err, ErrSpill) || errors.Is(err, ErrFormat) {
		t.Errorf("merge into a missing directory: %v, want ErrSpill", err)
	}
}
