package runner

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/idemcheck/idemcheck/internal/h1"
	"github.com/idemcheck/idemcheck/internal/hint"
)

// WireOptions are how a command connects to the API: TLS trust and
// client certificates, connections, and a trace of the first requests.
type WireOptions struct {
	// Insecure skips verifying the API's certificate.
	Insecure bool
	// CACert is a PEM file of certificates trusted beside the system's.
	CACert string
	// ClientCert and ClientKey are PEM files for mutual TLS, both or none.
	ClientCert, ClientKey string
	// Conns is the room for idle connections per host.
	Conns int
	// Debug, with DebugN > 0, hears the first DebugN requests and answers,
	// secrets masked (NewDebugTransport).
	Debug  io.Writer
	DebugN int
}

// IdleCloser closes a transport's idle connections.
type IdleCloser interface{ CloseIdleConnections() }

// NewWire is the HTTP transport of every request a command makes: the
// HTTP/1.1 client that never resends (internal/h1) for plain http://
// targets, over a net/http transport (NewTransport) with o's TLS
// settings and the environment's proxies (HTTP(S)_PROXY, NO_PROXY) for the
// rest, and o's trace. The first result closes their idle connections.
// Its errors name the file and say what to give (a Hint method).
func NewWire(o WireOptions) (IdleCloser, http.RoundTripper, error) {
	tc := &tls.Config{InsecureSkipVerify: o.Insecure} //nolint:gosec // the user asked for it
	if o.CACert != "" {
		pem, err := os.ReadFile(o.CACert)
		if err != nil {
			return nil, nil, hint.New("give a PEM file of CA certificates", fmt.Errorf("--ca-cert: %w", err))
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, hint.New("give a PEM file (-----BEGIN CERTIFICATE-----)", fmt.Errorf("--ca-cert %s: no PEM certificate in it", o.CACert))
		}
		tc.RootCAs = pool
	}
	if (o.ClientCert == "") != (o.ClientKey == "") {
		return nil, nil, errors.New("--client-cert and --client-key go together")
	}
	if o.ClientCert != "" {
		cert, err := tls.LoadX509KeyPair(o.ClientCert, o.ClientKey)
		if err != nil {
			return nil, nil, hint.New("give PEM files of a certificate and its key", fmt.Errorf("--client-cert/--client-key: %w", err))
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	base := NewTransport(o.Conns)
	base.Proxy = http.ProxyFromEnvironment
	base.TLSClientConfig = tc
	tr := h1.New(base, o.Conns)
	if o.DebugN <= 0 || o.Debug == nil {
		return tr, tr, nil
	}
	return tr, NewDebugTransport(tr, o.Debug, o.DebugN), nil
}
