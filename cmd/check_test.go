package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reports"
)

// verdictsJSON is the verdicts and result of a JSON report, as bytes to
// compare.
func verdictsJSON(t *testing.T, out string) string {
	t.Helper()
	var s reports.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("not a JSON report: %v\n%s", err, out)
	}
	b, err := json.Marshal(struct {
		V any
		R any
		T any
	}{s.Verdicts, s.Result, s.Thresholds})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// check DIR judges from history.jsonl alone: report.json is output.
func TestCheckNeedsOnlyTheHistory(t *testing.T) {
	t.Parallel()
	srv := newPayServer(t, false)
	dir := t.TempDir()
	r := runMain(t, nil, "run", writeScenario(t, payScenario), "--target", srv.URL, "--seed", "7", "--out", dir, "--format", "json")
	if r.code != ExitFailed {
		t.Fatalf("run on a naive server: exit %d, want %d\n%s%s", r.code, ExitFailed, r.out, r.err)
	}
	live := verdictsJSON(t, r.out)
	if err := os.Remove(filepath.Join(dir, "report.json")); err != nil {
		t.Fatal(err)
	}
	rc := runMain(t, nil, "check", dir, "--format", "json")
	if rc.code != ExitFailed {
		t.Fatalf("check without report.json: exit %d, want %d\n%s%s", rc.code, ExitFailed, rc.out, rc.err)
	}
	if got := verdictsJSON(t, rc.out); got != live {
		t.Errorf("check without report.json judged otherwise than the run:\nrun:   %s\ncheck: %s", live, got)
	}

	// Judged in parts of 1 KB (every key's ops in one part, one part in
	// memory at a time), as a history of gigabytes is, the reports are
	// the same to the byte.
	for _, format := range []string{"json", "html"} {
		whole := runMain(t, nil, "check", dir, "--format", format)
		checkPartBytes = 1 << 10
		parts := runMain(t, nil, "check", dir, "--format", format)
		checkPartBytes = history.DefaultPartBytes
		if parts.code != whole.code || parts.out != whole.out || len(whole.out) < 1000 {
			t.Errorf("check in parts (%s): exit %d, want %d, and the same report:\nparts: %s\nwhole: %s", format, parts.code, whole.code, parts.out, whole.out)
		}
	}

	// --scenario judges the same evidence against other invariants: with
	// same_response alone, exactly_once is no longer judged (the naive
	// server's retries get new charge ids, so same_response fails).
	only := strings.Replace(payScenario, "  - {check: exactly_once, oracle: ledger}\n", "", 1)
	rs := runMain(t, nil, "check", dir, "--scenario", writeScenario(t, only))
	if rs.code != ExitFailed || strings.Contains(rs.out, "exactly_once") || !strings.Contains(rs.out, "FAIL    same_response") {
		t.Errorf("check --scenario (same_response only): exit %d, want 1 with same_response alone\n%s%s", rs.code, rs.out, rs.err)
	}

	// A history cut short is refused, never judged on part of the run.
	hp := filepath.Join(dir, "history.jsonl")
	b, err := os.ReadFile(hp)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	if err := os.WriteFile(hp, []byte(strings.Join(lines[:len(lines)-3], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := runMain(t, nil, "check", dir)
	if rt.code != ExitUsage || !strings.Contains(rt.err, "incomplete") {
		t.Errorf("check of a truncated history: exit %d, want %d saying incomplete\n%s", rt.code, ExitUsage, rt.err)
	}

	// A version 1 history is refused with a way forward.
	if err := os.WriteFile(hp, []byte(`{"type":"header","format_version":1,"scenario":"pay"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ro := runMain(t, nil, "check", dir)
	if ro.code != ExitUsage || !strings.Contains(ro.err, "--seed") {
		t.Errorf("check of a v1 history: exit %d, want %d with a hint to re-run\n%s", ro.code, ExitUsage, ro.err)
	}
}

// A run whose history spills to disk (--spill-after) is judged as the same
// run kept in memory, on a broken API and a correct one; its saved history
// is checked alike, and no spill file is left behind.
func TestSpilledRunJudgedAlike(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	// brief is a verdict without its times, which differ between runs.
	brief := func(out string) string {
		var s reports.Summary
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("not a JSON report: %v\n%s", err, out)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s ops=%d acked=%d\n", s.Result, s.Load.Ops, s.Load.Acked)
		for _, v := range s.Verdicts {
			fmt.Fprintf(&b, "%s %s %q", v.Invariant, v.Status, v.Summary)
			for _, e := range v.Examples {
				fmt.Fprintf(&b, " %d:%s:%d", e.Op, e.Key, len(e.Attempts))
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	ops := testenv.Pick("300", "1200") // it runs alone (TMPDIR): the long suite spills more
	for _, protected := range []bool{false, true} {
		sc := writeScenario(t, payScenario)
		args := []string{"run", sc, "--seed", "5", "--key-nonce", "9", "--ops", ops, "--format", "json"}
		mem := runMain(t, nil, append(args, "--target", newPayServer(t, protected).URL)...)
		dir := t.TempDir()
		spilled := runMain(t, nil, append(args, "--target", newPayServer(t, protected).URL, "--spill-after", "1", "--out", dir)...)
		if spilled.code != mem.code || brief(spilled.out) != brief(mem.out) {
			t.Errorf("protected %v: spilled run exit %d, in memory %d:\nspilled: %s\nmemory:  %s", protected, spilled.code, mem.code,
				brief(spilled.out), brief(mem.out))
		}
		if !strings.Contains(brief(spilled.out), "ops="+ops) {
			t.Errorf("protected %v: the spilled run's report: %s", protected, brief(spilled.out))
		}
		rc := runMain(t, nil, "check", dir, "--format", "json")
		if rc.code != spilled.code || verdictsJSON(t, rc.out) != verdictsJSON(t, spilled.out) {
			t.Errorf("protected %v: check of the spilled run: exit %d, want %d, same verdicts\n%s", protected, rc.code, spilled.code, rc.out)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("files left in TMPDIR: %v", left)
	}
}

// check without a usable temporary directory says so, with exit 4: its
// history is not to blame.
func TestCheckWithoutTempDir(t *testing.T) {
	srv := newPayServer(t, true)
	dir := t.TempDir()
	if r := runMain(t, nil, "run", writeScenario(t, payScenario), "--target", srv.URL, "--out", dir, "-q"); r.code != ExitOK {
		t.Fatalf("run: exit %d\n%s", r.code, r.err)
	}
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "gone"))
	checkPartBytes = 1 << 10
	defer func() { checkPartBytes = history.DefaultPartBytes }()
	r := runMain(t, nil, "check", dir)
	if r.code != ExitRuntime || strings.Contains(r.err, "written by 'idemcheck run") || !strings.Contains(r.err, "gone") {
		t.Errorf("check with TMPDIR gone: exit %d, want %d naming the directory, not the history\n%s", r.code, ExitRuntime, r.err)
	}
}

// A run that spills its history needs no $TMPDIR when it has an --out:
// its temporary files go there (and are gone once it ends). One whose
// disk fills writes no history.jsonl: TestSpillDiskFullReportsWhatWasSent.
func TestRunWithoutTempDirWritesNoHistory(t *testing.T) {
	srv := newPayServer(t, true)
	out := t.TempDir()
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "gone"))
	r := runMain(t, nil, "run", writeScenario(t, payScenario),
		"--target", srv.URL, "--spill-after", "1", "--out", out, "-q")
	if r.code != ExitOK {
		t.Errorf("exit %d, want %d: the history spills to --out\n%s", r.code, ExitOK, r.err)
	}
	if _, err := os.Stat(filepath.Join(out, "history.jsonl")); err != nil {
		t.Errorf("history.jsonl: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(out, "idemcheck-*")); len(left) > 0 {
		t.Errorf("temporary files left in --out: %v", left)
	}
}
