package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"
)

// Terminal escapes (issue 20, item 5): what a target answers, what a
// scenario names and what a saved history holds reach stdout and stderr
// with their control characters, bidi controls and line separators
// escaped, in run, check and error lines.

// terminalAttack is an answer field that would clear the screen, set the
// window title, and overwrite its FAIL line with PASS.
const terminalAttack = "ch\x1b]0;owned\x07\x1b[2J\rPASS\u202e\u2028"

// terminalScenario keeps the answers' id, under lost acks against a
// server that charges every request: exactly_once fails, and its evidence
// shows the ids. Its name is hostile too (YAML's \e is ESC).
const terminalScenario = `name: "pay\e[2J\rok\u202e"
expect: pass
operation:
  method: POST
  path: /pay
  key: {header: Idempotency-Key}
  body: '{"amount": 100}'
load: {ops: 6, concurrency: 2}
retry: {attempts: 4, backoff: {initial: 1ms, max: 2ms}}
faults:
  - {kind: drop_ack, rate: 0.5}
response:
  fields: {id: "$.id"}
quiet: 1ms
oracles:
  - name: ledger
    effects:
      bulk: {path: /counts, value: "$.counts"}
invariants:
  - {check: exactly_once, oracle: ledger}
`

// terminalServer charges every POST, whatever its key, and answers it
// with terminalAttack as the id (JSON-escaped on the wire, raw once
// decoded).
func terminalServer(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		io.Copy(io.Discard, r.Body)
		switch {
		case r.URL.Path == "/counts":
			json.NewEncoder(w).Encode(map[string]any{"counts": counts})
		case r.Method == http.MethodPost:
			counts[r.Header.Get("Idempotency-Key")]++
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(map[string]string{"id": terminalAttack})
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// rawControl is the first rune of s, other than a newline, that a
// terminal must not receive raw, with its line.
func rawControl(s string) (rune, string, bool) {
	for i, r := range s {
		bad := r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") ||
			r != '\n' && unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
		if bad {
			start := strings.LastIndexByte(s[:i], '\n') + 1
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				end = len(s) - i
			}
			return r, s[start : i+end], true
		}
	}
	return 0, "", false
}

func noRawControl(t *testing.T, where, s string) {
	t.Helper()
	if r, line, ok := rawControl(s); ok {
		t.Errorf("%s: raw %U in line %q", where, r, line)
	}
}

func TestTerminalEscapesRunAndCheck(t *testing.T) {
	t.Parallel()
	srv := terminalServer(t)
	scenario := writeScenario(t, terminalScenario)
	dir := t.TempDir()
	r := runMain(t, nil, "run", scenario, "--target", srv.URL, "--seed", "3", "--out", dir)
	if r.code != ExitFailed {
		t.Fatalf("run on a server that charges every retry: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, ExitFailed, r.out, r.err)
	}
	noRawControl(t, "run stdout", r.out)
	noRawControl(t, "run stderr (progress)", r.err)
	for _, want := range []string{`id=ch\x1b]0;owned\x07\x1b[2J\rPASS\u202e\u2028`, `== pay\x1b[2J\rok\u202e (expect pass) ==`} {
		if !strings.Contains(r.out, want) {
			t.Errorf("run stdout does not show %q:\n%s", want, r.out)
		}
	}
	if !strings.Contains(r.err, `pay\x1b[2J\rok\u202e: started`) {
		t.Errorf("progress does not show the name escaped:\n%s", r.err)
	}
	for _, line := range strings.Split(r.out, "\n") {
		if strings.Contains(line, "exactly_once on ledger") && !strings.HasPrefix(line, "FAIL") {
			t.Errorf("the verdict line does not start with FAIL: %q", line)
		}
	}
	// check replays the saved history: its ids come back raw from JSON
	// (Markdown escapes the ] and the [, and makes a line break a space)
	for format, want := range map[string]string{"text": `\x1b]0;owned\x07\x1b[2J\rPASS`, "markdown": `\x1b\]0;owned\x07\x1b\[2J PASS`} {
		c := runMain(t, nil, "check", dir, "--format", format)
		if c.code != ExitFailed {
			t.Fatalf("check --format %s: exit %d, want %d\n%s", format, c.code, ExitFailed, c.err)
		}
		noRawControl(t, "check "+format+" stdout", c.out)
		noRawControl(t, "check "+format+" stderr", c.err)
		if !strings.Contains(c.out, want) {
			t.Errorf("check --format %s does not show the id escaped:\n%s", format, c.out)
		}
	}
}

// TestErrorLinesEscaped: an error quoting an answer is printed with its
// control characters escaped, its own lines (errors joined) kept.
func TestErrorLinesEscaped(t *testing.T) {
	var b bytes.Buffer
	err := errors.Join(withCode(ExitRuntime, fmt.Errorf("preflight: the target answered 500 %q-free: %s", "quote", "boom\x1b]0;owned\x07\rPASS\u202e")), errors.New("second"))
	report(&b, err)
	want := "idemcheck: preflight: the target answered 500 \"quote\"-free: boom\\x1b]0;owned\\x07\\rPASS\\u202e\nsecond\n"
	if b.String() != want {
		t.Errorf("error line = %q, want %q", b.String(), want)
	}
}
