package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/trial"
)

// testRunKey is the run key the sharded tests give every phase.
const testRunKey = "k3y-of-the-sharded-test-run-0123456789"

// keyed is the environment of a phase given the test's run key, and vars.
func keyed(vars ...string) map[string]string {
	env := map[string]string{trial.RunKeyEnv: testRunKey}
	for i := 0; i+1 < len(vars); i += 2 {
		env[vars[i]] = vars[i+1]
	}
	return env
}

// noKey fails the test when out shows the run key.
func noKey(t *testing.T, what string, r result) {
	t.Helper()
	if strings.Contains(r.out+r.err, testRunKey) {
		t.Errorf("%s shows the run key:\n%s%s", what, r.out, r.err)
	}
}

// prepared prepares payScenario against target, for shards, in a new
// directory, with env.
func prepared(t *testing.T, env map[string]string, target string, shards int) string {
	t.Helper()
	dir := t.TempDir()
	r := runMain(t, env, "run", writeScenario(t, payScenario), "--phase", "prepare", "--shards", fmt.Sprint(shards), "--start-in", "0s",
		"--seed", "5", "--ops", "20", "--target", target, "--out", dir)
	if r.code != ExitOK {
		t.Fatalf("prepare: exit %d\n%s%s", r.code, r.out, r.err)
	}
	noKey(t, "prepare", r)
	return dir
}

// An edited manifest is obeyed by no phase: its target changed to a
// server that logs what it gets and a header added that sends the load
// processes' secret there, or a byte added, is refused by load and judge
// (exit 2, naming the file); nothing reaches the other server.
func TestShardedRunRefusesEditedManifest(t *testing.T) {
	t.Parallel()
	target := newPayServer(t, true)
	var harvested atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { harvested.Add(1) }))
	t.Cleanup(evil.Close)
	dir := prepared(t, keyed(), target.URL, 2)
	path := filepath.Join(dir, trial.ManifestFile)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(orig, &doc); err != nil {
		t.Fatal(err)
	}
	doc["targets"] = []string{evil.URL}
	doc["spec"] = strings.Replace(doc["spec"].(string), "  path: /pay\n", "  path: /pay\n  headers: {X-Api-Token: '{{env \"API_TOKEN\"}}'}\n", 1)
	edited, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	env := keyed("API_TOKEN", "sk_live_pod_secret")
	for name, b := range map[string][]byte{"target and header": edited, "one byte": append(bytes.Clone(orig), '\n')} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"run", "--phase", "load", "--shard", "0/2", "--out", dir, "--wait", "0s"},
			{"run", "--phase", "judge", "--out", dir, "--wait", "0s"},
		} {
			r := runMain(t, env, args...)
			if r.code != ExitUsage || !strings.Contains(r.err, path) || !strings.Contains(r.err, "changed after prepare") {
				t.Errorf("%s, %s: exit %d, want %d naming %s as changed after prepare\n%s", name, args[2], r.code, ExitUsage, path, r.err)
			}
			noKey(t, args[2], r)
		}
	}
	if n := harvested.Load(); n != 0 {
		t.Errorf("the edited target got %d requests", n)
	}
}

// The readings before the load are the run's too: a changed before.json
// is refused by the judge, naming it.
func TestShardedRunRefusesChangedReadings(t *testing.T) {
	t.Parallel()
	target := newPayServer(t, true)
	dir := prepared(t, keyed(), target.URL, 1)
	if r := runMain(t, keyed(), "run", "--phase", "load", "--shard", "0/1", "--out", dir, "-q"); r.code != ExitOK {
		t.Fatalf("load: exit %d\n%s", r.code, r.err)
	}
	before := filepath.Join(dir, trial.BeforeFile)
	b, err := os.ReadFile(before)
	if err != nil {
		t.Fatal(err)
	}
	var rd trial.Readings
	if err := json.Unmarshal(b, &rd); err != nil {
		t.Fatal(err)
	}
	rd.Before, rd.Errors = nil, nil // as if nothing had been charged before the load
	nb, _ := json.Marshal(rd)
	if err := os.WriteFile(before, append(nb, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runMain(t, keyed(), "run", "--phase", "judge", "--out", dir, "--wait", "0s", "-q")
	if r.code != ExitUsage || !strings.Contains(r.err, trial.BeforeFile) || !strings.Contains(r.err, "changed after prepare") {
		t.Errorf("judge of changed readings: exit %d, want %d naming %s\n%s", r.code, ExitUsage, trial.BeforeFile, r.err)
	}
	noKey(t, "judge", r)
}

// The key and the run go together: a run prepared with a key is refused
// without it, one prepared without a key is refused with one (and warned
// of at prepare), and a key too short to be one is refused unshown.
func TestShardedRunKeyMismatch(t *testing.T) {
	t.Parallel()
	target := newPayServer(t, true)
	withKey := prepared(t, keyed(), target.URL, 1)
	r := runMain(t, nil, "run", "--phase", "load", "--shard", "0/1", "--out", withKey, "--wait", "0s")
	if r.code != ExitUsage || !strings.Contains(r.err, "prepared with a run key") || !strings.Contains(r.err, trial.RunKeyEnv) {
		t.Errorf("load without the key of a keyed run: exit %d, want %d naming %s\n%s", r.code, ExitUsage, trial.RunKeyEnv, r.err)
	}
	r = runMain(t, keyed(trial.RunKeyEnv, "another-key-just-as-long-as-the-first"), "run", "--phase", "judge", "--out", withKey, "--wait", "0s")
	if r.code != ExitUsage || !strings.Contains(r.err, "changed after prepare") {
		t.Errorf("judge with another key: exit %d, want %d\n%s", r.code, ExitUsage, r.err)
	}

	dir := t.TempDir()
	plain := runMain(t, nil, "run", writeScenario(t, payScenario), "--phase", "prepare", "--shards", "1", "--start-in", "0s",
		"--ops", "5", "--target", target.URL, "--out", dir)
	if plain.code != ExitOK || !strings.Contains(plain.err, "warning: "+trial.RunKeyEnv+" is not set") || !strings.Contains(plain.err, "not authenticated") {
		t.Errorf("prepare without a key: exit %d, want %d and a warning\n%s", plain.code, ExitOK, plain.err)
	}
	r = runMain(t, keyed(), "run", "--phase", "load", "--shard", "0/1", "--out", dir, "--wait", "0s")
	if r.code != ExitUsage || !strings.Contains(r.err, "no MAC") {
		t.Errorf("load with a key of a run prepared without: exit %d, want %d\n%s", r.code, ExitUsage, r.err)
	}
	if r := runMain(t, nil, "run", "--phase", "load", "--shard", "0/1", "--out", dir, "-q"); r.code != ExitOK {
		t.Errorf("load without a key of a run prepared without: exit %d\n%s", r.code, r.err)
	}

	short := runMain(t, keyed(trial.RunKeyEnv, "s3cr3t"), "run", writeScenario(t, payScenario), "--phase", "prepare", "--shards", "1",
		"--target", target.URL, "--out", t.TempDir())
	if short.code != ExitUsage || !strings.Contains(short.err, trial.RunKeyEnv) || strings.Contains(short.err, "s3cr3t") {
		t.Errorf("prepare with a 6-byte key: exit %d, want %d, the key not shown\n%s", short.code, ExitUsage, short.err)
	}
}

// A shard file holding another shard's ops under an edited header is
// refused by the judge, naming the file; one shard in two directories is
// refused by report merge, naming both.
func TestShardedRunRefusesSwappedAndDoubledShards(t *testing.T) {
	t.Parallel()
	target := newPayServer(t, true)
	dir := prepared(t, keyed(), target.URL, 2)
	for i := range 2 {
		if r := runMain(t, keyed(), "run", "--phase", "load", "--shard", fmt.Sprintf("%d/2", i), "--out", dir, "-q"); r.code != ExitOK {
			t.Fatalf("load %d: exit %d\n%s", i, r.code, r.err)
		}
	}
	s0 := filepath.Join(dir, trial.ShardFile(history.Shard{Index: 0, Count: 2}))
	s1 := filepath.Join(dir, trial.ShardFile(history.Shard{Index: 1, Count: 2}))
	b0, err := os.ReadFile(s0)
	if err != nil {
		t.Fatal(err)
	}
	b1, err := os.ReadFile(s1)
	if err != nil {
		t.Fatal(err)
	}

	// report merge: shard 1 in the run's directory and in a copy
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, filepath.Base(s1)), b1, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runMain(t, keyed(), "report", "merge", dir, other, "-q")
	if r.code != ExitUsage || !strings.Contains(r.err, s1) || !strings.Contains(r.err, filepath.Join(other, filepath.Base(s1))) {
		t.Errorf("report merge with shard 1 twice: exit %d, want %d naming both copies\n%s", r.code, ExitUsage, r.err)
	}

	header, rest, _ := bytes.Cut(b0, []byte("\n"))
	if !bytes.Contains(header, []byte(`"shard":"0/2"`)) {
		t.Fatalf("no shard 0/2 in the header %s", header)
	}
	header = bytes.Replace(header, []byte(`"shard":"0/2"`), []byte(`"shard":"1/2"`), 1)
	if err := os.WriteFile(s1, append(append(header, '\n'), rest...), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runMain(t, keyed(), "run", "--phase", "judge", "--out", dir, "--wait", "0s", "-q")
	if r.code != ExitUsage || !strings.Contains(r.err, s1) || !strings.Contains(r.err, "not the run's op") {
		t.Errorf("judge of shard 0's ops as shard 1: exit %d, want %d naming %s\n%s%s", r.code, ExitUsage, s1, r.out, r.err)
	}
	noKey(t, "judge", r)
}

// Prepare refuses a directory that holds a plain run, whose history the
// judge would replace, and a scenario with a literal secret in a body.
func TestPrepareRefusesPlainRunAndBodySecrets(t *testing.T) {
	t.Parallel()
	target := newPayServer(t, true)
	dir := t.TempDir()
	if r := runMain(t, nil, "run", writeScenario(t, payScenario), "--ops", "5", "--target", target.URL, "--out", dir, "-q"); r.code != ExitOK {
		t.Fatalf("plain run: exit %d\n%s", r.code, r.err)
	}
	hist, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r := runMain(t, keyed(), "run", writeScenario(t, payScenario), "--phase", "prepare", "--shards", "2", "--target", target.URL, "--out", dir)
	if r.code != ExitUsage || !strings.Contains(r.err, "already holds a run") {
		t.Errorf("prepare into a plain run's directory: exit %d, want %d\n%s", r.code, ExitUsage, r.err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "history.jsonl")); !bytes.Equal(after, hist) {
		t.Error("the plain run's history changed")
	}

	sc := writeScenario(t, strings.Replace(payScenario, `body: '{"amount": 100}'`, `body: '{"amount": 100, "api_key": "sk_live_in_body"}'`, 1))
	r = runMain(t, keyed(), "run", sc, "--phase", "prepare", "--shards", "2", "--out", t.TempDir(), "--target", target.URL)
	if r.code != ExitUsage || !strings.Contains(r.err, "operation.body") || !strings.Contains(r.err, "{{env") || strings.Contains(r.err, "sk_live_in_body") {
		t.Errorf("prepare of a body with a literal key: exit %d, want %d naming the field and the fix, not the key\n%s", r.code, ExitUsage, r.err)
	}
}
