package lab

import (
	"context"
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

	stops         []func()
	closeBackends func()
}

// ListenError is Start's error when an instance cannot listen on its
// address.
type ListenError struct{ Err error }

func (e *ListenError) Error() string { return "lab: " + e.Err.Error() }
func (e *ListenError) Unwrap() error { return e.Err }

// Start opens the backends b (Open) for n instances of the lab (0 means
// 1) and serves them over HTTP, the first on addr, the others on free
// ports of addr's host, as instances of one service behind a load
// balancer. Its errors are Open's, or a *ListenError.
func Start(ctx context.Context, cfg Config, b Backends, n int, addr string) (*Running, error) {
	srvs, closeBackends, err := Open(ctx, cfg, b, n)
	if err != nil {
		return nil, err
	}
	r := &Running{closeBackends: closeBackends}
	for i, srv := range srvs {
		if i > 0 {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = "127.0.0.1"
			}
			addr = net.JoinHostPort(host, "0")
		}
		url, stop, err := serveOn(srv, addr)
		if err != nil {
			r.Stop()
			return nil, err
		}
		r.stops = append(r.stops, stop)
		r.URLs = append(r.URLs, url)
	}
	r.URL = r.URLs[0]
	return r, nil
}

// Stop shuts every instance down, then closes the backends.
func (r *Running) Stop() {
	for i := len(r.stops) - 1; i >= 0; i-- {
		r.stops[i]()
	}
	r.closeBackends()
}

// serveOn serves srv on addr until stop is called.
func serveOn(srv http.Handler, addr string) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, &ListenError{err}
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	return "http://" + ln.Addr().String(), func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		<-done
	}, nil
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
