package cmd

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// --hgrm writes each scenario's two histograms, named after it, and says
// where.
func TestRunHGRM(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, true)
	hgrm := filepath.Join(t.TempDir(), "hgrm")
	r := runMain(t, nil, "run", writeScenario(t, stagedPay), writeScenario(t, stagedClosed), "--target", srv.URL, "--seed", "7", "--hgrm", hgrm, "-q")
	if r.code != ExitOK {
		t.Fatalf("exit %d, want 0\n%s\n%s", r.code, r.out, r.err)
	}
	for _, name := range []string{"pay-open.attempt.hgrm", "pay-open.op.hgrm", "pay-closed.attempt.hgrm", "pay-closed.op.hgrm"} {
		b, err := os.ReadFile(filepath.Join(hgrm, name))
		if err != nil || !strings.Contains(string(b), "1/(1-Percentile)") {
			t.Errorf("%s: %v, %q: want a percentile distribution", name, err, b)
		}
	}
	if !strings.Contains(r.err, "latency histograms (.hgrm) written to "+hgrm) {
		t.Errorf("stderr does not say where the histograms went:\n%s", r.err)
	}
}

// An --hgrm that cannot be written stops the run before any request; it
// belongs to no load or prepare phase.
func TestHGRMChecked(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runMain(t, nil, "run", writeScenario(t, stagedPay), "--target", srv.URL, "--hgrm", filepath.Join(file, "sub"))
	if r.code != ExitRuntime || !strings.Contains(r.err, "--hgrm") || hits.Load() != 0 {
		t.Errorf("unwritable --hgrm: exit %d, %d requests; want %d and none\n%s", r.code, hits.Load(), ExitRuntime, r.err)
	}
	r = runMain(t, nil, "run", "--phase", "load", "--shard", "0/2", "--out", t.TempDir(), "--hgrm", t.TempDir())
	if r.code != ExitUsage || !strings.Contains(r.err, "--hgrm does not apply to --phase load") {
		t.Errorf("--hgrm with --phase load: exit %d, want %d\n%s", r.code, ExitUsage, r.err)
	}
}

// A sharded run's judge writes the histograms of the shards' load, and
// reports its stages: the shards, started together, make each stage's
// rate between them.
func TestJudgeHGRM(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, true)
	dir, hgrm := t.TempDir(), filepath.Join(t.TempDir(), "hgrm")
	r := runMain(t, nil, "run", writeScenario(t, stagedPay), "--phase", "prepare", "--shards", "2", "--start-in", "300ms", "--target", srv.URL, "--out", dir)
	if r.code != ExitOK {
		t.Fatalf("prepare: exit %d\n%s%s", r.code, r.out, r.err)
	}
	loads := make([]result, 2)
	var wg sync.WaitGroup
	for i := range loads {
		wg.Go(func() {
			loads[i] = runMain(t, nil, "run", "--phase", "load", "--shard", fmt.Sprintf("%d/2", i), "--out", dir, "-q")
		})
	}
	wg.Wait()
	for i, r := range loads {
		if r.code != ExitOK {
			t.Fatalf("load %d/2: exit %d\n%s%s", i, r.code, r.out, r.err)
		}
	}
	r = runMain(t, nil, "run", "--phase", "judge", "--out", dir, "--wait", "0s", "--hgrm", hgrm, "-q")
	if r.code != ExitOK {
		t.Fatalf("judge: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if !strings.Contains(r.out, "  stage 2 (0.15–0.3 s): ramp 100 → 200 ops/s: sent ") {
		t.Errorf("the judge's report names no stage:\n%s", r.out)
	}
	for _, name := range []string{"pay-open.attempt.hgrm", "pay-open.op.hgrm"} {
		if b, err := os.ReadFile(filepath.Join(hgrm, name)); err != nil || !strings.Contains(string(b), "1/(1-Percentile)") {
			t.Errorf("%s: %v, %q: want a percentile distribution", name, err, b)
		}
	}
}
