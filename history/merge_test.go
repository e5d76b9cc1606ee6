package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func shardOf(run, shard string, started time.Time, ops ...string) *History {
	h := &History{Meta: Meta{RunID: run, Shard: shard, Started: started, Ended: started.Add(time.Second)}}
	for i, k := range ops {
		h.Ops = append(h.Ops, Op{ID: i, Key: k})
		h.Attempts = append(h.Attempts, Attempt{Op: i, N: 1, Outcome: OK, Status: 201,
			Intended: time.Duration(i) * time.Millisecond, Start: time.Duration(i) * time.Millisecond, End: time.Duration(i+1) * time.Millisecond,
			Answers: []Answer{{Copy: 2, Outcome: OK, Status: 201, End: time.Duration(i+1) * time.Millisecond}}})
	}
	return h
}

func TestMergeShards(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// shard 1 of 2 made the run's ops 1 and 3, shard 0 ops 0, 2 and 4
	s0 := shardOf("r", "0/2", t0.Add(5*time.Millisecond), "k0", "k2", "k4")
	s1 := shardOf("r", "1/2", t0, "k1", "k3")
	s1.Meta.Interrupted = true
	m, err := MergeShards([]*History{s1, s0})
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
	if !m.Meta.Started.Equal(t0) || !m.Meta.Interrupted || m.Meta.Shard != "" {
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
	if Missing(m) != nil {
		t.Errorf("Missing = %v, want none", Missing(m))
	}
}

func TestMergeShardsMissingAndUneven(t *testing.T) {
	t0 := time.Now()
	// shards 0 and 2 of 3; shard 0 made more ops (a duration-bound load)
	m, err := MergeShards([]*History{shardOf("r", "0/3", t0, "a", "b", "c"), shardOf("r", "2/3", t0, "x")})
	if err != nil {
		t.Fatal(err)
	}
	if got := Missing(m); len(got) != 1 || got[0] != 1 {
		t.Errorf("Missing = %v, want [1]", got)
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
		if _, err := MergeShards(hs); err == nil {
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
	empty := &History{Meta: Meta{RunID: "r", Shard: "0/2", Started: t0.Add(-30 * time.Second), Interrupted: true}}
	ran := shardOf("r", "1/2", t0, "k1")
	ran.Meta.Target = "http://api"
	m, err := MergeShards([]*History{empty, ran})
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
// gives the history MergeShards gives of the same shards in memory: even,
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
		want, err := MergeShards(hs)
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
	want, err := MergeShards(hs)
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
