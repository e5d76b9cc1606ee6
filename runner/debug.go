package runner

import (
	"bytes"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"

	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/internal/termsafe"
)

// DebugTransport prints its first requests and answers (--http-debug),
// secrets masked: credential headers, the URL's password and query
// values. Bodies are shown up to debugBody bytes, on one line; the answer
// reaches the caller whole. What the target sent (status, headers, body,
// the text of an error) is printed through termsafe: its control
// characters are shown escaped, never obeyed by the terminal.
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
	termsafe.Fprintf(&b, "> #%d %s %s\n", n, req.Method, redaction.URL(req.URL))
	writeHeaders(&b, "> ", req.Header)
	if req.ContentLength > 0 {
		termsafe.Fprintf(&b, "> (body, %d bytes)\n", req.ContentLength)
	}
	resp, err := d.next.RoundTrip(req)
	if err != nil {
		termsafe.Fprintf(&b, "< #%d error: %s\n", n, redaction.String(err.Error()))
		d.print(b.String())
		return nil, err
	}
	termsafe.Fprintf(&b, "< #%d %s\n", n, resp.Status)
	writeHeaders(&b, "< ", resp.Header)
	prefix := make([]byte, debugBody)
	k, rerr := io.ReadFull(resp.Body, prefix)
	prefix = prefix[:k]
	if k > 0 {
		termsafe.Fprintf(&b, "< %s\n", oneLine(string(bytes.ToValidUTF8(prefix, []byte("?")))))
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
		termsafe.Fprintf(b, "%s%s: %s\n", prefix, k, v)
	}
}

// oneLine is s with every run of white space one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
