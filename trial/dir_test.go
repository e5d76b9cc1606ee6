package trial

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
)

// A sharded run through its directory: prepare publishes, two loads
// claim and write their shards, a judge merges them; a directory that
// holds a run refuses another, a shard runs once and is taken once.
func TestShardedRunDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	target := serve(t, &charges{n: map[string]int{}})
	dir := t.TempDir()
	sc := load(t, scenario)
	pre, err := Prepare(ctx, sc, Options{Targets: []string{target}, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckFresh(dir); err != nil {
		t.Fatalf("CheckFresh(empty dir) = %v", err)
	}
	m, _, err := pre.Publish(dir, Plan{Spec: scenario, Shards: 2, Overrides: Overrides{Ops: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckFresh(dir); !errors.Is(err, ErrRunExists) || !strings.Contains(err.Error(), "already holds a run (manifest.json)") {
		t.Errorf("CheckFresh(a run's dir) = %v, want ErrRunExists", err)
	}
	for i := range 2 {
		got, lsc, err := ReadRun(ctx, []string{dir}, nil, 0, nil)
		if err != nil || got.RunID != m.RunID || lsc.Load.Ops != 20 {
			t.Fatalf("ReadRun = %+v, ops %d, %v; want run %s with its override of 20 ops", got, lsc.Load.Ops, err, m.RunID)
		}
		targets, err := got.RunTargets(nil)
		if err != nil || len(targets) != 1 || targets[0] != target {
			t.Fatalf("RunTargets(none given) = %v, %v; want the manifest's", targets, err)
		}
		c, err := ClaimShard(dir, got, history.Shard{Index: i, Count: 2})
		if err != nil {
			t.Fatal(err)
		}
		var ce *ClaimError
		if _, err := ClaimShard(dir, got, c.Shard); !errors.As(err, &ce) || ce.Ran {
			t.Errorf("a second claim of shard %d = %v, want it taken", i, err)
		}
		h, err := LoadShard(ctx, lsc, got, c, Options{Targets: targets})
		if err != nil || h == nil {
			t.Fatalf("LoadShard(%d) = %v", i, err)
		}
		if err := c.Write(h); err != nil {
			t.Fatal(err)
		}
		if _, err := ClaimShard(dir, got, c.Shard); !errors.As(err, &ce) || !ce.Ran || !strings.Contains(err.Error(), "already ran") {
			t.Errorf("a claim of shard %d that ran = %v, want it refused as run", i, err)
		}
	}
	jm, jsc, err := ReadRun(ctx, []string{dir}, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	judge, err := Resume(jsc, jm, []string{dir}, Options{Targets: []string{target}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := CollectShards(ctx, jm, []string{dir}, time.Now(), time.Millisecond, nil)
	if err != nil || len(set.Files) != 2 {
		t.Fatalf("CollectShards = %+v, %v", set, err)
	}
	j, err := judge.JudgeShards(ctx, jm, set)
	if err != nil {
		t.Fatal(err)
	}
	defer j.History.Spill.Remove()
	if j.Judgement.Result != checks.NotMet || j.Measures.Load.Ops != 20 || !j.History.Meta.Shard.IsZero() {
		t.Errorf("judged %s on %d ops (shard %q), want not_met on 20 ops of the whole run", j.Judgement.Result, j.Measures.Load.Ops, j.History.Meta.Shard)
	}
	if _, err := judge.JudgeShards(ctx, jm, &ShardSet{Missing: []int{0, 1}}); !errors.Is(err, ErrNoShards) {
		t.Errorf("JudgeShards(no shard) = %v, want ErrNoShards", err)
	}
	if _, err := Resume(jsc, jm, []string{t.TempDir()}, Options{}); !errors.Is(err, ErrNoReadings) {
		t.Errorf("Resume without before.json = %v, want ErrNoReadings", err)
	}
}

// ReadRun waits for a manifest, up to its wait, and tells a missing
// manifest from a broken one.
func TestReadRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	waited := 0
	start := time.Now()
	_, _, err := ReadRun(ctx, []string{dir}, nil, 300*time.Millisecond, func() { waited++ })
	if !errors.Is(err, ErrNoManifest) || waited != 1 || time.Since(start) < 300*time.Millisecond {
		t.Errorf("ReadRun(empty dir, wait 300ms) = %v after %s, told %d times; want ErrNoManifest after the wait, told once", err, time.Since(start), waited)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := ReadRun(cancelled, []string{dir}, nil, time.Minute, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadRun(cancelled) = %v, want context.Canceled", err)
	}
	for name, text := range map[string]string{
		"another format": `{"format": 9}`,
		"not JSON":       `{`,
		"bad overrides":  `{"format":1,"run_id":"r","shards":1,"spec":"x","overrides":{"concurrency":2,"rate":5}}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ReadRun(ctx, []string{dir}, nil, 0, nil); !errors.Is(err, ErrManifest) || errors.Is(err, ErrNoManifest) {
			t.Errorf("ReadRun(%s) = %v, want ErrManifest", name, err)
		}
	}
}

func TestRunTargets(t *testing.T) {
	t.Parallel()
	const secret = "http://user:s3cret@api:8080"
	m := &Manifest{RunID: "r", Targets: []string{"http://user:xxxxx@api:8080"}, TargetsRedacted: true,
		TargetDigests: []string{TargetDigest("r", secret)}}
	if _, err := m.RunTargets(nil); !errors.Is(err, ErrTargetSecret) {
		t.Errorf("RunTargets(none, secret run) = %v, want ErrTargetSecret", err)
	}
	if got, err := m.RunTargets([]string{secret}); err != nil || got[0] != secret {
		t.Errorf("RunTargets(the run's) = %v, %v", got, err)
	}
	for _, given := range [][]string{{"http://user:other@api:8080"}, {secret, secret}} {
		if _, err := m.RunTargets(given); err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "other") {
			t.Errorf("RunTargets(%d others) = %v, want refused, no secret shown", len(given), err)
		}
	}
	own := &Manifest{RunID: "r"}
	if _, err := own.RunTargets([]string{"http://api"}); !errors.Is(err, ErrScenarioTarget) {
		t.Errorf("RunTargets(given, run on the scenario's own) = %v, want ErrScenarioTarget", err)
	}
}

// A judge waits from the load's planned end, not from now.
func TestShardDeadline(t *testing.T) {
	t.Parallel()
	start := time.Now().Add(time.Hour)
	m := &Manifest{Start: start}
	sc := load(t, scenario)
	if got := m.ShardDeadline(sc, time.Minute); !got.Equal(start.Add(time.Minute)) {
		t.Errorf("closed model bound by ops: %s, want the start plus the wait", got.Sub(start))
	}
	sc.Load.Rate, sc.Load.Concurrency, sc.Load.Ops = 10, 0, 600
	if got := m.ShardDeadline(sc, time.Minute); !got.Equal(start.Add(2 * time.Minute)) {
		t.Errorf("600 ops at 10/s: %s, want the start plus a minute of load plus the wait", got.Sub(start))
	}
	m.Start = time.Now().Add(-time.Hour)
	if got := m.ShardDeadline(sc, time.Minute); time.Until(got) < 59*time.Second {
		t.Errorf("a load that ended long ago: waits until %s from now, want about a minute", time.Until(got))
	}
}
