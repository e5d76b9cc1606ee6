package runner

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

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
