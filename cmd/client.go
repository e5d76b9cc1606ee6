package cmd

import (
	"io"
	"net/http"

	"github.com/spf13/pflag"

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

// transport is the HTTP transport of every request a command makes
// (runner.NewWire) with the flags' TLS settings, room for conns idle
// connections per host, and the --http-debug trace on errw. The first
// result closes their idle connections.
func (c *clientFlags) transport(errw io.Writer, conns int) (idleCloser, http.RoundTripper, error) {
	idle, rt, err := runner.NewWire(runner.WireOptions{Insecure: c.Insecure, CACert: c.CACert, ClientCert: c.ClientCert, ClientKey: c.ClientKey,
		Conns: conns, Debug: errw, DebugN: c.HTTPDebug})
	return idle, rt, withCode(ExitUsage, err)
}

// idleCloser closes a transport's idle connections.
type idleCloser = runner.IdleCloser

// aliasFlag keeps --alias, an old spelling of --name, working: hidden
// from help, and a line on stderr names the one spelling (--listen for
// every listening address).
func aliasFlag(fs *pflag.FlagSet, alias, name string) {
	f := fs.Lookup(name)
	fs.Var(f.Value, alias, "same as --"+name)
	_ = fs.MarkHidden(alias)
	_ = fs.SetAnnotation(alias, oldSpelling, []string{name}) // flagsFromEnv says so when it is used
}
