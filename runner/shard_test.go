package runner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// The shards of a run, merged, are the run: the same ops with the same
// keys and users, and every attempt with the same fault and outcome, as
// the run made in one process with the same seed.
func TestShardsMergeIntoTheRun(t *testing.T) {
	t.Parallel()
	for _, model := range []string{"closed", "open"} {
		t.Run(model, func(t *testing.T) {
			sc := scenario(func(sc *scenarios.Scenario) {
				sc.Users = []string{"alice", "bob", "carol"}
				sc.Load = scenarios.Load{Ops: 43, Concurrency: 6}
				if model == "open" {
					sc.Load = scenarios.Load{Ops: 43, Rate: 2000, MaxInFlight: 16}
				}
				sc.Faults = []scenarios.Fault{
					{Kind: "drop_ack", Rate: 0.3},
					{Kind: "reset", Rate: 0.2},
					{Kind: "duplicate", Rate: 0.1, Copies: 2},
				}
			})
			s := newServer(t, nil)
			whole := mustRun(t, s, sc, 42)
			var parts []*history.History
			sent := 0
			for i := range 4 {
				sh := history.Shard{Index: i, Count: 4}
				obs := &countingObserver{}
				h, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 42, Shard: sh, Observer: obs})
				if err != nil {
					t.Fatalf("shard %s: %v", sh, err)
				}
				if !cmp.Equal(h.Meta.Shard, sh) {
					t.Errorf("shard %s: Meta.Shard = %q", sh, h.Meta.Shard)
				}
				if want := sh.Ops(43); len(h.Ops) != want || obs.total != want {
					t.Errorf("shard %s: %d ops, observer told %d; want %d", sh, len(h.Ops), obs.total, want)
				}
				for k, o := range h.Ops {
					if o.ID != k {
						t.Fatalf("shard %s: op %d has id %d: a shard's history numbers its ops from 0", sh, k, o.ID)
					}
				}
				h.Meta.RunID = "r"
				sent += len(h.Attempts)
				parts = append(parts, h)
			}
			merged := mergeFiles(t, parts)
			if diff := cmp.Diff(whole.Ops, merged.Ops); diff != "" {
				t.Errorf("ops of the merged shards differ from the run's (-run +shards):\n%s", diff)
			}
			if diff := cmp.Diff(faultSeqs(whole), faultSeqs(merged)); diff != "" {
				t.Errorf("attempts of the merged shards differ from the run's (-run +shards):\n%s", diff)
			}
			if sent != len(whole.Attempts) {
				t.Errorf("shards made %d attempts, the run %d", sent, len(whole.Attempts))
			}
			kinds := map[string]int{}
			for _, a := range merged.Attempts {
				kinds[a.Fault]++
			}
			if kinds["drop_ack"] == 0 || kinds["reset"] == 0 || kinds["duplicate"] == 0 {
				t.Errorf("faults %v: the test needs every kind", kinds)
			}
		})
	}
}

// mergeFiles merges the shards' histories as a judge does, from files of
// their own, and reads the merged history back.
func mergeFiles(t *testing.T, parts []*history.History) *history.History {
	t.Helper()
	dir := t.TempDir()
	var files []string
	for _, h := range parts {
		path := filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", h.Meta.Shard.Index))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := history.Encode(f, h); err != nil {
			t.Fatal(err)
		}
		f.Close()
		files = append(files, path)
	}
	merged, err := history.MergeShardFiles(files, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer merged.Spill.Remove()
	var buf bytes.Buffer
	if err := history.Encode(&buf, merged); err != nil {
		t.Fatal(err)
	}
	h, err := history.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func faultSeqs(h *history.History) []faultSeq {
	out := make([]faultSeq, len(h.Attempts))
	for i, a := range h.Attempts {
		out[i] = faultSeq{a.Op, a.N, a.Fault, a.Outcome}
	}
	return out
}

// A shard of the open model sends its ops when the whole run would: op id
// at id / rate, so n shards together hold the run's rate.
func TestOpenShardKeepsTheRunsSchedule(t *testing.T) {
	t.Parallel()
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 40, Rate: 200, MaxInFlight: 8}
	})
	s := newServer(t, nil)
	h, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 1, Shard: history.Shard{Index: 1, Count: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Ops) != 20 {
		t.Fatalf("%d ops, want 20", len(h.Ops))
	}
	for _, a := range h.Attempts {
		global := 1 + 2*a.Op
		if want := time.Duration(global) * 5 * time.Millisecond; a.N == 1 && a.Intended != want {
			t.Errorf("op %d (run's op %d) intended at %v, want %v", a.Op, global, a.Intended, want)
		}
	}
}

func TestShardWorkersSplit(t *testing.T) {
	t.Parallel()
	sum := 0
	for i := range 4 {
		r := &run{load: scenarios.Load{Concurrency: 10}, shard: history.Shard{Index: i, Count: 4}}
		sum += r.workers()
	}
	if sum != 10 {
		t.Errorf("concurrency 10 over 4 shards: %d workers in all, want 10", sum)
	}
	r := &run{load: scenarios.Load{Concurrency: 10}, shard: history.Shard{Index: 1, Count: 4}}
	if got := r.workers(); got != 3 {
		t.Errorf("concurrency 10, shard 1 of 4: %d workers, want 3", got)
	}
	r = &run{load: scenarios.Load{Concurrency: 2}, shard: history.Shard{Index: 3, Count: 4}}
	if got := r.workers(); got != 1 {
		t.Errorf("concurrency 2 over 4 shards: %d workers, want 1", got)
	}
	r = &run{load: scenarios.Load{Rate: 100, MaxInFlight: 64}, shard: history.Shard{Index: 0, Count: 4}}
	if got := r.workers(); got != 16 {
		t.Errorf("max_in_flight 64 over 4 shards: %d, want 16", got)
	}
}
