package h1

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// benchTarget is a loopback no-op server like bench/noop.
func benchTarget(b *testing.B) *url.URL {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"ok":true}`)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return &url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/charges"}
}

// BenchmarkRoundTrip sends the runner's kind of request (a POST with a
// small JSON body and a key header, under a per-request timeout) and reads
// the answer, through h1 and through net/http, 8 goroutines at once.
func BenchmarkRoundTrip(b *testing.B) {
	u := benchTarget(b)
	payload := []byte(`{"amount":100,"currency":"usd","customer":"cus_1"}`)
	header := http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"00000000-0000-4000-8000-000000000000"}}
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"h1", New(&http.Transport{}, 64)},
		{"net", &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 512)
				proto := &http.Request{Method: "POST", URL: u, Host: u.Host, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
				for pb.Next() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					req := proto.WithContext(ctx)
					req.Header = header
					req.Body = io.NopCloser(bytes.NewReader(payload))
					req.ContentLength = int64(len(payload))
					resp, err := tc.rt.RoundTrip(req)
					if err != nil {
						b.Error(err)
						cancel()
						return
					}
					for {
						if _, err := resp.Body.Read(buf); err != nil {
							break
						}
					}
					resp.Body.Close()
					cancel()
				}
			})
		})
		tc.rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	}
}
