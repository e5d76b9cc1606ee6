package faults

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Serve serves p over HTTP on ln until ctx ends, then shuts down, letting
// the exchanges in flight end for up to 5 s. Its error is the server's,
// when it stopped on its own. Errors are answered, never logged.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-done:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return nil
}

// ParseBytes reads a size in bytes, such as TCPFaults.Bandwidth per
// second: 1MB, 64KB, 1GB (powers of 1000; KiB, MiB, GiB powers of 1024)
// or a plain number of bytes.
func ParseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = n, u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || n <= 0 {
		return 0, errors.New("not a positive size")
	}
	return int64(n * float64(mult)), nil
}

// ServeWithAPI runs serve (a proxy's Serve) on ln until ctx ends and,
// when apiLn is not nil, the proxy's control API (api) on apiLn beside
// it; the first to fail stops both. It says whether the error, if any,
// was the API's.
func ServeWithAPI(ctx context.Context, ln net.Listener, serve func(context.Context, net.Listener) error, apiLn net.Listener, api http.Handler) (apiFailed bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	apiDone := make(chan error, 1)
	if apiLn != nil {
		hs := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)}
		go func() { apiDone <- hs.Serve(apiLn) }()
		defer hs.Close()
	}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln) }()
	select {
	case err := <-done:
		return false, err
	case err := <-apiDone:
		cancel()
		<-done
		return true, err
	}
}
