package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/internal/testfs"
	"github.com/idemcheck/idemcheck/scenarios"
)

// spillScenario has retries and seeded faults, so each op's attempts are
// the same in every run of one seed, whatever the timing.
func spillScenario(ops int, rate float64) *scenarios.Scenario {
	return scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: ops, Concurrency: 4, Rate: scenarios.Rate(rate)}
		if rate > 0 {
			sc.Load.MaxInFlight = 4 // few workers, each past the spill bound
		}
		sc.Retry = scenarios.Retry{Attempts: 3, On: []string{"5xx", "fail", "info"}}
		sc.Faults = []scenarios.Fault{{Kind: faults.KindReset, Rate: 0.2}, {Kind: faults.KindDuplicate, Rate: 0.1}}
	})
}

// TestSpilledRunIsTheSameHistory: a run whose history spills to disk
// (closed and open models, a shard too) records what the same run kept in
// memory records: every op with its key, every attempt with its fault,
// outcome and status; and the spill file is gone once removed.
func TestSpilledRunIsTheSameHistory(t *testing.T) { // not parallel: CPU-heavy, beside the others under -race it ran past its bound
	for _, c := range []struct {
		name   string
		rate   float64
		shard  history.Shard
		replay bool
	}{{"closed", 0, history.Shard{}, false}, {"open", 4000, history.Shard{}, false}, {"shard 1/3", 0, history.Shard{Index: 1, Count: 3}, false},
		{"replays", 0, history.Shard{}, true}} {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, nil)
			sc := spillScenario(testenv.Pick(300, 1500), c.rate) // the long suite spills more
			if c.replay {
				// replays are recorded by other workers, after their op
				sc.Operation.Replay = &scenarios.Replay{Count: 1}
			}
			mem, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 11, Shard: c.shard})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			sp, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 11, Shard: c.shard, SpillAfter: 1, SpillDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if sp.Spill == nil || len(sp.Ops) != 0 || len(sp.Attempts) != 0 {
				t.Fatalf("the run did not spill: Spill %v, %d ops and %d attempts in memory", sp.Spill, len(sp.Ops), len(sp.Attempts))
			}
			if sp.Spill.Ops != len(mem.Ops) || sp.Spill.Attempts != len(mem.Attempts) {
				t.Errorf("spilled %d ops, %d attempts; in memory %d, %d", sp.Spill.Ops, sp.Spill.Attempts, len(mem.Ops), len(mem.Attempts))
			}
			var buf bytes.Buffer
			if err := history.Encode(&buf, sp); err != nil {
				t.Fatal(err)
			}
			got, err := history.Decode(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(mem.Ops, got.Ops); diff != "" {
				t.Errorf("ops (-memory +spilled):\n%s", diff)
			}
			same := cmpopts.IgnoreFields(history.Attempt{}, "Intended", "Start", "End", "Err", "Fingerprint", "Body", "Answers")
			if diff := cmp.Diff(mem.Attempts, got.Attempts, same); diff != "" {
				t.Errorf("attempts (-memory +spilled):\n%s", diff)
			}
			var keys []string
			if err := history.EachOp(sp, func(op history.Op) error { keys = append(keys, op.Key); return nil }); err != nil || len(keys) != len(mem.Ops) {
				t.Errorf("EachOp: %d keys, %v; want %d", len(keys), err, len(mem.Ops))
			}
			if err := sp.Spill.Remove(); err != nil {
				t.Fatal(err)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
				t.Errorf("files left in the spill directory: %v", left)
			}
		})
	}
}

// TestShortRunDoesNotSpill: a run below the bound keeps its history in
// memory and leaves no file behind.
func TestShortRunDoesNotSpill(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	dir := t.TempDir()
	h, err := Run(runCtx(t), spillScenario(100, 0), Options{Target: s.URL, Seed: 3, SpillAfter: 1 << 20, SpillDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if h.Spill != nil || len(h.Ops) != 100 {
		t.Errorf("Spill %v, %d ops in memory; want none spilled, 100", h.Spill, len(h.Ops))
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left: %v", left)
	}
}

// TestInterruptedSpilledRun: a spilled run cut short by Ctrl-C still hands
// back a whole history (every op taken, with what its attempts got) that
// encodes and decodes.
func TestInterruptedSpilledRun(t *testing.T) { // not parallel: CPU-heavy, beside the others under -race it ran past its bound
	ctx, cancel := context.WithCancel(runCtx(t))
	defer cancel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int64, body []byte) {
		if n == 2000 {
			cancel()
		}
		w.WriteHeader(201)
	})
	h, err := Run(ctx, spillScenario(100000, 0), Options{Target: s.URL, Seed: 2, SpillAfter: 1, SpillDir: t.TempDir()})
	if !errors.Is(err, context.Canceled) || h == nil || !h.Meta.Interrupted {
		t.Fatalf("Run = %v, interrupted %v; want context.Canceled and an interrupted history", err, h != nil && h.Meta.Interrupted)
	}
	defer h.Spill.Remove()
	if h.Spill == nil || h.Spill.Ops < 1500 || h.Spill.Ops >= 100000 {
		t.Fatalf("spill %+v: want the ops taken before the interrupt, on disk", h.Spill)
	}
	var buf bytes.Buffer
	if err := history.Encode(&buf, h); err != nil {
		t.Fatal(err)
	}
	got, err := history.Decode(&buf)
	if err != nil {
		t.Fatalf("the interrupted spilled history does not decode: %v", err)
	}
	if len(got.Ops) != h.Spill.Ops || len(got.Attempts) != h.Spill.Attempts || !got.Meta.Interrupted {
		t.Errorf("decoded %d ops, %d attempts, interrupted %v; spilled %d, %d", len(got.Ops), len(got.Attempts), got.Meta.Interrupted, h.Spill.Ops, h.Spill.Attempts)
	}
}

// TestSpillFileOnlyPastBound: the spill file is made when the bound is
// passed, not at the start: a run below it needs no writable directory
// at all (a read-only file system, a TMPDIR that is not there).
func TestSpillFileOnlyPastBound(t *testing.T) {
	s := newServer(t, nil)
	h, err := Run(runCtx(t), spillScenario(100, 0), Options{Target: s.URL, Seed: 3, SpillAfter: 1 << 20,
		SpillDir: filepath.Join(t.TempDir(), "not-there")})
	if err != nil || h.Spill != nil || len(h.Ops) != 100 {
		t.Fatalf("Run = %v, spill %v, %d ops; want no error, 100 ops in memory", err, h != nil && h.Spill != nil, len(h.Ops))
	}
	// past the bound, the directory's fault ends the run, counting what it sent
	_, err = Run(runCtx(t), spillScenario(1000, 0), Options{Target: s.URL, Seed: 3, SpillAfter: 1,
		SpillDir: filepath.Join(t.TempDir(), "not-there")})
	var se *SpillError
	if !errors.As(err, &se) || !errors.Is(err, history.ErrSpill) || se.Ops == 0 || se.Path != "" {
		t.Fatalf("Run past the bound into no directory = %v; want a *SpillError wrapping history.ErrSpill, ops counted, no file", err)
	}
}

// TestSpillDiskFull: a disk that fills mid-run stops the load, keeps what
// was written (whole lines) where the error says, and counts the ops and
// attempts sent as they were sent, not from the history it lost.
func TestSpillDiskFull(t *testing.T) {
	dir := testfs.SmallDisk(t, 256<<10)
	s := newServer(t, nil)
	sc := scenario(func(sc *scenarios.Scenario) { sc.Load = scenarios.Load{Ops: 200000, Concurrency: 4} })
	h, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 5, SpillAfter: 1, SpillDir: dir})
	var se *SpillError
	if !errors.As(err, &se) || !errors.Is(err, history.ErrSpill) {
		t.Fatalf("Run on a full disk = %v; want a *SpillError", err)
	}
	if h == nil || h.Spill != nil || h.Meta.Scenario != "test" {
		t.Fatalf("history %+v: want its Meta, nothing spilled", h)
	}
	if got := s.count.Load(); se.Attempts != int(got) || se.Ops != int(got) || se.Ops >= 200000 {
		t.Errorf("SpillError counts %d ops, %d attempts; the server got %d requests (each op one attempt), and the load must stop early", se.Ops, se.Attempts, got)
	}
	data, rerr := os.ReadFile(se.Path)
	if rerr != nil || filepath.Dir(se.Path) != dir || int64(len(data)) != se.Size || len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("kept %s (%d bytes, error %v, size %d): want the records written, whole lines, in %s", se.Path, len(data), rerr, se.Size, dir)
	}
	for i, line := range bytes.Split(data[:len(data)-1], []byte("\n")) {
		if !json.Valid(line) {
			t.Fatalf("line %d of the kept spill is not JSON: %.80q", i+1, line)
		}
	}
	if !strings.Contains(err.Error(), se.Path) || !strings.Contains(err.Error(), fmt.Sprintf("%d ops", se.Ops)) {
		t.Errorf("error %q: want the count and the path", err)
	}
}
