package cmd

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/idemcheck/idemcheck/internal/h1"
	redaction "github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

// clientFlags are how idemcheck connects to the API: TLS trust and client
// certificates, and a trace of the first requests. HTTP(S)_PROXY and
// NO_PROXY from the environment are honoured for every request (net/http
// never proxies loopback addresses).
type clientFlags struct {
	Insecure   bool
	CACert     string
	ClientCert string
	ClientKey  string
	// HTTPDebug prints the first HTTPDebug requests and answers on stderr,
	// secrets masked; 0 prints none.
	HTTPDebug int
}

func (c *clientFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&c.Insecure, "insecure", false, "do not verify the API's TLS certificate (a test server with a self-signed one); prefer --ca-cert")
	fs.StringVar(&c.CACert, "ca-cert", "", "trust this PEM file's certificates too (a private CA)")
	fs.StringVar(&c.ClientCert, "client-cert", "", "a PEM client certificate for mutual TLS (with --client-key)")
	fs.StringVar(&c.ClientKey, "client-key", "", "the PEM key of --client-cert")
	fs.IntVar(&c.HTTPDebug, "http-debug", 0, "print the first N requests and answers on stderr, secrets masked (--http-debug alone: 10)")
	fs.Lookup("http-debug").NoOptDefVal = "10"
}

// transport is the HTTP transport of every request a run makes: the
// runner's HTTP/1.1 client for plain http:// targets, over a net/http
// transport with the flags' TLS settings and the environment's proxies
// for the rest, room for conns idle connections per host, and the
// --http-debug trace on errw. The first result closes their idle
// connections.
func (c *clientFlags) transport(errw io.Writer, conns int) (idleCloser, http.RoundTripper, error) {
	tc := &tls.Config{InsecureSkipVerify: c.Insecure} //nolint:gosec // the user asked for it
	if c.CACert != "" {
		pem, err := os.ReadFile(c.CACert)
		if err != nil {
			return nil, nil, withHint(ExitUsage, fmt.Errorf("--ca-cert: %w", err), "give a PEM file of CA certificates")
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, withHint(ExitUsage, fmt.Errorf("--ca-cert %s: no PEM certificate in it", c.CACert), "give a PEM file (-----BEGIN CERTIFICATE-----)")
		}
		tc.RootCAs = pool
	}
	if (c.ClientCert == "") != (c.ClientKey == "") {
		return nil, nil, usageError("--client-cert and --client-key go together")
	}
	if c.ClientCert != "" {
		cert, err := tls.LoadX509KeyPair(c.ClientCert, c.ClientKey)
		if err != nil {
			return nil, nil, withHint(ExitUsage, fmt.Errorf("--client-cert/--client-key: %w", err), "give PEM files of a certificate and its key")
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	base := runner.NewTransport(conns)
	base.Proxy = http.ProxyFromEnvironment
	base.TLSClientConfig = tc
	tr := h1.New(base, conns)
	if c.HTTPDebug <= 0 {
		return tr, tr, nil
	}
	return tr, &debugTransport{next: tr, w: errw, left: c.HTTPDebug}, nil
}

// idleCloser closes a transport's idle connections.
type idleCloser interface{ CloseIdleConnections() }

// debugTransport prints the first requests and answers, secrets masked:
// credential headers, the URL's password and query values. Bodies are
// shown up to debugBody bytes.
type debugTransport struct {
	next http.RoundTripper
	w    io.Writer
	mu   sync.Mutex
	left int
	n    int
}

const debugBody = 1024

func (d *debugTransport) RoundTrip(req *http.Request) (*http.Response, error) {
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

func (d *debugTransport) print(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	io.WriteString(d.w, s)
}

type readCloser struct {
	io.Reader
	io.Closer
}

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

// dryRun prints what a run of sc would do and its first requests,
// rendered, without sending anything.
func dryRun(ctx context.Context, w io.Writer, sc *scenarios.Scenario, targets []*url.URL, getenv func(string) string, first int) error {
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
		return withCode(ExitUsage, err)
	}
	for i := 0; i < first && (l.Ops == 0 || i < l.Ops); i++ {
		v := scenarios.Vars{Key: fmt.Sprintf("<key of op %d>", i), Seq: i, Attempt: 1, Run: "<run>"}
		if len(sc.Users) > 0 {
			v.User = sc.Users[i%len(sc.Users)]
		}
		req, err := t.Build(ctx, targets[0], v)
		if err != nil {
			return withCode(ExitUsage, err)
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

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// aliasFlag makes --alias another spelling of --name (hidden from help):
// lab listens on --addr and the proxies on --listen, and either works on
// each.
func aliasFlag(fs *pflag.FlagSet, alias, name string) {
	f := fs.Lookup(name)
	fs.Var(f.Value, alias, "same as --"+name)
	_ = fs.MarkHidden(alias)
}
