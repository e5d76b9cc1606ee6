package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/reports"
)

// --abort-on-fail stops a 30 s load against a lab that ignores the key
// once a duplicate is proven, well within 2 s, and the report says when
// and why; the same run on the correct lab is never stopped and passes.
func TestAbortOnFail(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, bugs ...string) (result, *reports.Summary) {
		out := t.TempDir()
		r := runMain(t, nil, "run", "charges-lost-ack", "--target", startTestLab(t, memoryBackend(), bugs...),
			"--duration", "30s", "--concurrency", "4", "--abort-on-fail", "--out", out, "-q")
		raw, err := os.ReadFile(filepath.Join(out, "report.json"))
		if err != nil {
			t.Fatalf("run: exit %d, no report: %v\n%s%s", r.code, err, r.out, r.err)
		}
		var s reports.Summary
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return r, &s
	}
	t.Run("broken", func(t *testing.T) {
		t.Parallel()
		r, s := run(t, "no-key")
		if r.code != ExitFailed || s.Aborted == "" {
			t.Fatalf("exit %d, aborted %q; want %d and the load stopped early\n%s%s", r.code, s.Aborted, ExitFailed, r.out, r.err)
		}
		if load := s.Ended.Sub(s.Started); load > 2*time.Second || s.AbortedAt > 2*time.Second {
			t.Errorf("the load ran %s (stopped %s in); want it stopped within 2 s of the first duplicate", load, s.AbortedAt)
		}
		if !strings.Contains(s.Aborted, "failed on ops that had ended") || !strings.Contains(s.Why, "stopped early") {
			t.Errorf("aborted %q, why %q: want the proven failure named", s.Aborted, s.Why)
		}
		if !strings.Contains(r.out, "STOPPED EARLY") {
			t.Errorf("the text report does not say the load stopped early:\n%s", r.out)
		}
	})
	t.Run("correct", func(t *testing.T) {
		t.Parallel()
		r := runMain(t, nil, "run", "charges-lost-ack", "--target", startTestLab(t, memoryBackend()),
			"--ops", "150", "--concurrency", "4", "--abort-on-fail", "--out", t.TempDir(), "-q")
		if r.code != ExitOK || strings.Contains(r.out, "STOPPED EARLY") {
			t.Fatalf("correct lab with --abort-on-fail: exit %d, want 0 and no early stop\n%s%s", r.code, r.out, r.err)
		}
	})
}

// A threshold proven broken stops the load: with a p50 limit far below
// what the lab answers in, the ops slower than it pass half the load's
// ops long before its end.
func TestAbortOnFailThreshold(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sc := filepath.Join(dir, "slow.yaml")
	if err := os.WriteFile(sc, []byte(`name: slow
operation: {method: POST, path: /charges, body: '{"amount":100,"currency":"usd"}', key: {header: Idempotency-Key}, headers: {Authorization: "Bearer alice"}}
load: {ops: 200, concurrency: 4, abort_on_fail: true}
thresholds: {p50: 1us}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	r := runMain(t, nil, "run", sc, "--target", startTestLab(t, memoryBackend()), "--out", out, "-q")
	f, err := os.Open(filepath.Join(out, "history.jsonl"))
	if err != nil {
		t.Fatalf("exit %d: %v\n%s%s", r.code, err, r.out, r.err)
	}
	defer f.Close()
	h, err := history.Decode(f)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s%s", r.code, err, r.out, r.err)
	}
	if r.code != ExitFailed || !strings.Contains(h.Meta.Aborted, "threshold p50") {
		t.Fatalf("exit %d, aborted %q; want %d, stopped on p50\n%s%s", r.code, h.Meta.Aborted, ExitFailed, r.out, r.err)
	}
	if n := len(h.Ops); n > 110 {
		t.Errorf("%d ops sent; the p50 was proven broken after 101", n)
	}
}
