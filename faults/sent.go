package faults

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"syscall"
)

// Sent reports whether a request that failed with err may have reached the
// server. It is false for ErrReset and for failures that certainly happened
// before a byte was written: dial errors (connection refused, DNS failure,
// no route), a TLS handshake that failed, a fault interrupted before
// sending. It is true otherwise (timeouts, dropped acks, a connection lost
// after writing), since the server may have done the work. Sent(nil) is
// true: the request went through.
//
// The runner maps Sent false to outcome "fail" and true to "info".
func Sent(err error) bool {
	if err == nil {
		return true
	}
	if errors.Is(err, ErrReset) || errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	var unsent *unsentError
	if errors.As(err, &unsent) {
		return false
	}
	// A transport that knows it wrote nothing says so (the runner's
	// HTTP/1.1 client, internal/h1).
	var says interface{ Unsent() bool }
	if errors.As(err, &says) && says.Unsent() {
		return false
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	// The TLS handshake happens before the request is written.
	var (
		verify    *tls.CertificateVerificationError
		record    tls.RecordHeaderError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	if errors.As(err, &verify) || errors.As(err, &record) ||
		errors.As(err, &authority) || errors.As(err, &hostname) || errors.As(err, &invalid) {
		return false
	}
	return true
}
