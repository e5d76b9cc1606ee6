package reports

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testsvc"
	"github.com/idemcheck/idemcheck/measure"
)

// tool finds an external program the test needs (Debian package pkg). A
// missing one skips the test, or fails it when IDEMCHECK_REQUIRE_SERVICES=1
// (CI), so CI can never pass by skipping.
func tool(t *testing.T, pkg string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%v not on PATH (apt-get install %s)", names, pkg)
	if os.Getenv(testsvc.RequireEnv) == "1" {
		t.Fatalf("%s, and %s=1", msg, testsvc.RequireEnv)
	}
	t.Skip(msg)
	return ""
}

// chromiumFlags run a headless browser that touches no network and keeps
// no state: a new empty profile per run.
func chromiumFlags(profile string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir=" + profile}
}

// screenshot renders the HTML page at path in headless Chromium and
// returns the PNG's path.
func screenshot(t *testing.T, chromium, page string, width, height int) string {
	t.Helper()
	dir := t.TempDir()
	png := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append(chromiumFlags(filepath.Join(dir, "profile")),
		fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot="+png, "file://"+page)
	out, err := exec.CommandContext(ctx, chromium, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, out)
	}
	if _, err := os.Stat(png); err != nil {
		t.Fatalf("chromium wrote no screenshot: %v\n%s", err, out)
	}
	if keep := os.Getenv("IDEMCHECK_SCREENSHOTS"); keep != "" {
		b, _ := os.ReadFile(png)
		name := filepath.Join(keep, filepath.Base(filepath.Dir(page))+"-"+filepath.Base(page)+".png")
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Log(err)
		}
	}
	return png
}

// loadFixture is a bigger run than fixture: 1500 ops over 10 s of a
// naive endpoint, slow between 4 and 5 s, with every kind of fault, and
// keys charged twice behind a dropped ack and a duplicate send.
func loadFixture(t *testing.T) *Summary {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 11))
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	h := &history.History{Meta: history.Meta{RunID: "run-2", Scenario: "charges-under-load", Source: "charges.yaml",
		Target: "http://127.0.0.1:8080", Seed: 7, KeyNonce: 99, Started: start, Ended: start.Add(10 * time.Second),
		Judge: history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: checks.ExactlyOnce, Oracle: "ledger"}}}}}
	effects := map[string]int{}
	kinds := []string{"drop_ack", "timeout", "duplicate", "reset", "delay"}
	for op := range 1500 {
		key := fmt.Sprintf("key-%04d", op)
		h.Ops = append(h.Ops, history.Op{ID: op, Key: key})
		at := time.Duration(op) * 10 * time.Second / 1500
		lat := func() time.Duration {
			base := 8*time.Millisecond + time.Duration(rng.ExpFloat64()*float64(4*time.Millisecond))
			if at > 4*time.Second && at < 5*time.Second {
				base += 40 * time.Millisecond
			}
			return base
		}
		n := 1
		effects[key] = 1
		if rng.IntN(12) == 0 {
			kind := kinds[rng.IntN(len(kinds))]
			a := history.Attempt{Op: op, N: n, Fault: kind, Intended: at, Start: at}
			switch kind {
			case "reset":
				a.Outcome, a.End, a.Err = history.Fail, at, "injected reset"
			case "drop_ack", "timeout":
				a.Outcome, a.End, a.Err = history.Info, at+lat(), "injected "+kind
				a.Answers = []history.Answer{{Hidden: true, Outcome: history.OK, Status: 201, End: a.End - time.Millisecond}}
				if op%3 == 0 {
					effects[key] = 2 // the naive endpoint charged the retry again
				}
			case "duplicate":
				a.Outcome, a.Status, a.End, a.Copies = history.OK, 201, at+lat(), 2
				a.Answers = []history.Answer{{Copy: 2, Outcome: history.OK, Status: 201, End: a.End + 2*time.Millisecond}}
				effects[key] = 2
			case "delay":
				a.Start = at + 30*time.Millisecond
				a.Outcome, a.Status, a.End = history.OK, 201, a.Start+lat()
			}
			h.Attempts = append(h.Attempts, a)
			if a.Outcome == history.OK {
				continue
			}
			n++
			at = a.End + 10*time.Millisecond
		}
		h.Attempts = append(h.Attempts, history.Attempt{Op: op, N: n, Outcome: history.OK, Status: 201,
			Intended: at, Start: at, End: at + lat(), Fields: map[string]string{"id": "ch_" + key}})
	}
	h.Readings = []history.Reading{{Oracle: "ledger", Kind: history.KindEffects, Effects: effects}}
	h.Sort()
	m := measure.Of(h)
	op := m.Latency.Op
	j := checks.Judge(h, checks.Measured{P50: op.P50, P90: op.P90, P99: op.P99, P999: op.P999, Max: op.Max, ErrorRate: m.Load.ErrorRate})
	return New("idemcheck test", h, m, j)
}
