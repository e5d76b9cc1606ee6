package h1

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
)

// FuzzReadResponse feeds arbitrary bytes to the answer parser: it must
// never panic, and a body it accepts reads to an end.
func FuzzReadResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n0\r\nT: 1\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nto the end",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 201 Created\r\nX: a\r\n  b\r\nx: c\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, answer []byte, head bool) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		tr := New(nil, 1)
		p := &pool{t: tr}
		c := &conn{p: p, nc: a, br: bufio.NewReaderSize(bytes.NewReader(answer), 64)}
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		req, _ := http.NewRequestWithContext(context.Background(), method, "http://x/", nil)
		resp, err := c.readResponse(req, false)
		if err != nil {
			if resp != nil {
				t.Fatalf("readResponse = %v and an error %v", resp, err)
			}
			return
		}
		if resp.StatusCode < 200 || resp.StatusCode > 999 || resp.Header == nil || resp.Body == nil {
			t.Fatalf("readResponse = %+v", resp)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		if n > int64(len(answer)) {
			t.Fatalf("read a body of %d bytes from an answer of %d", n, len(answer))
		}
		resp.Body.Close()
	})
}
