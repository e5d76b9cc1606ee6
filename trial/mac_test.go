package trial

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// publish prepares scenario text against a new charges API and publishes
// it in a new directory, for shards, with key (nil for none).
func publish(t *testing.T, text string, shards int, key []byte) (string, string, *Manifest) {
	t.Helper()
	target := serve(t, &charges{n: map[string]int{}, idempotent: true})
	dir := t.TempDir()
	pre, err := Prepare(context.Background(), load(t, text), Options{Targets: []string{target}, Seed: 7, KeyNonce: 3})
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := pre.Publish(dir, Plan{Spec: text, Shards: shards, Overrides: Overrides{Ops: 20}, RunKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return dir, target, m
}

// A run prepared with a key is read with it alone: a manifest or readings
// changed by a byte, a missing key, another key, a removed MAC are
// refused, naming the file; the key is in no file.
func TestAuthenticatedRunDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := []byte("0123456789abcdef-run-key")
	dir, target, m := publish(t, scenario, 2, key)
	got, sc, err := ReadRun(ctx, []string{dir}, key, 0, nil)
	if err != nil || got.RunID != m.RunID {
		t.Fatalf("ReadRun(the run's key) = %v", err)
	}
	if _, err := Resume(sc, got, []string{dir}, Options{Targets: []string{target}}); err != nil {
		t.Fatalf("Resume(the run's key) = %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if bytes.Contains(b, key) || bytes.Contains(b, []byte(hex.EncodeToString(key))) {
			t.Errorf("%s holds the run key", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, MACFile)); err != nil {
		t.Fatalf("no %s: %v", MACFile, err)
	}

	refused := func(what string, keyGiven []byte, kind error, file string) {
		t.Helper()
		m, sc, err := ReadRun(ctx, []string{dir}, keyGiven, 0, nil)
		if err == nil && file == BeforeFile {
			_, err = Resume(sc, m, []string{dir}, Options{Targets: []string{target}})
		}
		if !errors.Is(err, kind) || !strings.Contains(err.Error(), file) || bytes.Contains([]byte(err.Error()), key) {
			t.Errorf("%s: %v, want %v naming %s", what, err, kind, file)
		}
	}
	refused("no key", nil, ErrRunKey, MACFile)
	refused("another key", []byte("another-key-of-16-bytes"), ErrTampered, ManifestFile)

	path := filepath.Join(dir, ManifestFile)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(map[string]any)) []byte {
		var doc map[string]any
		if err := json.Unmarshal(orig, &doc); err != nil {
			t.Fatal(err)
		}
		f(doc)
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for name, b := range map[string][]byte{
		"target changed": edit(func(d map[string]any) { d["targets"] = []string{"http://attacker.example:8080"} }),
		"header added": edit(func(d map[string]any) {
			d["spec"] = strings.Replace(d["spec"].(string), "  path: /pay\n", "  path: /pay\n  headers: {X-Token: '{{env \"API_TOKEN\"}}'}\n", 1)
		}),
		"a space added": append(bytes.Clone(orig), ' '),
	} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		refused(name, key, ErrTampered, ManifestFile)
	}
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}

	before := filepath.Join(dir, BeforeFile)
	rb, err := os.ReadFile(before)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(before, []byte(`{"run_id":"`+m.RunID+`"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused("before.json replaced", key, ErrTampered, BeforeFile)
	if err := os.WriteFile(before, rb, 0o644); err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(filepath.Join(dir, MACFile)); err != nil {
		t.Fatal(err)
	}
	refused("MAC removed", key, ErrRunKey, MACFile)

	plain, _, _ := publish(t, scenario, 1, nil)
	if _, _, err := ReadRun(ctx, []string{plain}, key, 0, nil); !errors.Is(err, ErrRunKey) {
		t.Errorf("a run prepared without a key, read with one: %v, want ErrRunKey", err)
	}
	if err := CheckRunKey([]byte("short")); err == nil || strings.Contains(err.Error(), "short") {
		t.Errorf("CheckRunKey(5 bytes) = %v, want refused, the key not shown", err)
	}
}

// loadShards makes every shard of the run in dir and writes its history.
func loadShards(t *testing.T, dir, target string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		m, sc, err := ReadRun(ctx, []string{dir}, nil, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ClaimShard(dir, m, history.Shard{Index: i, Count: n})
		if err != nil {
			t.Fatal(err)
		}
		h, err := LoadShard(ctx, sc, m, c, Options{Targets: []string{target}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Write(h); err != nil {
			t.Fatal(err)
		}
		h.Spill.Remove()
	}
}

// judgeDirs judges the run in dirs, as report merge does.
func judgeDirs(t *testing.T, target string, dirs ...string) (*Judged, error) {
	t.Helper()
	ctx := context.Background()
	m, sc, err := ReadRun(ctx, dirs, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	judge, err := Resume(sc, m, dirs, Options{Targets: []string{target}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := CollectShards(ctx, m, dirs, time.Now(), time.Millisecond, nil)
	if err != nil {
		return nil, err
	}
	j, err := judge.JudgeShards(ctx, m, set)
	if j != nil {
		j.History.Spill.Remove()
	}
	return j, err
}

// The judge refuses a shard file that holds another shard's ops under an
// edited header (shard 0's keys twice, shard 1's never), for drawn keys
// and keys rendered from .Seq and .User.
func TestJudgeRefusesAnotherShardsOps(t *testing.T) {
	t.Parallel()
	templated := strings.NewReplacer("  key: {header: Idempotency-Key}\n", "  key: {header: Idempotency-Key, value: 'k-{{.User}}-{{.Seq}}'}\n",
		"load:", "users: [alice, bob]\nload:").Replace(scenario)
	for name, text := range map[string]string{"drawn keys": scenario, "templated keys": templated} {
		t.Run(name, func(t *testing.T) {
			dir, target, _ := publish(t, text, 2, nil)
			loadShards(t, dir, target, 2)
			if j, err := judgeDirs(t, target, dir); err != nil || j.Measures.Load.Ops != 20 {
				t.Fatalf("judge of the shards as written: %v", err)
			}
			s0 := filepath.Join(dir, ShardFile(history.Shard{Index: 0, Count: 2}))
			s1 := filepath.Join(dir, ShardFile(history.Shard{Index: 1, Count: 2}))
			b, err := os.ReadFile(s0)
			if err != nil {
				t.Fatal(err)
			}
			header, rest, _ := bytes.Cut(b, []byte("\n"))
			if !bytes.Contains(header, []byte(`"shard":"0/2"`)) {
				t.Fatalf("header %s: no shard 0/2 to edit", header)
			}
			header = bytes.Replace(header, []byte(`"shard":"0/2"`), []byte(`"shard":"1/2"`), 1)
			if err := os.WriteFile(s1, append(append(header, '\n'), rest...), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = judgeDirs(t, target, dir)
			if !errors.Is(err, ErrShardFile) || !strings.Contains(err.Error(), s1) || !strings.Contains(err.Error(), "not the run's op") {
				t.Errorf("judge of shard 0's ops as shard 1: %v, want ErrShardFile naming %s", err, s1)
			}
		})
	}
}

// report merge given one shard in two directories refuses, naming both;
// one directory given twice is one copy.
func TestCollectShardsTwice(t *testing.T) {
	t.Parallel()
	dir, target, _ := publish(t, scenario, 2, nil)
	loadShards(t, dir, target, 2)
	if _, err := judgeDirs(t, target, dir, dir); err != nil {
		t.Errorf("one directory given twice: %v", err)
	}
	other := t.TempDir()
	name := ShardFile(history.Shard{Index: 1, Count: 2})
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = judgeDirs(t, target, dir, other)
	if !errors.Is(err, ErrShardTwice) || !strings.Contains(err.Error(), filepath.Join(dir, name)) || !strings.Contains(err.Error(), filepath.Join(other, name)) {
		t.Errorf("shard 1 in two directories: %v, want ErrShardTwice naming both", err)
	}
}

// Prepare's directory must hold no run at all: a plain run's history or
// report as much as a sharded run's files.
func TestCheckFreshPlainRun(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"history.jsonl", "report.json"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := CheckFresh(dir); !errors.Is(err, ErrRunExists) || !strings.Contains(err.Error(), name) {
			t.Errorf("CheckFresh(a dir with %s) = %v, want ErrRunExists naming it", name, err)
		}
	}
}
