package runner

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/idemcheck/idemcheck/scenarios"
)

// answer is a RoundTripper that answers every request with body.
type answer string

func (a answer) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{Status: "201 Created", StatusCode: 201, Header: http.Header{"Set-Cookie": {"s=secret-cookie"}},
		Body: io.NopCloser(strings.NewReader(string(a))), Request: req}, nil
}

func TestDebugTransport(t *testing.T) {
	var w bytes.Buffer
	body := `{"id": "ch_1",` + "\n" + strings.Repeat("x", 2000) + `}`
	d := NewDebugTransport(answer(body), &w, 1)
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, "http://user:pa55word@api.test/charges?token=t0k3n", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer s3cr3t")
		resp, err := d.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if string(got) != body {
			t.Errorf("the traced answer's body is %d bytes, want the whole %d", len(got), len(body))
		}
	}
	out := w.String()
	if n := strings.Count(out, "> #"); n != 1 {
		t.Errorf("traced %d requests, want the first 1:\n%s", n, out)
	}
	for _, secret := range []string{"pa55word", "t0k3n", "s3cr3t", "secret-cookie"} {
		if strings.Contains(out, secret) {
			t.Errorf("the trace shows %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{"> #1 POST http://", "> Authorization: xxxxx", "> (body, 2 bytes)", "< #1 201 Created", `< {"id": "ch_1", xxx`} {
		if !strings.Contains(out, want) {
			t.Errorf("the trace lacks %q:\n%s", want, out)
		}
	}
}

func TestDryRun(t *testing.T) {
	sc, err := scenarios.Builtin("charges-lost-ack")
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse("http://user:pa55word@127.0.0.1:8080")
	var w bytes.Buffer
	if err := DryRun(context.Background(), &w, sc, []*url.URL{target}, func(string) string { return "" }, 2, nil); err != nil {
		t.Fatal(err)
	}
	out := w.String()
	for _, want := range []string{"== charges-lost-ack (dry run: nothing is sent)", "fault: drop_ack", "> op 0: POST", "> op 1: POST", "Idempotency-Key: <key of op 1>", "> Authorization: xxxxx"} {
		if !strings.Contains(out, want) {
			t.Errorf("DryRun lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "> op 2:") || strings.Contains(out, "pa55word") {
		t.Errorf("DryRun shows a third request or the password:\n%s", out)
	}
}

// TestDebugTransportEscapesTheAnswer: a body, a header or a status line
// with ESC sequences, CR, NUL, bidi controls or line separators is
// traced escaped (issue 20, item 5); the trace's own lines stay lines.
func TestDebugTransportEscapesTheAnswer(t *testing.T) {
	body := "\x1b]0;owned\x07\x1b[2J{\"id\":\"ch_1\"}\rPASS \x00\u202e\u2028\u0085\x9b"
	var w bytes.Buffer
	d := NewDebugTransport(hostileAnswer(body), &w, 1)
	req, _ := http.NewRequest(http.MethodPost, "http://api.test/charges", strings.NewReader(`{}`))
	req.Header.Set("X-Note", "a\x1b[1Ab")
	resp, err := d.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	out := w.String()
	for _, want := range []string{
		// on one line: CR, U+2028 and NEL are white space, a byte that is
		// not UTF-8 a ?
		`< \x1b]0;owned\x07\x1b[2J{"id":"ch_1"} PASS \x00\u202e ?` + "\n",
		"< #1 201 \\x1b[2JCreated\n", `< X-Evil: \x1b]8;;http://evil.example/\x1b\`, `> X-Note: a\x1b[1Ab`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the trace lacks %q:\n%s", want, out)
		}
	}
	for i, r := range out {
		if r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == '\u202e' || r == '\u2028') {
			t.Fatalf("the trace holds %U raw at byte %d:\n%q", r, i, out)
		}
	}
	if !utf8.ValidString(out) {
		t.Errorf("the trace is not UTF-8: %q", out)
	}
	if n := strings.Count(out, "\n"); n != 6 {
		t.Errorf("the trace has %d lines, want 6:\n%s", n, out)
	}
}

// hostileAnswer answers with body, a status line and a header holding
// escape sequences.
type hostileAnswer string

func (a hostileAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{Status: "201 \x1b[2JCreated", StatusCode: 201,
		Header: http.Header{"X-Evil": {"\x1b]8;;http://evil.example/\x1b\\"}},
		Body:   io.NopCloser(strings.NewReader(string(a))), Request: req}, nil
}

// TestDryRunEscapesTheScenario: a scenario name with an escape sequence
// or a CR is shown escaped by --dry-run.
func TestDryRunEscapesTheScenario(t *testing.T) {
	sc, err := scenarios.Builtin("charges-lost-ack")
	if err != nil {
		t.Fatal(err)
	}
	sc.Name = "pay\x1b]0;owned\x07\rok"
	target, _ := url.Parse("http://127.0.0.1:8080")
	var w bytes.Buffer
	if err := DryRun(context.Background(), &w, sc, []*url.URL{target}, func(string) string { return "" }, 1, nil); err != nil {
		t.Fatal(err)
	}
	out := w.String()
	if !strings.Contains(out, `== pay\x1b]0;owned\x07\rok (dry run`) || strings.ContainsAny(out, "\x1b\r\x07") {
		t.Errorf("DryRun does not escape the name:\n%q", out)
	}
}
