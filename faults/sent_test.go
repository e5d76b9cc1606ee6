package faults

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
)

func TestSentClassification(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, true},
		{"injected reset", Reset{}.mustErr(), false},
		{"reset through url.Error", &url.Error{Op: "Post", URL: "http://x", Err: Reset{}.mustErr()}, false},
		{"dial refused", dial, false},
		{"dial timeout", &net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}, false},
		{"bare ECONNREFUSED", fmt.Errorf("connect: %w", syscall.ECONNREFUSED), false},
		{"DNS failure", &url.Error{Op: "Get", URL: "http://nowhere.invalid", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}}}, false},
		{"bad certificate", &url.Error{Op: "Get", URL: "https://x", Err: x509.UnknownAuthorityError{}}, false},
		{"delay canceled", &unsentError{context.Canceled}, false},
		{"dropped ack", &injectedError{kind: KindDropAck, sentinel: ErrDroppedAck}, true},
		{"injected timeout", &injectedError{kind: KindTimeout, sentinel: ErrTimeout}, true},
		{"deadline exceeded", context.DeadlineExceeded, true},
		{"read after write", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{"EOF", fmt.Errorf("post: %w", io.ErrUnexpectedEOF), true},
		{"unknown", errBoom, true},
	} {
		if got := Sent(tc.err); got != tc.want {
			t.Errorf("%s: Sent(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// mustErr returns the error Reset injects.
func (Reset) mustErr() error {
	_, err := Reset{}.Inject(nil, &http.Request{})
	return err
}

func TestSentRefusedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := &http.Client{Transport: &Transport{Base: newBase(t)}}
	resp, err := c.Post("http://"+addr+"/charges", "application/json", nil)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("POST to a closed port %s succeeded", addr)
	}
	if Sent(err) {
		t.Errorf("Sent(%v) = true, want false", err)
	}
}

func TestSentConnectionLostAfterWrite(t *testing.T) {
	s := newServer(t, 0)
	s.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	c := &http.Client{Transport: &Transport{Base: newBase(t)}}
	resp, err := c.Do(post(t, t.Context(), s.URL, nil))
	if err == nil {
		resp.Body.Close()
		t.Fatal("POST to a server that hangs up succeeded")
	}
	if !Sent(err) {
		t.Errorf("Sent(%v) = false, want true", err)
	}
	if errors.Is(err, ErrReset) {
		t.Errorf("a real hang-up %v wraps ErrReset", err)
	}
}
