package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/canon"
	"github.com/idemcheck/idemcheck/scenarios"
)

// pattern is a body of n bytes that costs no memory: byte i is 'a'+i%26.
type pattern struct{ off, n int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.n-p.off)]
	for i := range b {
		b[i] = 'a' + byte((p.off+int64(i))%26)
	}
	p.off += int64(len(b))
	return len(b), nil
}

func (*pattern) Close() error { return nil }

// patternHash is canon.FNV1a of the first n bytes of pattern.
func patternHash(n int64) uint64 {
	h := canon.NewHash()
	buf := make([]byte, 64<<10)
	p := &pattern{n: n}
	for {
		k, err := p.Read(buf)
		h = h.Add(buf[:k])
		if err != nil {
			return h.Sum()
		}
	}
}

func TestBodyReaderKeepsPrefixCountsRest(t *testing.T) { // not parallel: CPU-heavy, beside the others under -race it ran past its bound
	const limit = 1 << 20
	br := newBodyReader(limit)
	for _, n := range []int64{0, 1, limit - 1, limit, limit + 1, 3*limit + 17, 50 << 20} {
		b, err := br.read(context.Background(), &pattern{n: n})
		if err != nil {
			t.Fatalf("read(%d bytes) error = %v", n, err)
		}
		if b.size != n || int64(len(b.kept)) != min(n, limit) || b.truncated() != (n > limit) {
			t.Errorf("read(%d bytes) = size %d, %d kept, truncated %v; want size %d, %d kept", n, b.size, len(b.kept), b.truncated(), n, min(n, limit))
		}
		want := make([]byte, len(b.kept))
		(&pattern{n: n}).Read(want)
		if string(b.kept) != string(want) {
			t.Errorf("read(%d bytes) kept bytes are not the body's first %d", n, len(want))
		}
		if b.truncated() {
			if want := patternHash(n); b.raw != want {
				t.Errorf("read(%d bytes) raw hash = %x, want canon.FNV1a of the whole body %x", n, b.raw, want)
			}
		}
		if cap(br.buf) > limit {
			t.Errorf("read(%d bytes) grew the kept buffer to %d bytes, more than %d", n, cap(br.buf), limit)
		}
	}
}

// A body 50 times the cap costs no more memory than the cap.
func TestBodyReaderMemoryBounded(t *testing.T) {
	const limit, n = 1 << 20, 50 << 20
	br := newBodyReader(limit)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b, err := br.read(context.Background(), &pattern{n: n})
	runtime.ReadMemStats(&after)
	if err != nil || b.size != n || len(b.kept) != limit {
		t.Fatalf("read(50 MiB) = size %d, %d kept, error %v", b.size, len(b.kept), err)
	}
	// Growing the kept buffer to the cap by doubling allocates under 2×cap.
	if got := after.TotalAlloc - before.TotalAlloc; got > 3*limit {
		t.Errorf("reading a %d-byte body allocated %d bytes, want at most %d", n, got, 3*limit)
	}
}

// endless is a body that never ends; it calls cancel after reads reads.
type endless struct {
	reads  int
	cancel func()
}

func (e *endless) Read(b []byte) (int, error) {
	if e.reads--; e.reads == 0 {
		e.cancel()
	}
	return len(b), nil
}

func (*endless) Close() error { return nil }

// stuck returns nothing and no error, forever.
type stuck struct{}

func (stuck) Read([]byte) (int, error) { return 0, nil }
func (stuck) Close() error             { return nil }

func TestBodyReaderStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	br := newBodyReader(1 << 10)
	b, err := br.read(ctx, &endless{reads: 1000, cancel: cancel})
	if !errors.Is(err, context.Canceled) || len(b.kept) != 1<<10 {
		t.Errorf("read(endless body, cancelled) = %d kept, error %v, want %d kept and context.Canceled", len(b.kept), err, 1<<10)
	}
	if _, err := br.read(context.Background(), stuck{}); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("read(a body that makes no progress) error = %v, want io.ErrNoProgress", err)
	}
}

// writeBody writes n bytes of pattern, or without end when n < 0, until the
// client goes away.
func writeBody(w http.ResponseWriter, n int64) {
	buf := make([]byte, 64<<10)
	p := &pattern{n: n}
	if n < 0 {
		p.n = 1 << 62
	}
	for {
		k, err := p.Read(buf)
		if k > 0 {
			if _, werr := w.Write(buf[:k]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// afterBytes is a ResponseWriter that calls reached once n bytes were
// written through it.
type afterBytes struct {
	http.ResponseWriter
	n       int64
	reached func()
}

func (a *afterBytes) Write(p []byte) (int, error) {
	k, err := a.ResponseWriter.Write(p)
	if a.n -= int64(k); a.n <= 0 {
		a.reached()
	}
	return k, err
}

// A body over the cap used to make the worker spin forever. Now it is read
// to its end, counted and fingerprinted whole, as it is.
func TestLargeBodies(t *testing.T) { // not parallel: CPU-heavy, beside the others under -race it ran past its bound
	for _, n := range []int64{DefaultMaxBody + 1, 50 << 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int64, _ []byte) {
				w.WriteHeader(http.StatusCreated)
				writeBody(w, n)
			})
			h := mustRun(t, s, scenario(func(sc *scenarios.Scenario) { sc.Load = scenarios.Load{Ops: 2, Concurrency: 2} }), 1)
			want := history.Fingerprint(patternHash(n))
			for _, a := range h.Attempts {
				if a.Outcome != history.OK || a.Status != 201 || a.Fingerprint != want || a.N != 1 {
					t.Errorf("attempt %+v, want ok, 201, fingerprint %v (the whole body's hash)", a, want)
				}
			}
		})
	}
}

// At the cap a body is normalised; one byte over, it is hashed as it is.
func TestBodyAtCap(t *testing.T) { // not parallel: CPU-heavy, beside the others under -race it ran past its bound
	const limit = 64
	doc := func(n int) string { return ` "` + strings.Repeat("x", n-3) + `"` } // JSON, n bytes
	for _, tt := range []struct {
		body string
		want uint64
	}{
		{doc(limit), canon.Fingerprint([]byte(doc(limit)), nil)},
		{doc(limit + 1), canon.FNV1a([]byte(doc(limit + 1)))},
	} {
		s := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int64, _ []byte) { io.WriteString(w, tt.body) })
		sc := scenario(func(sc *scenarios.Scenario) {
			sc.Load = scenarios.Load{Ops: 1, Concurrency: 1}
			sc.Response.Fields = map[string]string{"all": "$"}
		})
		h, err := Run(runCtx(t), sc, Options{Target: s.URL, MaxBody: limit})
		if err != nil {
			t.Fatal(err)
		}
		a := h.Attempts[0]
		if uint64(a.Fingerprint) != tt.want {
			t.Errorf("%d-byte body: fingerprint %x, want %x", len(tt.body), a.Fingerprint, tt.want)
		}
		if keeps := len(tt.body) <= limit; (a.Fields != nil) != keeps {
			t.Errorf("%d-byte body: Fields = %v, want fields kept = %v", len(tt.body), a.Fields, keeps)
		}
	}
	if _, err := Run(runCtx(t), scenario(nil), Options{Target: newServer(t, nil).URL, MaxBody: -1}); err == nil {
		t.Errorf("Run() with MaxBody -1: no error")
	}
}

// A body that never ends is cut off by the run's context, promptly; the
// attempt is indeterminate.
func TestEndlessBodyEndsWithContext(t *testing.T) {
	t.Parallel()
	// The run's context ends once the server has written more of the body
	// than the socket buffers hold: the client is reading it then, on a
	// loaded machine too (a fixed deadline could come before the headers).
	reading := make(chan struct{})
	var once sync.Once
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int64, _ []byte) {
		w.WriteHeader(http.StatusCreated)
		writeBody(&afterBytes{ResponseWriter: w, n: 8 << 20, reached: func() { once.Do(func() { close(reading) }) }}, -1)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := make(chan time.Time, 1)
	go func() {
		<-reading
		cancelled <- time.Now()
		cancel()
	}()
	h, err := Run(ctx, scenario(func(sc *scenarios.Scenario) { sc.Load = scenarios.Load{Ops: 1, Concurrency: 1} }), Options{Target: s.URL})
	select {
	case at := <-cancelled:
		if el := time.Since(at); el > bound {
			t.Errorf("Run() took %v after its context ended", el)
		}
	default:
		t.Fatalf("Run() = %v before its context ended, %+v", err, h)
	}
	if !errors.Is(err, context.Canceled) || h == nil || !h.Meta.Interrupted {
		t.Fatalf("Run() = %v, want an interrupted history and context.Canceled", err)
	}
	if len(h.Attempts) != 1 || h.Attempts[0].Outcome != history.Info || !strings.Contains(h.Attempts[0].Err, "reading the body") {
		t.Errorf("attempts %+v, want one info attempt cut off while reading the body", h.Attempts)
	}
}

// Setup and operation.before read their answers with the same reader: a
// long answer neither hangs them nor passes for captured JSON.
func TestLargeBodySetupAndBefore(t *testing.T) { // not parallel: CPU-heavy, beside the others under -race it ran past its bound
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		if r.Method == http.MethodGet {
			writeBody(w, DefaultMaxBody+1)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Setup = []scenarios.Request{{Path: "/big"}, {Path: "/big"}}
		sc.Load = scenarios.Load{Ops: 2, Concurrency: 1}
		sc.Operation.Before = &scenarios.Capture{
			Request: scenarios.Request{Path: "/big"},
			Vars:    map[string]string{"v": "$.v"},
		}
	})
	if err := Setup(runCtx(t), sc, Options{Target: s.URL}); err != nil {
		t.Fatalf("Setup() error = %v", err)
	}
	h := mustRun(t, s, sc, 1)
	for _, a := range h.Attempts {
		if a.Outcome != history.Fail || !strings.HasPrefix(a.Err, "operation.before:") || !strings.Contains(a.Err, fmt.Sprint(DefaultMaxBody+1, " bytes")) {
			t.Errorf("attempt %+v, want fail, Err operation.before: ... %d bytes", a, DefaultMaxBody+1)
		}
	}
}
