package lab

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"
)

// Running is a lab, or several instances of it, serving on listeners.
type Running struct {
	// URL is the first instance's base URL.
	URL string
	// URLs are every instance's base URL, URL first.
	URLs []string

	srvs          []*Server
	served        []*served
	consumers     []*Consumers
	closeBackends func()
}

// ListenError is Start's error when an instance cannot listen on its
// address.
type ListenError struct{ Err error }

func (e *ListenError) Error() string { return "lab: " + e.Err.Error() }
func (e *ListenError) Unwrap() error { return e.Err }

// Hint says what to do instead.
func (e *ListenError) Hint() string {
	return "choose another --listen, e.g. 127.0.0.1:0 for any free port"
}

// Start opens the backends b (Open) for n instances of the lab (0 means
// 1) and serves them over HTTP, the first on addr, the others on free
// ports of addr's host, as instances of one service behind a load
// balancer. Its errors are Open's, or a *ListenError.
func Start(ctx context.Context, cfg Config, b Backends, n int, addr string) (*Running, error) {
	srvs, closeBackends, err := Open(ctx, cfg, b, n)
	if err != nil {
		return nil, err
	}
	r := &Running{closeBackends: closeBackends, srvs: srvs}
	for i, srv := range srvs {
		if i > 0 {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = "127.0.0.1"
			}
			addr = net.JoinHostPort(host, "0")
		}
		sv, err := serveOn(srv, addr)
		if err != nil {
			r.Stop()
			return nil, err
		}
		r.served = append(r.served, sv)
		r.URLs = append(r.URLs, "http://"+sv.addr)
	}
	r.URL = r.URLs[0]
	if b.Consumer != "" {
		for i, srv := range srvs {
			c, err := srv.StartConsumers(ctx, b.Consumer, b.Namespace, fmt.Sprintf("lab%d", i))
			if err != nil {
				r.Stop()
				return nil, err
			}
			r.consumers = append(r.consumers, c)
		}
	}
	return r, nil
}

// Stop shuts every instance down, then closes the backends.
func (r *Running) Stop() {
	for _, c := range r.consumers {
		c.Stop()
	}
	r.consumers = nil
	for i := len(r.served) - 1; i >= 0; i-- {
		r.served[i].stop()
	}
	r.closeBackends()
}

// Crash stops every instance as a killed process stops: its connections
// are closed at once, answered or not, and a request in flight stops
// before its next write (a charge the card processor made stays without
// its ledger row, its key record as it was: in flight). The backends stay
// open, with everything they hold, the memory ones too: Restart serves
// them again.
func (r *Running) Crash() {
	for _, srv := range r.srvs {
		srv.halted.Store(true)
	}
	for i := len(r.served) - 1; i >= 0; i-- {
		r.served[i].kill()
	}
}

// Restart serves new instances of the lab, configured as before, on the
// same backends (what they hold kept, in memory too), the same card
// processor and the same addresses, after a Crash (or a Stop of the HTTP
// side alone). Its errors are a *ListenError.
func (r *Running) Restart() error {
	for i, srv := range r.srvs {
		ns, err := srv.restarted()
		if err != nil {
			return err
		}
		sv, err := serveOn(ns, r.served[i].addr)
		if err != nil {
			return err
		}
		r.srvs[i], r.served[i] = ns, sv
	}
	return nil
}

// served is one instance's HTTP server.
type served struct {
	addr string // host:port
	hs   *http.Server
	done chan struct{}
}

// serveOn serves srv on addr until it is stopped or killed.
func serveOn(srv http.Handler, addr string) (*served, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &ListenError{err}
	}
	sv := &served{addr: ln.Addr().String(), done: make(chan struct{}),
		hs: &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)}}
	go func() {
		defer close(sv.done)
		_ = sv.hs.Serve(ln)
	}()
	return sv, nil
}

// stop shuts the server down, letting the requests in flight finish.
func (sv *served) stop() {
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = sv.hs.Shutdown(sctx)
	<-sv.done
}

// kill closes the listener and every connection at once.
func (sv *served) kill() {
	_ = sv.hs.Close()
	<-sv.done
}

// InstancesFor is how many instances of the lab show bugs: two under the
// in-process-lock bug, whose lock holds within one instance and fails
// between two that share the store and the ledger; one otherwise.
func InstancesFor(bugs []string) int {
	if slices.Contains(bugs, BugInProcessLock) {
		return 2
	}
	return 1
}
