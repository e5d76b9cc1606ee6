package cmd

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/spf13/pflag"

	"github.com/idemcheck/idemcheck/internal/h1"
	"github.com/idemcheck/idemcheck/runner"
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
	return tr, runner.NewDebugTransport(tr, errw, c.HTTPDebug), nil
}

// idleCloser closes a transport's idle connections.
type idleCloser interface{ CloseIdleConnections() }

// aliasFlag keeps --alias, an old spelling of --name, working: hidden
// from help, and a line on stderr names the one spelling (--listen for
// every listening address).
func aliasFlag(fs *pflag.FlagSet, alias, name string) {
	f := fs.Lookup(name)
	fs.Var(f.Value, alias, "same as --"+name)
	_ = fs.MarkHidden(alias)
	_ = fs.SetAnnotation(alias, oldSpelling, []string{name}) // flagsFromEnv says so when it is used
}
