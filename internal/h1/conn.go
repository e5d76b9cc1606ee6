package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"syscall"
	"time"
)

// aLongTimeAgo is a deadline in the past: it fails every blocked and
// future read and write on a connection at once.
var aLongTimeAgo = time.Unix(1, 0)

// conn is one connection and the buffers reused by every request on it.
// It is used by one request at a time.
type conn struct {
	p      *pool
	nc     net.Conn
	raw    syscall.RawConn // for peeking while idle; nil when not available
	br     *bufio.Reader
	hbuf   []byte            // the header values of the answer being read
	long   []byte            // a line longer than br's buffer
	fields []field           // the headers of the answer being read
	keys   map[string]string // canonical header names seen on this conn
	last   []name            // the header names of the last answer, in order
	idleAt time.Time
	// maxIdle is how long c may sit idle and still be reused: MaxIdleAge,
	// or less when the server's last answer said it keeps idle
	// connections for less (Keep-Alive: timeout=N).
	maxIdle time.Duration

	stop      func() bool // stops the context watch of the request in flight; nil for none
	lim       *Limit      // the Limit watching the request in flight in place of stop; nil for none
	interrupt func()      // c.expire, bound once
	deadlined bool        // a read deadline of our own is set (draining)
	limited   bool        // a request's Limit set the deadline

	peekFn func(fd uintptr) bool // c.peek, bound once
	// sendFn (c.send, bound once) writes out and waits for the answer
	// (writeWait); outN bytes of out written, outErr the write's error,
	// outDone once the write was tried.
	sendFn  func(fd uintptr) bool
	out     []byte
	outN    int
	outErr  error
	outDone bool
	// reused is set once c went back to the pool: a later request's
	// writeWait finds bytes or an end already there stale, not an answer.
	reused  bool
	peekBuf [1]byte
	peekOK  bool
}

// fieldCost is what one header line is charged beyond its length against
// the bound on an answer's headers.
const fieldCost = 64

// field is a header of the answer being read: its canonical name and its
// value as hbuf[start:end].
type field struct {
	key        string
	start, end int
}

// expire fails the connection's blocked and future I/O: the request's
// context ended.
func (c *conn) expire() { c.nc.SetDeadline(aLongTimeAgo) }

// watch makes the end of ctx, the context of the request about to be
// sent on c, fail c's I/O. A request whose context has the Done of its
// Limit's (WithLimit) joins the Limit's watch, which costs no allocation;
// another gets a context.AfterFunc. It reports false, watching nothing,
// when the Limit's context already ended.
func (c *conn) watch(ctx context.Context, l *Limit) bool {
	done := ctx.Done()
	switch {
	case done == nil:
	case l != nil && done == l.done:
		if !l.add(c) {
			return false
		}
		c.lim = l
	default:
		c.stop = context.AfterFunc(ctx, c.interrupt)
	}
	return true
}

// unwatch stops the watch of the request in flight on c. It reports false
// when the watch had fired: c's deadline is in the past.
func (c *conn) unwatch() bool {
	ok := true
	if c.stop != nil {
		ok = c.stop()
		c.stop = nil
	}
	if c.lim != nil {
		ok = c.lim.remove(c)
		c.lim = nil
	}
	return ok
}

// usable reports whether the idle c can take a request: not idle too
// long, nothing unread, and a peek finds the peer has neither closed it
// nor sent anything since its last answer. The peek costs a system call
// on every reuse, but bytes a server sent after its answer (a body longer
// than its Content-Length, a body after a HEAD, 204 or 304 answer, a
// second answer) would otherwise be read as the next request's answer.
func (c *conn) usable(peek bool) bool {
	return time.Since(c.idleAt) < c.maxIdle && c.br.Buffered() == 0 && (!peek || c.alive())
}

// finish ends the request in flight on c: it stops the context watch and
// pools c when reuse is true and the watch had not fired, else closes it.
func (c *conn) finish(reuse bool) {
	if !c.unwatch() {
		reuse = false // the deadline is in the past
	}
	if reuse && c.deadlined {
		reuse = c.nc.SetReadDeadline(time.Time{}) == nil
		c.deadlined = false
	}
	if cap(c.hbuf) > 64<<10 {
		c.hbuf = nil
	}
	if cap(c.long) > 64<<10 {
		c.long = nil
	}
	if cap(c.fields) > 1024 {
		c.fields = nil
	}
	if reuse {
		c.p.put(c)
		return
	}
	c.nc.Close()
}

// appendHead appends req's request line and headers to b. It reports
// false, having read nothing of req's body, when a header name is not a
// token or a value holds a control character other than a tab: the
// request is then the fallback's, which says what is wrong.
func appendHead(b []byte, req *http.Request, closeAfter bool) ([]byte, bool) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	u := req.URL
	b = append(b, method...)
	b = append(b, ' ')
	switch p := u.EscapedPath(); {
	case p == "":
		b = append(b, '/')
	case p[0] != '/' && p != "*":
		b = append(b, '/')
		b = append(b, p...)
	default:
		b = append(b, p...)
	}
	if u.ForceQuery || u.RawQuery != "" {
		b = append(b, '?')
		b = append(b, u.RawQuery...)
	}
	b = append(b, " HTTP/1.1\r\nHost: "...)
	if req.Host != "" {
		b = append(b, req.Host...)
	} else {
		b = append(b, u.Host...)
	}
	b = append(b, "\r\n"...)
	h := req.Header
	if _, ok := h["User-Agent"]; !ok {
		b = append(b, "User-Agent: Go-http-client/1.1\r\n"...)
	}
	switch cl := req.ContentLength; {
	case req.Body == nil || req.Body == http.NoBody:
		if method != http.MethodGet && method != http.MethodHead {
			b = append(b, "Content-Length: 0\r\n"...)
		}
	case cl > 0:
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, cl, 10)
		b = append(b, "\r\n"...)
	default:
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	if closeAfter && !hasToken(h["Connection"], "close") {
		b = append(b, "Connection: close\r\n"...)
	}
	for k, vs := range h {
		if !validToken(k) {
			return b, false
		}
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		for _, v := range vs {
			if !validValue(v) {
				return b, false
			}
			if v == "" && k == "User-Agent" {
				continue
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	return append(b, "\r\n"...), true
}

// message returns the request to write in one go, head followed by req's
// body, and true, when the body is absent or at most maxInline bytes long
// (the body is then read and closed); else head and false: the body is
// streamed (writeStreamed). The error is the body's, nothing sent.
func message(head []byte, req *http.Request) ([]byte, bool, error) {
	body := req.Body
	if body == http.NoBody {
		body = nil
	}
	cl := req.ContentLength
	switch {
	case body == nil:
		return head, true, nil
	case cl <= 0 || cl > maxInline:
		return head, false, nil
	}
	defer body.Close()
	n := len(head)
	b := append(head, make([]byte, cl)...)
	if _, err := io.ReadFull(body, b[n:]); err != nil {
		return b, false, fmt.Errorf("h1: reading the request body (ContentLength %d): %w", cl, err)
	}
	return b, true, nil
}

// writeStreamed writes head then streams req's body (chunked, or longer
// than maxInline), and closes the body. It returns how many bytes reached
// the connection. The buffer, head's, goes back to bufs as *buf.
func (c *conn) writeStreamed(buf *[]byte, head []byte, req *http.Request) (written int, err error) {
	body := req.Body
	defer body.Close()
	b := head
	defer func() { putBuf(buf, b) }()
	cl := req.ContentLength
	if cl <= 0 {
		return c.writeChunked(b, body)
	}
	n, err := c.nc.Write(b)
	if err != nil {
		return n, err
	}
	m, err := io.CopyN(c.nc, body, cl)
	if err != nil {
		return n + int(m), fmt.Errorf("h1: writing the request body (ContentLength %d): %w", cl, err)
	}
	return n + int(m), nil
}

// writeChunked writes head then body in chunked encoding, in writes of
// about 32 KiB: a short body goes in the same write as head.
func (c *conn) writeChunked(head []byte, body io.Reader) (written int, err error) {
	const size = 32 << 10
	b := head
	chunk := make([]byte, size)
	for {
		n, rerr := body.Read(chunk)
		if n > 0 {
			b = strconv.AppendInt(b, int64(n), 16)
			b = append(b, "\r\n"...)
			b = append(b, chunk[:n]...)
			b = append(b, "\r\n"...)
		}
		if rerr == io.EOF {
			b = append(b, "0\r\n\r\n"...)
		} else if rerr != nil {
			return written, fmt.Errorf("h1: reading the request body: %w", rerr)
		}
		if rerr == io.EOF || len(b) >= size {
			n, err := c.nc.Write(b)
			written += n
			if err != nil || rerr == io.EOF {
				return written, err
			}
			b = b[:0]
		}
	}
}

// maxInformational is how many 1xx answers may precede the final one.
const maxInformational = 5

// readResponse reads the status line and headers of the answer to req
// (skipping 1xx answers) and returns the response, its Body reading the
// rest from c.
func (c *conn) readResponse(req *http.Request, closeAfter bool) (*http.Response, error) {
	for n1xx := 0; ; n1xx++ {
		line, err := c.readLine()
		if err != nil {
			return nil, fmt.Errorf("h1: reading the status line: %w", err)
		}
		if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[7] < '0' || line[7] > '9' || line[8] != ' ' ||
			(len(line) > 12 && line[12] != ' ') {
			return nil, malformed("status line %q", clip(line))
		}
		code := 0
		for _, d := range line[9:12] {
			if d < '0' || d > '9' {
				return nil, malformed("status code in %q", clip(line))
			}
			code = code*10 + int(d-'0')
		}
		if code < 100 {
			return nil, malformed("status code in %q", clip(line))
		}
		minor := int(line[7] - '0')
		var proto, status string
		if code >= 200 {
			proto, status = protoString(line[:8]), statusString(code, line[9:])
		}
		hd, err := c.readHeader(minor)
		if err != nil {
			return nil, err
		}
		hd.close = hd.close || closeAfter
		c.maxIdle = idleLimit(hd.keep)
		if code < 200 {
			if code == 101 {
				return nil, malformed("101 Switching Protocols to a request that asked for no upgrade")
			}
			if n1xx >= maxInformational {
				return nil, malformed("more than %d 1xx answers", maxInformational)
			}
			continue
		}
		// One allocation for the response and its body.
		rb := &struct {
			resp http.Response
			body body
		}{}
		resp := &rb.resp
		*resp = http.Response{
			Status: status, StatusCode: code, Proto: proto, ProtoMajor: 1, ProtoMinor: minor,
			Header: c.header(headersOf(req.Context())), Request: req, ContentLength: -1, Close: hd.close,
		}
		b := &rb.body
		*b = body{c: c, ctx: req.Context(), reuse: !hd.close}
		bodyless := req.Method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified
		switch {
		case bodyless:
			if req.Method == http.MethodHead {
				resp.ContentLength = hd.length
			} else {
				resp.ContentLength = 0
			}
		case hd.chunked:
			resp.TransferEncoding = []string{"chunked"}
			b.mode = modeChunked
			resp.Body = b
			return resp, nil
		case hd.length > 0:
			resp.ContentLength = hd.length
			b.mode, b.left = modeLength, hd.length
			resp.Body = b
			return resp, nil
		case hd.length == 0:
			resp.ContentLength = 0
		default:
			resp.Close = true
			b.mode, b.reuse = modeEOF, false
			resp.Body = b
			return resp, nil
		}
		resp.Body = http.NoBody
		c.finish(!hd.close)
		return resp, nil
	}
}

// head is what the transport needs of an answer's headers.
type head struct {
	length  int64 // Content-Length, -1 when absent
	chunked bool
	close   bool // the connection ends with this answer
	// keep is the idle timeout the server announced (Keep-Alive:
	// timeout=N), -1 when it announced none.
	keep time.Duration
}

// readHeader reads header lines up to the empty one into c.fields and
// c.hbuf, for an HTTP/1.minor answer.
func (c *conn) readHeader(minor int) (head, error) {
	hd := head{length: -1, keep: -1}
	keepAlive := false
	c.fields, c.hbuf = c.fields[:0], c.hbuf[:0]
	total := 0
	for {
		line, err := c.readLine()
		if err != nil {
			return hd, fmt.Errorf("h1: reading the headers: %w", err)
		}
		if len(line) == 0 {
			break
		}
		// Each line is charged what keeping it costs beyond its bytes
		// (its field, its value), as textproto does, so that a flood of
		// tiny lines is bounded like a few long ones.
		if total += len(line) + fieldCost; total > c.p.t.maxHeader {
			return hd, malformed("headers longer than %d bytes", c.p.t.maxHeader)
		}
		if line[0] == ' ' || line[0] == '\t' {
			// obs-fold: the line continues the previous value.
			if len(c.fields) == 0 {
				return hd, malformed("header block starts with a folded line")
			}
			v := bytes.TrimSpace(line)
			if !validValue(v) {
				return hd, malformed("header value %q", clip(line))
			}
			c.hbuf = append(append(c.hbuf, ' '), v...)
			c.fields[len(c.fields)-1].end = len(c.hbuf)
			continue
		}
		i := bytes.IndexByte(line, ':')
		if i <= 0 || !validToken(string(line[:i])) {
			return hd, malformed("header line %q", clip(line))
		}
		v := bytes.TrimSpace(line[i+1:])
		if !validValue(v) {
			return hd, malformed("header value %q", clip(line))
		}
		key := c.canonical(len(c.fields), line[:i])
		switch key {
		case "Content-Length":
			n, ok := parseLength(v)
			if !ok || (hd.length >= 0 && n != hd.length) {
				return hd, malformed("Content-Length %q", clip(v))
			}
			hd.length = n
		case "Transfer-Encoding":
			if minor == 0 {
				continue // HTTP/1.0 has none; net/http ignores it too
			}
			if !bytes.EqualFold(v, []byte("chunked")) {
				return hd, malformed("unsupported Transfer-Encoding %q", clip(v))
			}
			hd.chunked = true
			continue // as net/http: in resp.TransferEncoding, not in the header
		case "Connection":
			hd.close = hd.close || hasTokenBytes(v, "close")
			keepAlive = keepAlive || hasTokenBytes(v, "keep-alive")
		case "Keep-Alive":
			if d, ok := keepAliveTimeout(v); ok {
				hd.keep = d
			}
		}
		start := len(c.hbuf)
		c.hbuf = append(c.hbuf, v...)
		c.fields = append(c.fields, field{key, start, len(c.hbuf)})
	}
	if hd.chunked {
		hd.length = -1
	}
	if minor == 0 && !keepAlive {
		hd.close = true
	}
	return hd, nil
}

// header builds the http.Header of the fields readHeader read: one
// string holds every value, one slice every value list.
func (c *conn) header(keep map[string]bool) http.Header {
	if keep != nil {
		// only the headers asked for: no map sized for all of them,
		// no string holding every value
		h := http.Header{}
		for _, f := range c.fields {
			if keep[f.key] {
				h[f.key] = append(h[f.key], string(c.hbuf[f.start:f.end]))
			}
		}
		return h
	}
	h := make(http.Header, len(c.fields))
	if len(c.fields) == 0 {
		return h
	}
	s := string(c.hbuf)
	vals := make([]string, len(c.fields))
	for i, f := range c.fields {
		vals[i] = s[f.start:f.end]
		if vs, ok := h[f.key]; ok {
			h[f.key] = append(vs, vals[i])
			continue
		}
		h[f.key] = vals[i : i+1 : i+1]
	}
	return h
}

// canonical returns the canonical form of the header name b, the i-th
// of its answer, without allocating when it was seen before on c: first
// the name at the same place in the last answer (a server sends its
// headers in the same order), then every name seen.
func (c *conn) canonical(i int, b []byte) string {
	if i < len(c.last) && c.last[i].raw == string(b) {
		return c.last[i].key
	}
	k, ok := c.keys[string(b)]
	raw := string(b)
	if !ok {
		k = textproto.CanonicalMIMEHeaderKey(raw)
		if c.keys == nil {
			c.keys = make(map[string]string, 16)
		}
		if len(c.keys) < 256 {
			c.keys[raw] = k
		}
	}
	switch {
	case i < len(c.last):
		c.last[i] = name{raw, k}
	case i == len(c.last) && i < 32:
		c.last = append(c.last, name{raw, k})
	}
	return k
}

// name is a header name as received and its canonical form.
type name struct{ raw, key string }

// readLine returns the next line without its line ending, valid until
// the next read from c.
func (c *conn) readLine() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		c.long = append(c.long[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(c.long) > c.p.t.maxHeader {
				return nil, malformed("a line longer than %d bytes", c.p.t.maxHeader)
			}
			line, err = c.br.ReadSlice('\n')
			c.long = append(c.long, line...)
		}
		line = c.long
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// parseLength parses a Content-Length value.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, d := range v {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	return n, true
}

// validValue reports whether v holds no control character but tabs.
func validValue[T string | []byte](v T) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// hasToken reports whether one of the comma-separated lists vs holds
// token, case-insensitively.
func hasToken(vs []string, token string) bool {
	for _, v := range vs {
		if hasTokenBytes([]byte(v), token) {
			return true
		}
	}
	return false
}

func hasTokenBytes(v []byte, token string) bool {
	for len(v) > 0 {
		var t []byte
		t, v, _ = bytes.Cut(v, []byte(","))
		if bytes.EqualFold(bytes.TrimSpace(t), []byte(token)) {
			return true
		}
	}
	return false
}

// clip is the start of b for an error message.
func clip(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

var (
	statusStrings [600]string // "200 OK", for the codes net/http names
	errBadChunk   = errors.New("h1: malformed chunked encoding")
)

func init() {
	for code := range statusStrings {
		if t := http.StatusText(code); t != "" {
			statusStrings[code] = strconv.Itoa(code) + " " + t
		}
	}
}

// statusString is the Status of an answer: rest of its status line after
// the protocol, the usual strings shared.
func statusString(code int, rest []byte) string {
	if code < len(statusStrings) && string(rest) == statusStrings[code] {
		return statusStrings[code]
	}
	return string(rest)
}

func protoString(b []byte) string {
	switch string(b) {
	case "HTTP/1.1":
		return "HTTP/1.1"
	case "HTTP/1.0":
		return "HTTP/1.0"
	}
	return string(b)
}

// keepAliveTimeout parses the timeout=N parameter of a Keep-Alive header
// value (RFC 2068 19.7.1.1), in seconds.
func keepAliveTimeout(v []byte) (time.Duration, bool) {
	for len(v) > 0 {
		var p []byte
		p, v, _ = bytes.Cut(v, []byte(","))
		name, val, ok := bytes.Cut(bytes.TrimSpace(p), []byte("="))
		if !ok || !bytes.EqualFold(bytes.TrimSpace(name), []byte("timeout")) {
			continue
		}
		n, ok := parseLength(bytes.Trim(bytes.TrimSpace(val), `"`))
		if !ok || n > 1<<20 {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	return 0, false
}

// idleLimit is how long a connection may sit idle when its server keeps
// idle connections for keep (-1: not said): half of it, so that a reuse
// never races the server's close (Node.js, announcing timeout=N, closes a
// little after N s), at least 250 ms (timeout=0 is announced for timeouts
// under a second), at most MaxIdleAge.
func idleLimit(keep time.Duration) time.Duration {
	if keep < 0 {
		return MaxIdleAge
	}
	return min(max(keep/2, 250*time.Millisecond), MaxIdleAge)
}
