package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testfs"
	"github.com/idemcheck/idemcheck/measure"
	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/trial"
)

// shardedRun prepares a run of scenario against target in a new
// directory, runs the load shards (each through Main, as separate
// processes would, all at once) and judges it, every phase given the
// test's run key; it returns the judge's result and the directory.
func shardedRun(t *testing.T, target, scenario string, seed uint64, ops, shards int, run []int) (result, string) {
	t.Helper()
	dir := t.TempDir()
	r := runMain(t, keyed(), "run", scenario, "--phase", "prepare", "--shards", fmt.Sprint(shards), "--start-in", "300ms",
		"--seed", fmt.Sprint(seed), "--ops", fmt.Sprint(ops), "--target", target, "--out", dir)
	if r.code != ExitOK {
		t.Fatalf("prepare: exit %d\n%s%s", r.code, r.out, r.err)
	}
	var wg sync.WaitGroup
	loads := make([]result, shards)
	for _, i := range run {
		wg.Go(func() {
			// Odd shards spill their history to disk as they go: both
			// kinds are merged alike.
			loads[i] = runMain(t, keyed(), "run", "--phase", "load", "--shard", fmt.Sprintf("%d/%d", i, shards), "--out", dir, "-q",
				"--spill-after", fmt.Sprint(1-i%2))
		})
	}
	wg.Wait()
	for _, i := range run {
		if loads[i].code != ExitOK {
			t.Fatalf("load shard %d: exit %d\n%s%s", i, loads[i].code, loads[i].out, loads[i].err)
		}
	}
	return runMain(t, keyed(), "run", "--phase", "judge", "--out", dir, "--wait", "200ms", "-q"), dir
}

func readSummary(t *testing.T, path string) *reports.Summary {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sum reports.Summary
	if err := json.NewDecoder(f).Decode(&sum); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if sum.FormatVersion != reports.FormatVersion {
		t.Fatalf("%s: format_version %d, want %d", path, sum.FormatVersion, reports.FormatVersion)
	}
	return &sum
}

func readHistory(t *testing.T, path string) *history.History {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func statuses(vs []checks.Verdict) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "%s=%s ", v.Invariant, v.Status)
	}
	return b.String()
}

// The simulation of a sharded run: prepare, four load processes and a
// judge against the lab on loopback, with a seeded bug and without. The
// merged verdict is the one-process verdict, and the merged percentiles
// are those of one histogram over every shard's attempts.
func TestShardedRunMatchesOneProcess(t *testing.T) {
	t.Parallel()
	for _, bug := range []string{"", "no-key"} {
		t.Run("bug="+bug, func(t *testing.T) {
			var bugs []string
			if bug != "" {
				bugs = []string{bug}
			}
			target := startTestLab(t, memoryBackend(), bugs...)
			const seed, ops = 11, 120
			code, one, out := runBuiltin(t, target, "charges-lost-ack", seed, ops)
			judge, dir := shardedRun(t, target, "charges-lost-ack", seed, ops, 4, []int{0, 1, 2, 3})
			sum := readSummary(t, filepath.Join(dir, "report.json"))
			if judge.code != code || sum.Result != one.Result || statuses(sum.Verdicts) != statuses(one.Verdicts) {
				t.Errorf("sharded: exit %d, %s, %s; one process: exit %d, %s, %s\nsharded:\n%s%s\none process:\n%s",
					judge.code, sum.Result, statuses(sum.Verdicts), code, one.Result, statuses(one.Verdicts), judge.out, judge.err, out)
			}
			want := checks.Met
			if bug != "" {
				want = checks.NotMet
			}
			if sum.Result != want {
				t.Errorf("sharded run with bug %q: %s (%s), want %s", bug, sum.Result, sum.Why, want)
			}
			if sum.Load.Ops != ops || sum.Seed != seed {
				t.Errorf("sharded run: %d ops, seed %d; want %d, %d", sum.Load.Ops, sum.Seed, ops, seed)
			}
			// Each shard's histogram, merged, is the run's.
			attempts, opsH := measure.NewHistogram(), measure.NewHistogram()
			for i := range 4 {
				h := readHistory(t, filepath.Join(dir, trial.ShardFile(history.Shard{Index: i, Count: 4})))
				a, o := measure.NewHistogram(), measure.NewHistogram()
				for op := range h.Ops {
					as := h.AttemptsOf(op)
					for _, x := range as {
						if x.Outcome == history.OK && x.Fault == "" {
							measure.Record(a, x.Latency())
						}
					}
					measure.Record(o, history.OpLatency(as))
				}
				attempts.Merge(a)
				opsH.Merge(o)
			}
			// as the report gives them, in ms
			merged := reports.NewFrom("", history.Meta{}, nil, measure.Measures{Latency: measure.Latency{
				Attempt: measure.PercentilesOf(attempts), Op: measure.PercentilesOf(opsH)}}, checks.Judgement{}, nil).Latency
			if got, want := sum.Latency.Attempt, merged.Attempt; got != want {
				t.Errorf("merged attempt percentiles %+v, want the shards' histograms merged: %+v", got, want)
			}
			if got, want := sum.Latency.Op, merged.Op; got != want {
				t.Errorf("merged op percentiles %+v, want %+v", got, want)
			}
			// The merged history is a run's: check judges it again alike.
			r := runMain(t, nil, "check", dir)
			if r.code != judge.code {
				t.Errorf("check on the judged run: exit %d, the judge %d\n%s%s", r.code, judge.code, r.out, r.err)
			}
		})
	}
}

// A shard that never delivers its history leaves the run inconclusive
// (exit 3), never met; the judge says which.
func TestShardedRunLostShardIsInconclusive(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	judge, dir := shardedRun(t, target, "charges-lost-ack", 5, 40, 3, []int{0, 2})
	if judge.code != ExitInconclusive {
		t.Fatalf("a run that lost shard 1: exit %d, want %d\n%s%s", judge.code, ExitInconclusive, judge.out, judge.err)
	}
	sum := readSummary(t, filepath.Join(dir, "report.json"))
	if sum.Result != checks.Inconclusive || !strings.Contains(sum.Why, "shard 1") {
		t.Errorf("result %s (%s), want inconclusive naming shard 1", sum.Result, sum.Why)
	}
	// The judge ran with -q: the warning, not the waiting.
	if !strings.Contains(judge.err, "1 of 3 shards missing (1)") || strings.Contains(judge.err, "waiting for") {
		t.Errorf("stderr does not warn of the missing shard 1, or shows the wait under -q:\n%s", judge.err)
	}
	again := runMain(t, keyed(), "run", "--phase", "judge", "--out", dir, "--wait", "200ms")
	if !strings.Contains(again.err, "waiting for 1 of 3 shards' histories (1)") {
		t.Errorf("a judge without -q does not say it waits for shard 1:\n%s", again.err)
	}
}

// A lost shard that did send its ops changed the whole state (a like
// counter): a correct API is not accused of the likes it added.
func TestShardedRunLostShardWholeState(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	dir := t.TempDir()
	r := runMain(t, nil, "run", "likes-duplicate", "--phase", "prepare", "--shards", "2", "--start-in", "200ms", "--ops", "40", "--target", target, "--out", dir)
	if r.code != ExitOK {
		t.Fatalf("prepare: exit %d\n%s", r.code, r.err)
	}
	for i := range 2 {
		if r := runMain(t, nil, "run", "--phase", "load", "--shard", fmt.Sprintf("%d/2", i), "--out", dir, "-q"); r.code != ExitOK {
			t.Fatalf("load %d: exit %d\n%s", i, r.code, r.err)
		}
	}
	lost := filepath.Join(dir, trial.ShardFile(history.Shard{Index: 1, Count: 2}))
	if err := os.Rename(lost, lost+".lost"); err != nil {
		t.Fatal(err)
	}
	r = runMain(t, nil, "run", "--phase", "judge", "--out", dir, "--wait", "0s", "-q")
	if r.code != ExitInconclusive {
		t.Errorf("a correct like counter that lost a shard that sent its likes: exit %d, want %d\n%s%s", r.code, ExitInconclusive, r.out, r.err)
	}
}

// A phase refuses the flags its manifest fixes, or that it has no use
// for, and prepare refuses a scenario with a secret written in it.
func TestShardedRunRefusesFlags(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--phase", "load", "--shard", "0/2", "--out", "d", "--ops", "5"},
		{"run", "--phase", "load", "--shard", "0/2", "--out", "d", "--seed", "5"},
		{"run", "--phase", "judge", "--out", "d", "--rate", "5"},
		{"run", "--phase", "load", "--shard", "0/2", "--out", "d", "--report", "junit=j.xml"},
		{"run", "x.yaml", "--phase", "prepare", "--shards", "2", "--out", "d", "--format", "json"},
	} {
		if r := runMain(t, nil, args...); r.code != ExitUsage || !strings.Contains(r.err, "does not apply to --phase") {
			t.Errorf("%q: exit %d, want %d\n%s", args, r.code, ExitUsage, r.err)
		}
	}
	sc := writeScenario(t, strings.Replace(payScenario, "operation:", "operation:\n  headers:\n    Authorization: Bearer sk_live_abc123", 1))
	r := runMain(t, nil, "run", sc, "--phase", "prepare", "--shards", "2", "--out", t.TempDir(), "--target", "http://127.0.0.1:1")
	if r.code != ExitUsage || !strings.Contains(r.err, "operation.headers.Authorization") || strings.Contains(r.err, "sk_live_abc123") {
		t.Errorf("prepare of a scenario with a literal token: exit %d, want %d naming the field, not the token\n%s", r.code, ExitUsage, r.err)
	}
}

// The judge refuses a shard history of another run in the directory, and
// a load refuses a shard that already ran.
func TestShardedRunRefusesMixedRuns(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	_, dir1 := shardedRun(t, target, "charges-lost-ack", 5, 20, 2, []int{0, 1})
	_, dir2 := shardedRun(t, target, "charges-lost-ack", 6, 20, 2, []int{0})
	name := trial.ShardFile(history.Shard{Index: 1, Count: 2})
	b, err := os.ReadFile(filepath.Join(dir1, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir2, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runMain(t, keyed(), "run", "--phase", "judge", "--out", dir2, "--wait", "0s")
	if r.code != ExitUsage || !strings.Contains(r.err, "two runs share this directory") {
		t.Errorf("judge of mixed runs: exit %d, want %d naming the mix-up\n%s", r.code, ExitUsage, r.err)
	}
	r = runMain(t, keyed(), "run", "--phase", "load", "--shard", "0/2", "--out", dir1)
	if r.code != ExitUsage || !strings.Contains(r.err, "already ran") || !strings.Contains(r.err, "hint: a shard runs once") {
		t.Errorf("a shard run twice: exit %d, want %d and the claim's hint\n%s", r.code, ExitUsage, r.err)
	}
	r = runMain(t, keyed(), "run", "charges-lost-ack", "--phase", "prepare", "--shards", "2", "--out", dir1, "--target", target)
	if r.code != ExitUsage || !strings.Contains(r.err, "already holds a run") || !strings.Contains(r.err, "hint: give each sharded run a directory of its own") {
		t.Errorf("prepare into a run's directory: exit %d, want %d and trial.ErrRunExists's hint\n%s", r.code, ExitUsage, r.err)
	}
}

func TestShardAuto(t *testing.T) {
	env := map[string]string{"JOB_COMPLETION_INDEX": "2"}
	sh, err := parseShardFlag("auto/4", func(k string) string { return env[k] })
	if err != nil || sh.String() != "2/4" {
		t.Errorf("auto/4 with JOB_COMPLETION_INDEX=2 = %v, %v", sh, err)
	}
	env["JOB_COMPLETION_INDEX"] = "4"
	if _, err := parseShardFlag("auto/4", func(k string) string { return env[k] }); err == nil {
		t.Error("auto/4 with JOB_COMPLETION_INDEX=4 accepted")
	}
	if _, err := parseShardFlag("auto/4", func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "JOB_COMPLETION_INDEX") {
		t.Errorf("auto/4 without JOB_COMPLETION_INDEX: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, args := range [][]string{
		{"run", "charges-lost-ack", "--phase", "prepare", "--shards", "4", "--out", "/runs/x", "--target", "http://api:8080"},
		{"run", "--phase", "load", "--shard", "auto/4", "--out", "/runs/x"},
		{"run", "--phase", "judge", "--out", "/runs/x", "--wait", "30m", "--report", "junit=/runs/x/junit.xml"},
		{"run", "charges.yaml", "--target", "http://api:8080"},
		{"audit", "POST", "http://api/charges", "-d", "{}"},
		{"version"},
	} {
		if err := Validate(args); err != nil {
			t.Errorf("Validate(%q) = %v, want valid", args, err)
		}
	}
	for _, args := range [][]string{
		{"run", "--phase", "load", "--shard", "4/4", "--out", "/runs/x"},
		{"run", "--phase", "load", "--out", "/runs/x"},
		{"run", "--phase", "load", "--shard", "0/4"},
		{"run", "x.yaml", "--phase", "judge", "--out", "/runs/x"},
		{"run", "--phase", "prepare", "--shards", "4", "--out", "/runs/x"},
		{"run", "x.yaml", "--phase", "prepare", "--out", "/runs/x"},
		{"run", "--phase", "judge", "--out", "/runs/x", "--shards", "4"},
		{"run", "--phase", "merge", "--out", "/runs/x"},
		{"run", "x.yaml", "--shard", "0/4"},
		{"run", "--phase", "judge", "--out", "/runs/x", "--report", "xml=/a"},
		{"run", "x.yaml", "--no-such-flag"},
		{"no-such-command"},
	} {
		if err := Validate(args); err == nil {
			t.Errorf("Validate(%q) = nil, want an error", args)
		}
	}
}

// report merge judges shards saved in directories of their own.
func TestReportMerge(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend(), "no-key")
	_, dir := shardedRun(t, target, "charges-lost-ack", 9, 40, 2, []int{0, 1})
	// as if each process had its own volume
	prep, s0, s1, out := t.TempDir(), t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "merged")
	for src, dst := range map[string]string{trial.ManifestFile: prep, trial.MACFile: prep, trial.BeforeFile: prep, "shard-0-of-2.jsonl": s0, "shard-1-of-2.jsonl": s1} {
		b, err := os.ReadFile(filepath.Join(dir, src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, src), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runMain(t, keyed(), "report", "merge", prep, s0, s1, "--out", out, "-q")
	if r.code != ExitFailed {
		t.Fatalf("report merge of a run on no-key: exit %d, want %d\n%s%s", r.code, ExitFailed, r.out, r.err)
	}
	if sum := readSummary(t, filepath.Join(out, "report.json")); sum.Load.Ops != 40 || sum.Result != checks.NotMet {
		t.Errorf("merged: %d ops, %s; want 40 ops, not_met", sum.Load.Ops, sum.Result)
	}
	// without shard 1: the duplicates caught on shard 0 still stand
	r = runMain(t, keyed(), "report", "merge", prep, s0, "-q")
	if r.code != ExitFailed || !strings.Contains(r.err, "1 of 2 shards missing") {
		t.Errorf("report merge without shard 1: exit %d, want %d with a warning\n%s%s", r.code, ExitFailed, r.out, r.err)
	}
}

// A target with a secret is not kept in the manifest: the load and judge
// phases are given it again, and a different one is refused.
func TestShardedRunSecretTarget(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	secret := strings.Replace(target, "http://", "http://user:s3cret@", 1)
	dir := t.TempDir()
	r := runMain(t, nil, "run", "charges-lost-ack", "--phase", "prepare", "--shards", "1", "--start-in", "0s", "--ops", "10", "--target", secret, "--out", dir)
	if r.code != ExitOK {
		t.Fatalf("prepare: exit %d\n%s", r.code, r.err)
	}
	b, err := os.ReadFile(filepath.Join(dir, trial.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cret") || strings.Contains(r.err, "s3cret") {
		t.Errorf("the manifest or stderr keeps the target's password:\n%s\n%s", b, r.err)
	}
	r = runMain(t, nil, "run", "--phase", "load", "--shard", "0/1", "--out", dir)
	if r.code != ExitUsage || !strings.Contains(r.err, "carries a secret") {
		t.Errorf("load without the target again: exit %d\n%s", r.code, r.err)
	}
	for _, other := range []string{strings.Replace(target, "http://", "http://user:s3cret@x", 1), strings.Replace(target, "http://", "http://user:wrong@", 1)} {
		r = runMain(t, nil, "run", "--phase", "load", "--shard", "0/1", "--out", dir, "--target", other)
		if r.code != ExitUsage || !strings.Contains(r.err, "is not the run's target") {
			t.Errorf("load with another target (%s): exit %d\n%s", redactArg(other), r.code, r.err)
		}
	}
	r = runMain(t, nil, "run", "--phase", "load", "--shard", "0/1", "--out", dir, "--target", secret, "-q")
	if r.code != ExitOK {
		t.Fatalf("load: exit %d\n%s", r.code, r.err)
	}
	r = runMain(t, nil, "run", "--phase", "judge", "--out", dir, "--target", secret, "-q")
	if r.code != ExitOK || strings.Contains(r.out+r.err, "s3cret") {
		t.Errorf("judge: exit %d, or the password shown\n%s%s", r.code, r.out, r.err)
	}
}

// The phases may be started at once (kubectl apply): a load started
// before prepare waits for the manifest, up to --wait.
func TestLoadWaitsForTheManifest(t *testing.T) {
	t.Parallel()
	target := startTestLab(t, memoryBackend())
	dir := t.TempDir()
	r := runMain(t, keyed(), "run", "--phase", "load", "--shard", "0/1", "--out", dir, "--wait", "0s")
	if r.code != ExitUsage || !strings.Contains(r.err, "no manifest.json") || !strings.Contains(r.err, "hint: prepare the run first") {
		t.Errorf("load without a manifest and no wait: exit %d, want %d and trial.ErrNoManifest's hint\n%s", r.code, ExitUsage, r.err)
	}
	var errb syncBuffer
	done := make(chan ExitCode, 1)
	go func() {
		done <- Main(context.Background(), []string{"run", "--phase", "load", "--shard", "0/1", "--out", dir, "--wait", "20s", "-q"},
			Streams{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &errb}, func(k string) string { return keyed()[k] })
	}()
	// Prepare once the load says it waits: a sleep could end first on a
	// loaded machine, and the load would then find the manifest there.
	waitFor(t, func() bool { return strings.Contains(errb.String(), "waiting for manifest.json") })
	p := runMain(t, keyed(), "run", "charges-lost-ack", "--phase", "prepare", "--shards", "1", "--start-in", "0s", "--ops", "10", "--target", target, "--out", dir)
	if p.code != ExitOK {
		t.Fatalf("prepare: exit %d\n%s", p.code, p.err)
	}
	if code := <-done; code != ExitOK {
		t.Errorf("load started before prepare: exit %d\n%s", code, errb.String())
	}
}

// The disk, not the run, is to blame when --tmp-dir cannot hold a
// history: a load process that lost its record writes no shard file (the
// judge finds the shard missing) and keeps its claim; a judge that cannot
// merge says so; both exit 4.
func TestShardedRunWithoutTempDir(t *testing.T) {
	t.Parallel()
	full := testfs.SmallDisk(t, 4096)
	target := startTestLab(t, memoryBackend())
	dir := t.TempDir()
	r := runMain(t, nil, "run", "charges-lost-ack", "--phase", "prepare", "--shards", "2", "--start-in", "200ms",
		"--seed", "3", "--ops", "40", "--target", target, "--out", dir)
	if r.code != ExitOK {
		t.Fatalf("prepare: exit %d\n%s%s", r.code, r.out, r.err)
	}
	lost := runMain(t, nil, "run", "--phase", "load", "--shard", "0/2", "--out", dir, "-q", "--spill-after", "1", "--tmp-dir", full)
	if lost.code != ExitRuntime || !strings.Contains(lost.err, "no shard file written") || !strings.Contains(lost.err, "ops and") {
		t.Errorf("load on a full disk: exit %d, want %d saying what was sent and that no shard file was written\n%s", lost.code, ExitRuntime, lost.err)
	}
	if _, err := os.Stat(filepath.Join(dir, trial.ShardFile(history.Shard{Index: 0, Count: 2}))); !os.IsNotExist(err) {
		t.Errorf("a shard file was written for a lost history: %v", err)
	}
	if again := runMain(t, nil, "run", "--phase", "load", "--shard", "0/2", "--out", dir, "-q"); again.code != ExitUsage || !strings.Contains(again.err, "taken") {
		t.Errorf("the lost shard run again: exit %d, want its claim kept (exit %d)\n%s", again.code, ExitUsage, again.err)
	}
	if ok := runMain(t, nil, "run", "--phase", "load", "--shard", "1/2", "--out", dir, "-q"); ok.code != ExitOK {
		t.Fatalf("load 1/2: exit %d\n%s", ok.code, ok.err)
	}
	j := runMain(t, nil, "run", "--phase", "judge", "--out", dir, "--wait", "100ms", "-q", "--tmp-dir", testfs.SmallDisk(t, 4096))
	if j.code != ExitRuntime || !strings.Contains(j.err, "--tmp-dir") {
		t.Errorf("judge on a full disk: exit %d, want %d with a hint on --tmp-dir\n%s", j.code, ExitRuntime, j.err)
	}
	if j := runMain(t, nil, "run", "--phase", "judge", "--out", dir, "--wait", "100ms", "-q"); j.code != ExitInconclusive {
		t.Errorf("judge with shard 0 lost: exit %d, want %d\n%s", j.code, ExitInconclusive, j.err)
	}
}
