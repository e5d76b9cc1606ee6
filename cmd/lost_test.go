package cmd

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testfs"
)

// Issue 20, item 3 (nothing lost) and item 7 (an interrupt is recorded),
// and issue 21, item 2 (no file system needed beyond --out), each through
// cmd.Main.

// A disk that fills while the history spills: the run stops, reports the
// ops and attempts it sent (not ops 0), names where what was written is
// kept, exits 4, writes no history.jsonl that would be a run that never
// was, and still writes its --report files.
func TestSpillDiskFullReportsWhatWasSent(t *testing.T) {
	t.Parallel()
	disk := testfs.SmallDisk(t, 256<<10)
	srv, requests := countingServer(t)
	y := strings.Replace(payScenario, "load: {ops: 60, concurrency: 4}", "load: {ops: 100000, concurrency: 4}", 1)
	out, junit := t.TempDir(), filepath.Join(t.TempDir(), "junit.xml")
	r := runMain(t, nil, "run", writeScenario(t, y), "--target", srv.URL, "--spill-after", "1", "--tmp-dir", disk, "--out", out,
		"--report", "junit="+junit)
	if r.code != ExitRuntime {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, ExitRuntime, r.out, r.err)
	}
	m := regexp.MustCompile(`after (\d+) ops and (\d+) attempts were sent; what was written of it \(\d+ bytes of op and attempt records\) is in (\S+\.jsonl)`).FindStringSubmatch(r.err)
	if m == nil {
		t.Fatalf("stderr does not give the count and where the history is kept:\n%s", r.err)
	}
	ops, _ := strconv.Atoi(m[1])
	if ops == 0 || ops >= 100000 || int64(ops) > requests.Load() {
		t.Errorf("%d ops reported sent, the server saw %d requests: want the ops sent, the load stopped early", ops, requests.Load())
	}
	if fi, err := os.Stat(m[3]); err != nil || fi.Size() == 0 || filepath.Dir(m[3]) != disk {
		t.Errorf("the kept history %s: %v; want a file in --tmp-dir %s", m[3], err, disk)
	}
	if !strings.Contains(r.out, fmt.Sprintf("ops %s ", m[1])) || !strings.Contains(r.out, fmt.Sprintf("attempts %s,", m[2])) {
		t.Errorf("the report does not say what was sent (ops %s, attempts %s):\n%s", m[1], m[2], r.out)
	}
	if _, err := os.Stat(filepath.Join(out, "history.jsonl")); err == nil {
		t.Error("a history.jsonl was written of a history that was lost")
	}
	if b, err := os.ReadFile(junit); err != nil || !strings.Contains(string(b), "<error") {
		t.Errorf("--report junit: %v\n%s; want an error case", err, b)
	}
}

// A run needs no writable $TMPDIR: below --spill-after it writes nothing
// there, and past it (or in a sharded run's load and judge) its
// temporary files go to --out. The judge writes its --report file.
func TestReadOnlyTmpdir(t *testing.T) {
	t.Setenv("TMPDIR", testfs.ReadOnlyDir(t))
	srv := newPayServer(t, true)
	scenario := writeScenario(t, payScenario)
	for _, spill := range []string{"1000000", "1"} {
		out := t.TempDir()
		r := runMain(t, nil, "run", scenario, "--target", srv.URL, "--seed", "3", "--spill-after", spill, "--out", out)
		if r.code != ExitOK {
			t.Errorf("run --spill-after %s with a read-only TMPDIR: exit %d\n%s%s", spill, r.code, r.out, r.err)
		}
		if left, _ := filepath.Glob(filepath.Join(out, "idemcheck-*")); len(left) > 0 {
			t.Errorf("temporary files left in --out: %v", left)
		}
	}

	dir := t.TempDir()
	if r := runMain(t, keyed(), "run", scenario, "--phase", "prepare", "--shards", "2", "--start-in", "100ms", "--target", srv.URL, "--out", dir); r.code != ExitOK {
		t.Fatalf("prepare: exit %d\n%s", r.code, r.err)
	}
	for i := range 2 {
		if r := runMain(t, keyed(), "run", "--phase", "load", "--shard", fmt.Sprintf("%d/2", i), "--out", dir, "-q", "--spill-after", fmt.Sprint(i)); r.code != ExitOK {
			t.Fatalf("load shard %d/2 with a read-only TMPDIR: exit %d\n%s", i, r.code, r.err)
		}
	}
	junit := filepath.Join(t.TempDir(), "junit.xml")
	if r := runMain(t, keyed(), "run", "--phase", "judge", "--out", dir, "-q", "--report", "junit="+junit); r.code != ExitOK {
		t.Fatalf("judge with a read-only TMPDIR: exit %d\n%s", r.code, r.err)
	}
	if _, err := os.Stat(junit); err != nil {
		t.Errorf("judge: --report junit: %v", err)
	}
}

// Every failure of the judge writes its --report files, saying why.
func TestJudgeFailureWritesReports(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		dir  func(t *testing.T) string
		code ExitCode
	}{
		{"no manifest", func(t *testing.T) string { return t.TempDir() }, ExitUsage},
		{"no shard delivered", func(t *testing.T) string {
			dir := t.TempDir()
			srv := newPayServer(t, true)
			if r := runMain(t, keyed(), "run", writeScenario(t, payScenario), "--phase", "prepare", "--shards", "2", "--start-in", "0s", "--target", srv.URL, "--out", dir); r.code != ExitOK {
				t.Fatalf("prepare: exit %d\n%s", r.code, r.err)
			}
			return dir
		}, ExitInconclusive},
	} {
		t.Run(c.name, func(t *testing.T) {
			junit, md := filepath.Join(t.TempDir(), "junit.xml"), filepath.Join(t.TempDir(), "summary.md")
			r := runMain(t, keyed(), "run", "--phase", "judge", "--out", c.dir(t), "--wait", "10ms", "-q", "--report", "junit="+junit, "--report", "markdown="+md)
			if r.code != c.code {
				t.Fatalf("judge: exit %d, want %d\n%s", r.code, c.code, r.err)
			}
			b, err := os.ReadFile(junit)
			if err != nil || xml.Unmarshal(b, new(any)) != nil || !strings.Contains(string(b), "<error") {
				t.Errorf("junit (%v):\n%s\nwant a valid file with an error case", err, b)
			}
			if b, err := os.ReadFile(md); err != nil || !strings.Contains(string(b), "❌") {
				t.Errorf("markdown (%v):\n%s\nwant why it could not be judged", err, b)
			}
		})
	}
}

// A --report that is one of the files the run writes in --out, or that
// cannot be written, is refused before the first request.
func TestReportPathsCheckedBeforeTheLoad(t *testing.T) {
	srv, requests := countingServer(t)
	scenario := writeScenario(t, payScenario)
	out := t.TempDir()
	ro := testfs.ReadOnlyDir(t)
	for _, c := range []struct {
		report string
		code   ExitCode
		says   string
	}{
		{"json=" + filepath.Join(out, "history.jsonl"), ExitUsage, "history.jsonl is a file the run writes"},
		{"html=" + filepath.Join(out, "report.html"), ExitUsage, "report.html is a file the run writes"},
		{"junit=" + filepath.Join(ro, "junit.xml"), ExitRuntime, "cannot write in " + ro},
	} {
		r := runMain(t, nil, "run", scenario, "--target", srv.URL, "--out", out, "--report", c.report)
		if r.code != c.code || !strings.Contains(r.err, c.says) {
			t.Errorf("--report %s: exit %d\n%s\nwant %d saying %q", c.report, r.code, r.err, c.code, c.says)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
	// the judge's run directory holds the shards' files too
	r := runMain(t, keyed(), "run", "--phase", "judge", "--out", out, "--report", "json="+filepath.Join(out, "shard-0-of-2.jsonl"))
	if r.code != ExitUsage || !strings.Contains(r.err, "a file the run writes") {
		t.Errorf("judge --report over a shard file: exit %d\n%s", r.code, r.err)
	}
}

// bench overhead checks --out before it sends a request.
func TestBenchOverheadOutCheckedFirst(t *testing.T) {
	srv, requests := countingServer(t)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	r := runMain(t, nil, "bench", "overhead", "POST", srv.URL+"/pay", "-d", `{"amount":1}`, "--duration", "200ms", "--warmup", "0s",
		"--rate", "50", "--baseline-no-key", "--out", filepath.Join(file, "sub"))
	if r.code != ExitRuntime || !strings.Contains(r.err, "--out") {
		t.Errorf("exit %d\n%s\nwant 4 naming --out", r.code, r.err)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests sent before --out was found unwritable", n)
	}
}

// A run interrupted after its load (in the quiet period) is recorded as
// interrupted there, in report.json and the history's header; it is not
// met, and check of its directory says why.
func TestInterruptedAfterLoadIsNotMet(t *testing.T) {
	t.Parallel()
	srv, _ := countingServer(t)
	y := strings.Replace(payScenario, "quiet: 10ms", "quiet: 1h", 1)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var errb syncBuffer
	done := make(chan ExitCode, 1)
	go func() {
		done <- Main(ctx, []string{"run", writeScenario(t, y), "--target", srv.URL, "--out", dir},
			Streams{In: strings.NewReader(""), Out: &syncBuffer{}, Err: &errb}, func(string) string { return "" })
	}()
	inQuiet(t, &errb)
	cancel()
	if code := <-done; code != ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", code, ExitInterrupted, errb.String())
	}
	sum := readSummary(t, filepath.Join(dir, "report.json"))
	if !sum.Interrupted || sum.InterruptedIn != history.PhaseQuiet || sum.Result == checks.Met {
		t.Errorf("report.json: interrupted %v in %q, result %s; want interrupted in the quiet period, not met", sum.Interrupted, sum.InterruptedIn, sum.Result)
	}
	h := readHistory(t, filepath.Join(dir, "history.jsonl"))
	if !h.Meta.Interrupted || h.Meta.InterruptedIn != history.PhaseQuiet {
		t.Errorf("history header: interrupted %v in %q", h.Meta.Interrupted, h.Meta.InterruptedIn)
	}
	r := runMain(t, nil, "check", dir)
	if r.code != ExitInconclusive || !strings.Contains(r.out+r.err, "interrupted") {
		t.Errorf("check of an interrupted run: exit %d\n%s%s\nwant 3 saying it was interrupted", r.code, r.out, r.err)
	}
}

// The second Ctrl-C ends the process at once, and the history the load
// made is on disk all the same: saved as soon as the first came.
func TestSecondInterruptKeepsTheLoad(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, yaml, phase string
		// under way waits until the run is in the phase
		underWay func(t *testing.T, requests interface{ Load() int64 }, errb *syncBuffer)
		ops      int // the history keeps at least these ops
	}{
		{"in the load", strings.Replace(payScenario, "load: {ops: 60, concurrency: 4}", "load: {duration: 1h, concurrency: 2}", 1), history.PhaseLoad,
			func(t *testing.T, requests interface{ Load() int64 }, errb *syncBuffer) {
				// 40 requests: 10 ops begun at least, each sent at
				// most 4 times. (Waiting for 200 took more than 10 s
				// in a package whose tests hashed huge answers on both
				// processors: a request's few goroutine hand-offs each
				// waited out a time slice.)
				waitFor(t, func() bool { return requests.Load() >= 40 })
			}, 10},
		{"in the quiet period", strings.Replace(payScenario, "quiet: 10ms", "quiet: 1h", 1), history.PhaseQuiet,
			func(t *testing.T, _ interface{ Load() int64 }, errb *syncBuffer) { inQuiet(t, errb) }, 60},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, requests := countingServer(t)
			dir := t.TempDir()
			sigs := make(chan os.Signal, 2)
			ctx := context.WithValue(context.Background(), signalsKey{}, sigs)
			var errb syncBuffer
			done := make(chan ExitCode, 1)
			go func() {
				done <- Main(ctx, []string{"run", writeScenario(t, c.yaml), "--target", srv.URL, "--out", dir},
					Streams{In: strings.NewReader(""), Out: &syncBuffer{}, Err: &errb}, func(string) string { return "" })
			}()
			c.underWay(t, requests, &errb)
			sigs <- syscall.SIGINT
			waitFor(t, func() bool { return strings.Contains(errb.String(), "history is saved to") })
			// What a second Ctrl-C, which ends the process, leaves:
			h := readHistory(t, filepath.Join(dir, "history.jsonl"))
			if len(h.Ops) < c.ops || !h.Meta.Interrupted || h.Meta.InterruptedIn != c.phase {
				t.Errorf("history once interrupted: %d ops, interrupted %v in %q; want the load's (%d at least), interrupted in %q",
					len(h.Ops), h.Meta.Interrupted, h.Meta.InterruptedIn, c.ops, c.phase)
			}
			sigs <- syscall.SIGINT
			if code := <-done; code != ExitInterrupted {
				t.Errorf("exit %d, want %d", code, ExitInterrupted)
			}
			// the command goes on in this process: let it end before the
			// directory is removed
			waitFor(t, func() bool { _, err := os.Stat(filepath.Join(dir, "report.json")); return err == nil })
		})
	}
}

// inQuiet waits until the run says on stderr that its quiet period has
// begun: its load is over. (Waiting for the requests to stop for a while
// took a pause of a loaded machine for the load's end.)
func inQuiet(t *testing.T, errb *syncBuffer) {
	t.Helper()
	waitFor(t, func() bool { return strings.Contains(errb.String(), "quiet period 1h") })
}

// An audit interrupted mid-way is never held: its scorecard says it was
// interrupted and is inconclusive, its JUnit file has an error case (the
// checks the interrupt skipped would read green), and its saved history
// names the check the interrupt cut.
func TestInterruptedAuditIsNotHeld(t *testing.T) {
	t.Parallel()
	srv, requests := countingServer(t)
	dir := t.TempDir()
	junit := filepath.Join(dir, "junit.xml")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan ExitCode, 1)
	go func() {
		done <- Main(ctx, []string{"audit", "POST", srv.URL + "/pay", "-d", `{"amount":1}`, "--format", "json",
			"--report", "junit=" + junit, "--out", filepath.Join(dir, "out")},
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) string { return "" })
	}()
	waitFor(t, func() bool { return requests.Load() >= 40 })
	cancel()
	if code := <-done; code != ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", code, ExitInterrupted, errb.String())
	}
	var sc checks.Scorecard
	if err := json.Unmarshal([]byte(out.String()), &sc); err != nil {
		t.Fatalf("no JSON scorecard: %v\n%s", err, out.String())
	}
	if !sc.Interrupted || sc.Result == checks.Met {
		t.Errorf("scorecard: interrupted %v, result %s; want interrupted, not held", sc.Interrupted, sc.Result)
	}
	b, err := os.ReadFile(junit)
	var doc struct {
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
	}
	if err != nil || xml.Unmarshal(b, &doc) != nil || doc.Failures+doc.Errors == 0 || !strings.Contains(string(b), `name="interrupted"`) {
		t.Errorf("junit (%v): %d failures, %d errors:\n%s\nwant an interrupted error case", err, doc.Failures, doc.Errors, b)
	}
	h := readHistory(t, filepath.Join(dir, "out", "history.jsonl"))
	if !h.Meta.Interrupted || !strings.HasPrefix(h.Meta.InterruptedIn, "check ") && h.Meta.InterruptedIn != "before the checks" {
		t.Errorf("audit history: interrupted %v in %q; want the check it cut", h.Meta.Interrupted, h.Meta.InterruptedIn)
	}
}

// An answer whose header holds a control character is no answer the
// client can read (every attempt indeterminate), but the violation the
// state shows still fails the run: exit 1, not 4.
func TestFailedVerdictWhateverTheAnswers(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	charges := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodGet {
			json.NewEncoder(w).Encode(map[string]any{"counts": charges})
			return
		}
		charges[r.Header.Get("Idempotency-Key")]++ // no idempotency at all
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		buf.WriteString("HTTP/1.1 201 Created\r\nX-Trace: a\x01b\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
		buf.Flush()
		conn.Close()
	}))
	defer srv.Close()
	y := strings.Replace(payScenario, "  - {kind: drop_ack, rate: 0.3}\n  - {kind: reset, rate: 0.1}\n", "  - {kind: delay, rate: 0.01, delay: 1ms}\n", 1)
	y = strings.Replace(y, "load: {ops: 60, concurrency: 4}", "load: {ops: 10, concurrency: 2}", 1)
	r := runMain(t, nil, "run", writeScenario(t, y), "--target", srv.URL, "-q")
	if r.code != ExitFailed || !strings.Contains(r.out, "FAIL") {
		t.Errorf("exit %d, want %d with the violation\n%s%s", r.code, ExitFailed, r.out, r.err)
	}
}
