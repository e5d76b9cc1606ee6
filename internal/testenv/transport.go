package testenv

import (
	"net/http"
	"net/http/httptest"
)

// HandlerTransport is an http.RoundTripper that serves each request with
// h in the caller's goroutine, with no socket: a test that swaps it in for
// a client's transport can run inside a testing/synctest bubble, where
// loopback sockets would not let the fake clock advance. The handler sees
// the client's context: a client that gives up ends the handler's wait,
// and RoundTrip then returns the context's error, as a real transport
// does. Bodies are buffered whole, so h must answer.
func HandlerTransport(h http.Handler) http.RoundTripper {
	return handlerTransport{h}
}

type handlerTransport struct{ h http.Handler }

func (ht handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	in := req.Clone(req.Context())
	if in.Body == nil {
		in.Body = http.NoBody
	}
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr = "127.0.0.1:1"
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	rec := httptest.NewRecorder()
	ht.h.ServeHTTP(rec, in)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}
