package cmd

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// Exit codes and messages of issue 12, item 8, each through cmd.Main.

// countingServer is newPayServer that counts every request it receives.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	h := &payServer{idempotent: true, charges: map[string]int{}, answers: map[string][]byte{}}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func TestExitCodesOfBadValues(t *testing.T) {
	t.Parallel()
	// Each is refused in bounded time: an endless template stops at its
	// render limit, which -race slows several times over.
	bound := testenv.Bound(10 * time.Second)
	srv, requests := countingServer(t)
	for _, tc := range []struct {
		name    string
		yaml    string // replaces payScenario when set
		env     map[string]string
		args    []string
		code    ExitCode
		message string
	}{
		{name: "rate NaN", args: []string{"--rate", "NaN"}, code: ExitUsage, message: `bad rate "NaN"`},
		{name: "rate Inf", args: []string{"--rate", "+Inf"}, code: ExitUsage, message: "--rate"},
		{name: "spill-after -1", args: []string{"--spill-after", "-1"}, code: ExitUsage, message: "--spill-after -1: want 1 to"},
		{name: "spill-after past the bound", args: []string{"--spill-after", "20000000"}, code: ExitUsage, message: "or 0 to keep every attempt in memory"},
		{name: "attempts 2.5", yaml: strings.Replace(payScenario, "attempts: 4", "attempts: 2.5", 1), code: ExitUsage, message: "retry.attempts: want a whole number"},
		{name: "port 99999", args: []string{"--target", "http://127.0.0.1:99999"}, code: ExitUsage, message: "out of range"},
		{name: "CRLF in a token", yaml: strings.Replace(payScenario, "key: {header: Idempotency-Key}", "key: {header: Idempotency-Key}\n  headers: {Authorization: 'Bearer {{env \"TOKEN\"}}'}", 1),
			env: map[string]string{"TOKEN": "tok\r\nX-Evil: 1"}, code: ExitUsage, message: "line break"},
		{name: "endless template", yaml: strings.Replace(payScenario, `body: '{"amount": 100}'`, `body: '{"amount": 100{{range 100000000000000}}{{end}}}'`, 1), code: ExitUsage, message: "render limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := requests.Load()
			y := payScenario
			if tc.yaml != "" {
				y = tc.yaml
			}
			args := append([]string{"run", writeScenario(t, y), "--target", srv.URL}, tc.args...)
			start := time.Now()
			r := runMain(t, tc.env, args...)
			if r.code != tc.code || !strings.Contains(r.err, tc.message) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d saying %q", r.code, r.err, tc.code, tc.message)
			}
			if n := requests.Load() - before; n != 0 {
				t.Errorf("%d requests sent, want none", n)
			}
			if took := time.Since(start); took > bound {
				t.Errorf("took %v, want under %v", took, bound)
			}
		})
	}
}

// "amount":{{env "AMOUNT"}}, an unquoted number, is accepted and sent
// when the variable is set.
func TestEnvNumberInBody(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		mu.Lock()
		bodies = append(bodies, b.String())
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"counts":{}}`))
	}))
	defer srv.Close()
	y := strings.Replace(payScenario, `body: '{"amount": 100}'`, `body: '{"amount": {{env "AMOUNT"}}}'`, 1)
	y = strings.Replace(y, "load: {ops: 60, concurrency: 4}", "load: {ops: 3, concurrency: 1}", 1)
	r := runMain(t, map[string]string{"AMOUNT": "250"}, "run", writeScenario(t, y), "--target", srv.URL)
	if r.code == ExitUsage {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, b := range bodies {
		if b == `{"amount": 250}` {
			found = true
		}
	}
	if !found {
		t.Errorf("bodies sent %q, want {\"amount\": 250}", bodies)
	}
}

// An effect count of -1 is inconclusive (3), never a violation (1).
func TestNegativeCountInconclusive(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/counts" {
			w.Write([]byte(`{"counts":{"a":-1}}`))
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"x"}`))
	}))
	defer srv.Close()
	y := strings.Replace(payScenario, "    effects:\n      bulk: {path: /counts, value: \"$.counts\"}", "    effects:\n      per_key: {path: '/counts?k={{.Key}}', value: \"$.counts.a\"}", 1)
	r := runMain(t, nil, "run", writeScenario(t, y), "--target", srv.URL, "--seed", "1")
	if r.code != ExitInconclusive || !strings.Contains(r.out, "cannot be negative") {
		t.Errorf("exit %d, want %d saying a count cannot be negative\n%s%s", r.code, ExitInconclusive, r.out, r.err)
	}
}

// drop_ack at rate 1 hides every answer; the target answered them all, so
// the run is not "target unreachable" (exit 4).
func TestDropAckEverywhereIsNotUnreachable(t *testing.T) {
	t.Parallel()
	srv, _ := countingServer(t)
	y := strings.Replace(payScenario, "  - {kind: drop_ack, rate: 0.3}\n  - {kind: reset, rate: 0.1}", "  - {kind: drop_ack, rate: 1.0}", 1)
	r := runMain(t, nil, "run", writeScenario(t, y), "--target", srv.URL, "--seed", "1")
	if r.code == ExitRuntime || strings.Contains(r.out+r.err, "unreachable") {
		t.Errorf("drop_ack at rate 1: exit %d\n%s%s\nwant no 'target unreachable'", r.code, r.out, r.err)
	}
}

// An http:// URL to a TLS server says so, and how to fix it.
func TestHTTPToTLSHint(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	r := runMain(t, nil, "run", writeScenario(t, payScenario), "--target", strings.Replace(srv.URL, "https://", "http://", 1))
	if r.code != ExitRuntime || !strings.Contains(r.err, "hint: the target speaks TLS: use https://") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 4 with the TLS hint", r.code, r.err)
	}
}

// Saved runs that cannot lie: a name is a safe, unique directory; --out
// is checked before the load; "report written" only when it was.
func TestOutDirectories(t *testing.T) {
	t.Parallel()
	srv, requests := countingServer(t)
	base := t.TempDir()
	out := filepath.Join(base, "out")
	a := writeScenario(t, strings.Replace(payScenario, "name: pay", "name: '../x'", 1))
	b := writeScenario(t, payScenario)
	c := writeScenario(t, payScenario)
	r := runMain(t, nil, "run", a, b, c, "--target", srv.URL, "--seed", "1", "--out", out)
	if r.code != ExitOK || !strings.Contains(r.err, "report written to "+out) {
		t.Fatalf("exit %d\n%s", r.code, r.err)
	}
	for _, d := range []string{"x", "pay", "pay-2"} {
		if _, err := os.Stat(filepath.Join(out, d, "history.jsonl")); err != nil {
			t.Errorf("run %s: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "x")); err == nil {
		t.Errorf("name '../x' wrote outside --out")
	}
	if r := runMain(t, nil, "check", out); r.code != ExitOK {
		t.Errorf("check %s: exit %d\n%s", out, r.code, r.err)
	}

	// An --out that cannot be a directory: exit 4 before any request.
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o644)
	before := requests.Load()
	r = runMain(t, nil, "run", b, "--target", srv.URL, "--out", filepath.Join(file, "sub"))
	if r.code != ExitRuntime || !strings.Contains(r.err, "--out") || strings.Contains(r.err, "report written") {
		t.Errorf("unwritable --out: exit %d\n%s\nwant 4 naming --out, without 'report written'", r.code, r.err)
	}
	if n := requests.Load() - before; n != 0 {
		t.Errorf("unwritable --out: %d requests sent, want none", n)
	}

	// --out taken away during the run: the report is not written, and
	// stderr does not say it was.
	gone := filepath.Join(base, "gone")
	var once sync.Once
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			os.RemoveAll(gone)
			os.WriteFile(gone, nil, 0o644)
		})
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"counts":{}}`))
	}))
	defer srv2.Close()
	r = runMain(t, nil, "run", b, "--target", srv2.URL, "--out", gone)
	if r.code != ExitRuntime || strings.Contains(r.err, "report written") {
		t.Errorf("--out gone during the run: exit %d\n%s\nwant 4 without 'report written'", r.code, r.err)
	}
}

// A run interrupted after its load (during the quiet period) exits 130,
// not 3; its report is written.
func TestInterruptedDuringQuietExits130(t *testing.T) {
	t.Parallel()
	srv, requests := countingServer(t)
	y := strings.Replace(payScenario, "quiet: 10ms", "quiet: 1h", 1)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	done := make(chan ExitCode, 1)
	go func() {
		done <- Main(ctx, []string{"run", writeScenario(t, y), "--target", srv.URL, "--out", dir},
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) string { return "" })
	}()
	waitFor(t, func() bool { return requests.Load() >= 60 })
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case code := <-done:
		if code != ExitInterrupted {
			t.Errorf("interrupted in the quiet period: exit %d, want %d\n%s", code, ExitInterrupted, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("an interrupted run did not end")
	}
	// The oracle still read the state after the interruption.
	hist, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil || !strings.Contains(string(hist), `"type":"reading","oracle":"ledger","kind":"effects"`) {
		t.Errorf("interrupted run: history without the ledger's reading (%v):\n%.2000s", err, hist)
	}
}

// A second interrupt ends Main at once, while the first one's reading of
// the state is stuck on an oracle that never answers.
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	defer close(hang)
	var charged atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The oracle's reading before the load answers; after it, hangs.
		if r.URL.Path == "/counts" && !charged.Load() {
			w.Write([]byte(`{"counts":{}}`))
			return
		}
		if r.URL.Path == "/counts" {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		if r.Method == http.MethodPost {
			charged.Store(true)
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"x"}`))
	}))
	defer srv.Close()
	y := strings.Replace(payScenario, "load: {ops: 60, concurrency: 4}", "load: {duration: 1h, concurrency: 2}", 1)
	sigs := make(chan os.Signal, 2)
	ctx := context.WithValue(context.Background(), signalsKey{}, sigs)
	var out, errb syncBuffer
	done := make(chan ExitCode, 1)
	go func() {
		done <- Main(ctx, []string{"run", writeScenario(t, y), "--target", srv.URL},
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) string { return "" })
	}()
	waitFor(t, charged.Load) // the load has charged: the reading after it will hang
	sigs <- syscall.SIGINT   // stops the load; the oracle read then hangs
	time.Sleep(300 * time.Millisecond)
	select {
	case code := <-done:
		t.Fatalf("Main returned %d after one interrupt, while its oracle hangs: the test proves nothing\n%s", code, errb.String())
	default:
	}
	start := time.Now()
	sigs <- syscall.SIGINT
	select {
	case code := <-done:
		if code != ExitInterrupted {
			t.Errorf("second interrupt: exit %d, want %d", code, ExitInterrupted)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("second interrupt: Main took %v to return", took)
		}
		if !strings.Contains(errb.String(), "interrupted again") {
			t.Errorf("stderr does not say why it exits:\n%s", errb.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a second interrupt did not end Main")
	}
}

// syncBuffer is testenv.SyncBuffer: a command's output read while it runs.
type syncBuffer = testenv.SyncBuffer

// A file is written whole or not at all: a failed write leaves the old
// file and no temporary one.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := writeFile(path, func(f *os.File) error {
		f.WriteString("half a rep")
		return errors.New("disk full")
	})
	if err == nil {
		t.Fatal("writeFile with a failing writer = nil")
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("after a failed write the file holds %q, want the old %q", b, "old")
	}
	if err := writeFile(path, func(f *os.File) error { _, err := f.WriteString("new"); return err }); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if b, _ := os.ReadFile(path); string(b) != "new" || len(entries) != 1 {
		t.Errorf("after a write: %q and %d files, want \"new\" alone", b, len(entries))
	}
}
