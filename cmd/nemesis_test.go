//go:build unix

package cmd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemcheck/idemcheck/trial"
)

// payNemesis is payScenario with a nemesis whose commands leave a mark in
// dir instead of stopping anything.
func payNemesis(dir string) string {
	return strings.Replace(payScenario, "  - {kind: reset, rate: 0.1}\n", fmt.Sprintf(`  - {kind: reset, rate: 0.1}
  - {kind: nemesis, stop: [touch, %q], start: [touch, %q], at: 50%%, ready: GET /counts}
`, filepath.Join(dir, "stopped"), filepath.Join(dir, "started")), 1)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// run strikes with the scenario's nemesis and shows the window.
func TestRunShowsNemesisWindows(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, true)
	marks := t.TempDir()
	r := runMain(t, nil, "run", writeScenario(t, payNemesis(marks)), "--target", srv.URL, "--seed", "3", "-q")
	if r.code != ExitOK {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if !strings.Contains(r.out, "nemesis window 1 (faults[2]): stopped at") || !exists(filepath.Join(marks, "stopped")) || !exists(filepath.Join(marks, "started")) {
		t.Errorf("run did not strike, or its report does not show the window:\n%s", r.out)
	}
}

// The phases of a sharded run refuse a nemesis: prepare before it writes
// a manifest, and load and judge when a manifest was given one after
// prepare (anyone who can write the run's directory could). No command
// runs.
func TestNemesisRefusedInPhases(t *testing.T) {
	srv := newPayServer(t, true)
	marks := t.TempDir()
	stopped := filepath.Join(marks, "stopped")
	dir := t.TempDir()
	r := runMain(t, nil, "run", writeScenario(t, payNemesis(marks)), "--phase", "prepare", "--shards", "1", "--target", srv.URL, "--out", dir)
	if r.code != ExitUsage || !strings.Contains(r.err, "declares a nemesis") || exists(filepath.Join(dir, trial.ManifestFile)) {
		t.Errorf("prepare with a nemesis: exit %d, want %d and no manifest\n%s", r.code, ExitUsage, r.err)
	}

	r = runMain(t, nil, "run", writeScenario(t, payScenario), "--phase", "prepare", "--shards", "1", "--start-in", "0s", "--target", srv.URL, "--out", dir)
	if r.code != ExitOK {
		t.Fatalf("prepare: exit %d\n%s", r.code, r.err)
	}
	path := filepath.Join(dir, trial.ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["spec"] = payNemesis(marks)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--phase", "load", "--shard", "0/1"}, {"--phase", "judge", "--wait", "0s"}} {
		r := runMain(t, nil, append([]string{"run", "--out", dir, "-q"}, args...)...)
		if r.code != ExitUsage || !strings.Contains(r.err, "declares a nemesis") {
			t.Errorf("%s with a nemesis in the manifest: exit %d, want %d\n%s", args[1], r.code, ExitUsage, r.err)
		}
	}
	if exists(stopped) {
		t.Error("a phase of a sharded run ran the nemesis's stop command")
	}
}

// A sharded run with a nemesis is refused before anything is sent, saying
// why (one kill would cut every shard's requests at a moment no shard
// plans) and how to run it (unsharded).
func TestShardedNemesisRefusedBeforeSending(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	marks := t.TempDir()
	dir := t.TempDir()
	r := runMain(t, nil, "run", writeScenario(t, payNemesis(marks)), "--phase", "prepare", "--shards", "4", "--target", srv.URL, "--out", dir)
	if r.code != ExitUsage {
		t.Fatalf("prepare --shards 4 with a nemesis: exit %d, want %d\n%s", r.code, ExitUsage, r.err)
	}
	for _, want := range []string{"declares a nemesis", "one process's kill would cut every shard's requests in flight at a moment no shard plans", "run it unsharded"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.err)
		}
	}
	if n := hits.Load(); n != 0 || exists(filepath.Join(marks, "stopped")) {
		t.Errorf("the target got %d requests, the stop command ran: %v; want nothing sent, nothing run", n, exists(filepath.Join(marks, "stopped")))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("--out holds %d entries, want none written", len(entries))
	}
}

// check judges a saved run again without running a command, even against
// a scenario that declares a nemesis.
func TestCheckRunsNoNemesis(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, true)
	dir := t.TempDir()
	if r := runMain(t, nil, "run", writeScenario(t, payScenario), "--target", srv.URL, "--seed", "3", "--out", dir, "-q"); r.code != ExitOK {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.out, r.err)
	}
	marks := t.TempDir()
	r := runMain(t, nil, "check", dir, "--scenario", writeScenario(t, payNemesis(marks)))
	if r.code != ExitOK || exists(filepath.Join(marks, "stopped")) || exists(filepath.Join(marks, "started")) {
		t.Errorf("check --scenario with a nemesis: exit %d, commands run: %v\n%s%s", r.code, exists(filepath.Join(marks, "stopped")), r.out, r.err)
	}
}

// run --dry-run shows the nemesis with every parameter and runs nothing.
func TestDryRunShowsNemesis(t *testing.T) {
	marks := t.TempDir()
	r := runMain(t, nil, "run", writeScenario(t, payNemesis(marks)), "--target", "http://127.0.0.1:1", "--dry-run")
	if r.code != ExitOK {
		t.Fatalf("run --dry-run: exit %d\n%s", r.code, r.err)
	}
	want := "fault: nemesis: stop touch " + filepath.Join(marks, "stopped") + ", start touch " + filepath.Join(marks, "started") +
		", at 50% (45%–55% by the seed), once, ready GET /counts within 30s (default)"
	if !strings.Contains(r.out, want) || exists(filepath.Join(marks, "stopped")) {
		t.Errorf("run --dry-run does not show %q, or ran the stop command:\n%s", want, r.out)
	}
}
