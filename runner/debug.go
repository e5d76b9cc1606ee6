package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/scenarios"
)

// DebugTransport prints its first requests and answers (--http-debug),
// secrets masked: credential headers, the URL's password and query
// values. Bodies are shown up to debugBody bytes, on one line; the answer
// reaches the caller whole.
type DebugTransport struct {
	next http.RoundTripper
	w    io.Writer
	mu   sync.Mutex
	left int
	n    int
}

// NewDebugTransport traces the first n exchanges of next on w.
func NewDebugTransport(next http.RoundTripper, w io.Writer, n int) *DebugTransport {
	return &DebugTransport{next: next, w: w, left: n}
}

// debugBody is how much of a body a trace shows.
const debugBody = 1024

// RoundTrip implements http.RoundTripper.
func (d *DebugTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	d.mu.Lock()
	show := d.left > 0
	if show {
		d.left--
		d.n++
	}
	n := d.n
	d.mu.Unlock()
	if !show {
		return d.next.RoundTrip(req)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "> #%d %s %s\n", n, req.Method, redaction.URL(req.URL))
	writeHeaders(&b, "> ", req.Header)
	if req.ContentLength > 0 {
		fmt.Fprintf(&b, "> (body, %d bytes)\n", req.ContentLength)
	}
	resp, err := d.next.RoundTrip(req)
	if err != nil {
		fmt.Fprintf(&b, "< #%d error: %s\n", n, redaction.String(err.Error()))
		d.print(b.String())
		return nil, err
	}
	fmt.Fprintf(&b, "< #%d %s\n", n, resp.Status)
	writeHeaders(&b, "< ", resp.Header)
	prefix := make([]byte, debugBody)
	k, rerr := io.ReadFull(resp.Body, prefix)
	prefix = prefix[:k]
	if k > 0 {
		fmt.Fprintf(&b, "< %s\n", oneLine(string(bytes.ToValidUTF8(prefix, []byte("?")))))
	}
	d.print(b.String())
	if rerr == nil {
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(prefix), resp.Body), resp.Body}
	} else {
		resp.Body = readCloser{bytes.NewReader(prefix), resp.Body}
	}
	return resp, nil
}

func (d *DebugTransport) print(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	io.WriteString(d.w, s)
}

type readCloser struct {
	io.Reader
	io.Closer
}

// writeHeaders writes h sorted by name, one per line after prefix, the
// values of credential headers masked.
func writeHeaders(b *strings.Builder, prefix string, h http.Header) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := strings.Join(h[k], ", ")
		if redaction.SecretHeader(k) {
			v = redaction.Mask
		}
		fmt.Fprintf(b, "%s%s: %s\n", prefix, k, v)
	}
}

// DryRun writes what a run of sc would do (--dry-run): its targets, load,
// retries, faults, oracles and invariants, and its first requests
// rendered, secrets masked as DebugTransport masks them; it sends
// nothing. Its error is a template of the operation that does not render.
func DryRun(ctx context.Context, w io.Writer, sc *scenarios.Scenario, targets []*url.URL, getenv func(string) string, first int) error {
	l := sc.Load
	fmt.Fprintf(w, "== %s (dry run: nothing is sent)\n", sc.Name)
	for _, t := range targets {
		fmt.Fprintf(w, "target %s\n", redaction.URL(t))
	}
	var bound []string
	if l.Ops > 0 {
		bound = append(bound, fmt.Sprintf("%d ops", l.Ops))
	}
	if l.Duration > 0 {
		bound = append(bound, fmt.Sprintf("for %s", time.Duration(l.Duration)))
	}
	size := strings.Join(bound, " or ") // whichever comes first
	switch {
	case l.Rate > 0:
		fmt.Fprintf(w, "load: %s, open model at %g ops/s\n", size, float64(l.Rate))
	default:
		fmt.Fprintf(w, "load: %s, closed model with %d workers\n", size, l.Concurrency)
	}
	fmt.Fprintf(w, "retry: %d attempts, on %s\n", sc.Retry.Attempts, strings.Join(sc.Retry.On, ", "))
	for _, f := range sc.Faults {
		fmt.Fprintf(w, "fault: %s at rate %g\n", f.Kind, f.Rate)
	}
	for _, o := range sc.Oracles {
		fmt.Fprintf(w, "oracle: %s\n", o.Name)
	}
	for _, inv := range sc.Invariants {
		fmt.Fprintf(w, "invariant: %s %s\n", inv.Check, inv.Oracle)
	}
	t, err := scenarios.NewTemplate("operation", sc.Operation.Request, http.MethodPost, getenv)
	if err != nil {
		return err
	}
	for i := 0; i < first && (l.Ops == 0 || i < l.Ops); i++ {
		v := scenarios.Vars{Key: fmt.Sprintf("<key of op %d>", i), Seq: i, Attempt: 1, Run: "<run>"}
		if len(sc.Users) > 0 {
			v.User = sc.Users[i%len(sc.Users)]
		}
		req, err := t.Build(ctx, targets[0], v)
		if err != nil {
			return err
		}
		if h := sc.Operation.Key.Header; h != "" {
			req.Header.Set(h, v.Key)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "> op %d: %s %s\n", i, req.Method, redaction.URL(req.URL))
		writeHeaders(&b, "> ", req.Header)
		if req.Body != nil {
			body, _ := io.ReadAll(io.LimitReader(req.Body, debugBody))
			fmt.Fprintf(&b, "> %s\n", oneLine(string(body)))
		}
		io.WriteString(w, b.String())
	}
	return nil
}

// oneLine is s with every run of white space one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
