package faults

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestDropAck(t *testing.T) {
	s := newServer(t, 0)
	tr := &Transport{Base: newBase(t)}
	resp, err := tr.RoundTrip(post(t, t.Context(), s.URL, DropAck{}))
	if resp != nil {
		resp.Body.Close()
		t.Errorf("DropAck response = %v, want nil", resp.Status)
	}
	if !errors.Is(err, ErrDroppedAck) {
		t.Fatalf("DropAck error = %v, want one wrapping ErrDroppedAck", err)
	}
	if got, want := err.Error(), "injected drop_ack: response discarded after the server answered 201"; got != want {
		t.Errorf("DropAck error text = %q, want %q", got, want)
	}
	if got := s.completed.Load(); got != 1 {
		t.Errorf("server completed = %d, want 1", got)
	}
	if !Sent(err) {
		t.Errorf("Sent(%v) = false, want true", err)
	}
}

func TestDropAckPassesRealErrorsAndClosesBodies(t *testing.T) {
	body := newTracked("")
	rt := &fakeRT{fn: func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: body}, nil
	}}
	if _, err := (DropAck{}).Inject(rt, post(t, t.Context(), "http://127.0.0.1/", nil)); !errors.Is(err, ErrDroppedAck) {
		t.Errorf("DropAck.Inject error = %v, want ErrDroppedAck", err)
	}
	if !body.closed.Load() {
		t.Error("DropAck left the response body open")
	}
	resp, err := (DropAck{}).Inject(errRT(errBoom), post(t, t.Context(), "http://127.0.0.1/", nil))
	if resp != nil || !errors.Is(err, errBoom) || errors.Is(err, ErrDroppedAck) {
		t.Errorf("DropAck.Inject over a failing transport = %v, %v; want nil, boom unchanged", resp, err)
	}
}

func TestTimeoutGivesUpWhileServerWorks(t *testing.T) {
	s := newHoldingServer(t)
	tr := &Transport{Base: newBase(t)}
	// The request's own deadline only bounds the test if the fault is lost.
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	start := time.Now()
	resp, err := tr.RoundTrip(post(t, ctx, s.URL, Timeout{After: 50 * time.Millisecond}))
	elapsed := time.Since(start)
	wait(t, s.arrived, "the request's arrival at the server")
	if resp != nil {
		resp.Body.Close()
		t.Errorf("Timeout response = %v, want nil", resp.Status)
	}
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Timeout error = %v, want one wrapping ErrTimeout", err)
	}
	if got := s.completed.Load(); got != 0 {
		t.Errorf("server completed before the client gave up = %d, want 0", got)
	}
	if elapsed < 50*time.Millisecond {
		t.Errorf("Timeout gave up after %v, want at least 50ms", elapsed)
	}
	var te interface{ Timeout() bool }
	if !errors.As(err, &te) || !te.Timeout() {
		t.Errorf("Timeout error %v: Timeout() = false, want true", err)
	}
	if !Sent(err) {
		t.Errorf("Sent(%v) = false, want true", err)
	}
	// The server keeps working and completes after the client left.
	s.unblock()
	wait(t, s.done, "the server's completion")
	if got := s.completed.Load(); got != 1 {
		t.Errorf("server completed = %d, want 1", got)
	}
}

func TestTimeoutAnswerInTime(t *testing.T) {
	s := newServer(t, 0)
	tr := &Transport{Base: newBase(t)}
	resp, err := tr.RoundTrip(post(t, t.Context(), s.URL, Timeout{After: bound}))
	if err != nil {
		t.Fatalf("Timeout with an ample deadline: %v", err)
	}
	defer resp.Body.Close()
	// The deadline's context is gone by now: the body must have been buffered.
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the buffered body: %v", err)
	}
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(body), `"id":"ch_1"`) {
		t.Errorf("Timeout answer = %d %s, want 201 with ch_1", resp.StatusCode, body)
	}
	if resp.ContentLength != int64(len(body)) {
		t.Errorf("ContentLength = %d, want %d", resp.ContentLength, len(body))
	}
}

func TestTimeoutParentCancelIsNotInjected(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rt := errRT(context.Canceled)
	_, err := (Timeout{After: bound}).Inject(rt, post(t, ctx, "http://127.0.0.1/", nil))
	if errors.Is(err, ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Errorf("Timeout.Inject with a canceled parent = %v, want context.Canceled, not ErrTimeout", err)
	}
}

func TestDuplicate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		getBody bool
	}{{"with GetBody", true}, {"body buffered", false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, 0)
			tr := &Transport{Base: newBase(t)}
			req := post(t, t.Context(), s.URL, Duplicate{Copies: 3})
			if !tc.getBody {
				req.GetBody = nil
				req.Body = io.NopCloser(strings.NewReader(`{"amount":100}`))
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("Duplicate: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || !strings.Contains(string(body), `"id":"ch_`) {
				t.Errorf("Duplicate answer = %d %s, want one 201 charge", resp.StatusCode, body)
			}
			if got := s.received.Load(); got != 3 {
				t.Errorf("server received = %d, want 3", got)
			}
			if got := s.completed.Load(); got != 3 {
				t.Errorf("server completed = %d, want 3 (Inject waits for every copy)", got)
			}
			for i, b := range s.bodies {
				if b != `{"amount":100}` {
					t.Errorf("copy %d body = %q, want the original", i, b)
				}
			}
		})
	}
}

func TestDuplicateClosesEveryBody(t *testing.T) {
	var bodies []*trackedBody
	for range 4 {
		bodies = append(bodies, newTracked("answer"))
	}
	next := make(chan *trackedBody, len(bodies))
	for _, b := range bodies {
		next <- b
	}
	rt := &fakeRT{fn: func(req *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
		return &http.Response{StatusCode: 200, Body: <-next}, nil
	}}
	reqBody := newTracked("payload")
	req := post(t, t.Context(), "http://127.0.0.1/", nil)
	req.Body, req.GetBody = reqBody, nil
	resp, err := (Duplicate{Copies: 4}).Inject(rt, req)
	if err != nil {
		t.Fatalf("Duplicate.Inject: %v", err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "answer" {
		t.Errorf("Duplicate answer body = %q, want %q", b, "answer")
	}
	resp.Body.Close()
	if got := rt.calls.Load(); got != 4 {
		t.Errorf("copies sent = %d, want 4", got)
	}
	if !reqBody.closed.Load() {
		t.Error("Duplicate left the request body open")
	}
	for i, b := range bodies {
		if !b.closed.Load() {
			t.Errorf("response body %d left open", i)
		}
	}
}

func TestDuplicateClosesRequestBodyWithGetBody(t *testing.T) {
	rt := &fakeRT{fn: func(req *http.Request) (*http.Response, error) {
		req.Body.Close()
		return &http.Response{StatusCode: 200, Body: newTracked("")}, nil
	}}
	req := post(t, t.Context(), "http://127.0.0.1/", nil)
	body := newTracked("payload")
	req.Body = body // GetBody stays set
	resp, err := (Duplicate{Copies: 2}).Inject(rt, req)
	if err != nil {
		t.Fatalf("Duplicate.Inject: %v", err)
	}
	resp.Body.Close()
	if !body.closed.Load() {
		t.Error("Duplicate left the original request body open")
	}
}

func TestDuplicateAllFail(t *testing.T) {
	rt := errRT(errBoom)
	resp, err := (Duplicate{Copies: 2}).Inject(rt, post(t, t.Context(), "http://127.0.0.1/", nil))
	if resp != nil || !errors.Is(err, errBoom) {
		t.Errorf("Duplicate.Inject over a failing transport = %v, %v; want nil, boom", resp, err)
	}
	if got := rt.calls.Load(); got != 2 {
		t.Errorf("copies sent = %d, want 2", got)
	}
}

func TestDuplicateOneFails(t *testing.T) {
	var n atomic.Int64
	rt := &fakeRT{fn: func(req *http.Request) (*http.Response, error) {
		if n.Add(1) == 1 {
			return nil, errBoom
		}
		return &http.Response{StatusCode: 201, Body: newTracked("ok")}, nil
	}}
	resp, err := (Duplicate{Copies: 2}).Inject(rt, post(t, t.Context(), "http://127.0.0.1/", nil))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("Duplicate.Inject with one failing copy = %v, %v; want the 201", resp, err)
	}
	resp.Body.Close()
}

func TestReset(t *testing.T) {
	s := newServer(t, 0)
	base := &fakeRT{fn: newBase(t).RoundTrip}
	tr := &Transport{Base: base}
	req := post(t, t.Context(), s.URL, Reset{})
	body := newTracked("payload")
	req.Body = body
	resp, err := tr.RoundTrip(req)
	if resp != nil {
		t.Errorf("Reset response = %v, want nil", resp.Status)
	}
	if !errors.Is(err, ErrReset) {
		t.Fatalf("Reset error = %v, want one wrapping ErrReset", err)
	}
	if got := s.received.Load(); got != 0 {
		t.Errorf("server received = %d, want 0", got)
	}
	if got := base.calls.Load(); got != 0 {
		t.Errorf("base transport called %d times, want 0", got)
	}
	if !body.closed.Load() {
		t.Error("Reset left the request body open")
	}
	if Sent(err) {
		t.Errorf("Sent(%v) = true, want false", err)
	}
}

func TestDelay(t *testing.T) {
	s := newServer(t, 0)
	tr := &Transport{Base: newBase(t)}
	const wait = 30 * time.Millisecond
	start := time.Now()
	resp, err := tr.RoundTrip(post(t, t.Context(), s.URL, Delay{Wait: wait}))
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Delay: %v", err)
	}
	resp.Body.Close()
	if elapsed < wait {
		t.Errorf("Delay took %v, want at least %v", elapsed, wait)
	}
	if resp.StatusCode != http.StatusCreated || s.received.Load() != 1 {
		t.Errorf("Delay answer = %d with %d received, want 201 with 1", resp.StatusCode, s.received.Load())
	}
}

func TestDelayCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rt := errRT(errBoom)
	req := post(t, ctx, "http://127.0.0.1/", nil)
	body := newTracked("payload")
	req.Body = body
	resp, err := (Delay{Wait: time.Hour}).Inject(rt, req)
	if resp != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("Delay.Inject canceled = %v, %v; want nil, context.Canceled", resp, err)
	}
	if rt.calls.Load() != 0 {
		t.Error("Delay sent a canceled request")
	}
	if !body.closed.Load() {
		t.Error("Delay left the request body open")
	}
	if Sent(err) {
		t.Errorf("Sent(%v) = true, want false", err)
	}
}

func TestTransport(t *testing.T) {
	s := newServer(t, 0)
	base := &fakeRT{fn: newBase(t).RoundTrip}
	tr := &Transport{Base: base}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("Transport without a fault: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || base.calls.Load() != 1 {
		t.Errorf("Transport without a fault = %d after %d base calls, want 201 after 1", resp.StatusCode, base.calls.Load())
	}
	// Through an http.Client, the injected error keeps its sentinel.
	c := &http.Client{Transport: tr}
	resp, err = c.Do(post(t, t.Context(), s.URL, DropAck{}))
	if resp != nil || !errors.Is(err, ErrDroppedAck) {
		t.Errorf("Client.Do with drop_ack = %v, %v; want nil, ErrDroppedAck", resp, err)
	}
}

func TestTransportNilBase(t *testing.T) {
	s := newServer(t, 0)
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	req, _ := http.NewRequestWithContext(WithFault(t.Context(), nil), http.MethodGet, s.URL, nil)
	resp, err := (&Transport{}).RoundTrip(req)
	if err != nil {
		t.Fatalf("Transport with nil Base: %v", err)
	}
	resp.Body.Close()
	if s.received.Load() != 1 {
		t.Errorf("server received = %d, want 1", s.received.Load())
	}
}

func TestFromContext(t *testing.T) {
	if f := FromContext(t.Context()); f != nil {
		t.Errorf("FromContext(empty) = %v, want nil", f)
	}
	want := Timeout{After: time.Second}
	if got := FromContext(WithFault(t.Context(), want)); got != want {
		t.Errorf("FromContext(WithFault(%v)) = %v", want, got)
	}
}

func TestKinds(t *testing.T) {
	for _, k := range Kinds() {
		s := Spec{Kind: k}
		switch k {
		case KindTimeout:
			s.After = time.Second
		case KindDelay:
			s.Delay = time.Second
		}
		f, err := New(s)
		if err != nil {
			t.Errorf("New(%+v): %v", s, err)
			continue
		}
		if f.Kind() != k {
			t.Errorf("New(%+v).Kind() = %q, want %q", s, f.Kind(), k)
		}
	}
}

func TestDuplicateGetBodyFails(t *testing.T) {
	rt := errRT(errBoom)
	req := post(t, t.Context(), "http://127.0.0.1/", nil)
	body := newTracked("payload")
	req.Body = body
	req.GetBody = func() (io.ReadCloser, error) { return nil, errBoom }
	resp, err := (Duplicate{Copies: 2}).Inject(rt, req)
	if resp != nil || !errors.Is(err, errBoom) {
		t.Errorf("Duplicate.Inject with a failing GetBody = %v, %v; want nil, boom", resp, err)
	}
	if rt.calls.Load() != 0 {
		t.Errorf("Duplicate sent %d copies without a body, want 0", rt.calls.Load())
	}
	if !body.closed.Load() {
		t.Error("Duplicate left the request body open")
	}
	if Sent(err) {
		t.Errorf("Sent(%v) = true, want false", err)
	}
}

// A duplicate whose copies all fail is unsent only when every copy is: one
// copy that may have reached the server makes the attempt indeterminate,
// even when a dial error came back first.
func TestDuplicateMixedErrorsCountAsSent(t *testing.T) {
	var n atomic.Int32
	next := &fakeRT{fn: func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if n.Add(1) == 1 {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		time.Sleep(10 * time.Millisecond)
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}}
	req, _ := http.NewRequest("POST", "http://127.0.0.1:1/charges", strings.NewReader(`{"amount":1}`))
	_, err := Duplicate{Copies: 2}.Inject(next, req)
	if !Sent(err) {
		t.Errorf("Duplicate.Inject with one copy refused and one reset = %v: Sent = false, want true (one copy reached the server)", err)
	}
	n.Store(0)
	allRefused := &fakeRT{fn: func(r *http.Request) (*http.Response, error) {
		r.Body.Close()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}}
	req, _ = http.NewRequest("POST", "http://127.0.0.1:1/charges", strings.NewReader(`{"amount":1}`))
	if _, err := (Duplicate{Copies: 3}).Inject(allRefused, req); Sent(err) {
		t.Errorf("Duplicate.Inject with every copy refused = %v: Sent = true, want false", err)
	}
}
