package faults

import (
	"context"
	"errors"
	"hash/fnv"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// pattern is a body of n bytes (endless when n < 0) made up as it is read,
// so a test can send gigabytes without holding them.
type pattern struct {
	n, off int64
}

func (p *pattern) Read(b []byte) (int, error) {
	if p.n >= 0 && p.off >= p.n {
		return 0, io.EOF
	}
	if p.n >= 0 {
		b = b[:min(int64(len(b)), p.n-p.off)]
	}
	n := 0
	for n < len(b) {
		i := int((p.off + int64(n)) % 26)
		n += copy(b[n:], alphabet[i:])
	}
	p.off += int64(n)
	return n, nil
}

// alphabet repeats a-z, for pattern to copy from.
var alphabet = []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz", 4<<10))

func (*pattern) Close() error { return nil }

// patternHash is the FNV-1a hash of the first n bytes of a pattern.
func patternHash(n int64) uint64 {
	h := fnv.New64a()
	io.Copy(h, &pattern{n: n})
	return h.Sum64()
}

// bodyRT answers every request with status and a fresh body from body.
func bodyRT(status int, body func() io.ReadCloser) *fakeRT {
	return &fakeRT{fn: func(req *http.Request) (*http.Response, error) {
		if req.Body != nil {
			io.Copy(io.Discard, req.Body)
			req.Body.Close()
		}
		return &http.Response{StatusCode: status, Header: http.Header{}, Body: body()}, nil
	}}
}

// roundTrip sends a POST carrying f through a Transport over base keeping
// maxBody bytes, collecting the other answers.
func roundTrip(t *testing.T, ctx context.Context, base http.RoundTripper, maxBody int, f Fault) (*http.Response, []Answer, error) {
	t.Helper()
	var ans Answers
	req := post(t, WithAnswers(ctx, &ans), "http://127.0.0.1/", f)
	resp, err := (&Transport{Base: base, MaxBody: maxBody}).RoundTrip(req)
	return resp, ans.Take(), err
}

func TestDuplicateRecordsEveryCopy(t *testing.T) {
	s := newServer(t, 0)
	var ans Answers
	req := post(t, WithAnswers(t.Context(), &ans), s.URL, Duplicate{Copies: 3})
	resp, err := (&Transport{Base: newBase(t)}).RoundTrip(req)
	if err != nil {
		t.Fatalf("Duplicate: %v", err)
	}
	first, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := ans.Take()
	if len(got) != 2 {
		t.Fatalf("Duplicate of 3 recorded %d other answers, want 2", len(got))
	}
	ids := map[string]bool{string(first): true}
	for i, a := range got {
		if a.Copy != i+2 || a.Hidden || a.Status != http.StatusCreated || a.Err != nil || a.End.IsZero() || a.Body == nil {
			t.Errorf("answer %d = %+v, want copy %d, 201, no error, an end time", i, a, i+2)
			continue
		}
		ids[string(a.Body.Kept())] = true
	}
	if len(ids) != 3 {
		t.Errorf("the 3 answers = %v, want 3 different charges (one per copy)", ids)
	}
}

func TestDuplicateRecordsFailedCopies(t *testing.T) {
	_, got, err := roundTrip(t, t.Context(), errRT(errBoom), 0, Duplicate{Copies: 2})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Duplicate over a failing transport = %v, want boom", err)
	}
	if len(got) != 1 || got[0].Copy != 2 || !errors.Is(got[0].Err, errBoom) || got[0].Status != 0 || got[0].Body != nil {
		t.Errorf("other answers = %+v, want copy 2 failing with boom", got)
	}
}

func TestDropAckRecordsHiddenAnswer(t *testing.T) {
	s := newServer(t, 0)
	var ans Answers
	req := post(t, WithAnswers(t.Context(), &ans), s.URL, DropAck{})
	_, err := (&Transport{Base: newBase(t)}).RoundTrip(req)
	if !errors.Is(err, ErrDroppedAck) {
		t.Fatalf("DropAck = %v, want ErrDroppedAck", err)
	}
	got := ans.Take()
	if len(got) != 1 {
		t.Fatalf("DropAck recorded %d answers, want 1", len(got))
	}
	a := got[0]
	if !a.Hidden || a.Copy != 0 || a.Status != http.StatusCreated || a.Err != nil || !strings.Contains(string(a.Body.Kept()), `"id":"ch_1"`) {
		t.Errorf("hidden answer = %+v (body %q), want hidden 201 ch_1", a, a.Body.Kept())
	}
}

func TestNoAnswersWithoutCollector(t *testing.T) {
	// A request without WithAnswers still works: nothing is recorded.
	_, err := (DropAck{}).Inject(bodyRT(200, func() io.ReadCloser { return newTracked("x") }), post(t, t.Context(), "http://127.0.0.1/", nil))
	if !errors.Is(err, ErrDroppedAck) {
		t.Errorf("DropAck = %v, want ErrDroppedAck", err)
	}
}

// TestBigBodiesBounded sends a body far larger than MaxBody under each
// fault that reads answers: each keeps MaxBody bytes, knows the real size
// and the hash of every byte, and allocates a small fraction of the body.
func TestBigBodiesBounded(t *testing.T) {
	const size = 16 << 20
	const maxBody = 4 << 10
	want := patternHash(size)
	big := func() io.ReadCloser { return &pattern{n: size} }
	check := func(t *testing.T, what string, b *Body) {
		t.Helper()
		if b == nil {
			t.Fatalf("%s: no body", what)
		}
		if len(b.Kept()) != maxBody || b.Size() != size || !b.Truncated() || b.Hash() != want {
			t.Errorf("%s body = kept %d, size %d, hash %x; want %d, %d, %x", what, len(b.Kept()), b.Size(), b.Hash(), maxBody, size, want)
		}
	}
	measure := func(t *testing.T, keep int, f func()) {
		t.Helper()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		// Growing the kept prefix by doubling costs up to 2 × keep.
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(4*keep+1<<20); got > limit {
			t.Errorf("allocated %d bytes for %d-byte bodies keeping %d, want under %d", got, size, keep, limit)
		}
	}
	t.Run("timeout", func(t *testing.T) {
		measure(t, maxBody, func() {
			resp, _, err := roundTrip(t, t.Context(), bodyRT(200, big), maxBody, Timeout{After: bound})
			if err != nil {
				t.Fatalf("Timeout: %v", err)
			}
			check(t, "timeout", resp.Body.(*Body))
			if resp.ContentLength != maxBody {
				t.Errorf("ContentLength = %d, want the kept %d", resp.ContentLength, maxBody)
			}
		})
	})
	t.Run("duplicate", func(t *testing.T) {
		measure(t, 2*maxBody, func() {
			resp, ans, err := roundTrip(t, t.Context(), bodyRT(200, big), maxBody, Duplicate{Copies: 2})
			if err != nil {
				t.Fatalf("Duplicate: %v", err)
			}
			check(t, "duplicate winner", resp.Body.(*Body))
			if len(ans) != 1 {
				t.Fatalf("Duplicate recorded %d answers, want 1", len(ans))
			}
			check(t, "duplicate copy 2", ans[0].Body)
		})
	})
	t.Run("drop_ack", func(t *testing.T) {
		measure(t, 1<<20, func() {
			_, ans, err := roundTrip(t, t.Context(), bodyRT(200, big), 1<<20, DropAck{})
			if !errors.Is(err, ErrDroppedAck) {
				t.Fatalf("DropAck: %v", err)
			}
			if len(ans) != 1 || ans[0].Err != nil || ans[0].Body.Size() != size || ans[0].Body.Hash() != want || len(ans[0].Body.Kept()) != 1<<20 {
				t.Errorf("hidden answer = %+v, want the whole %d bytes counted, 1 MiB kept", ans, size)
			}
		})
	})
}

// TestEndlessBodiesEnd sends a body that never ends under each fault: the
// request's context (or the fault's own deadline, or drop_ack's read
// limit) ends it in bounded time, with bounded bytes kept.
func TestEndlessBodiesEnd(t *testing.T) {
	t.Parallel()
	const maxBody = 1 << 10
	endless := func() io.ReadCloser { return &pattern{n: -1} }
	deadline := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	for _, tc := range []struct {
		name string
		ctx  func(t *testing.T) context.Context
		f    Fault
		want func(t *testing.T, resp *http.Response, ans []Answer, err error)
	}{
		{"timeout", func(t *testing.T) context.Context { return t.Context() }, Timeout{After: 100 * time.Millisecond},
			func(t *testing.T, resp *http.Response, ans []Answer, err error) {
				if !errors.Is(err, ErrTimeout) {
					t.Errorf("Timeout over an endless body = %v, want ErrTimeout", err)
				}
			}},
		{"duplicate", deadline, Duplicate{Copies: 2},
			func(t *testing.T, resp *http.Response, ans []Answer, err error) {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Duplicate over an endless body = %v, want the request's deadline", err)
				}
				if len(ans) != 1 || !errors.Is(ans[0].Err, context.DeadlineExceeded) || ans[0].Status != 200 || len(ans[0].Body.Kept()) != maxBody {
					t.Errorf("copy 2 = %+v, want 200 cut off by the deadline, %d bytes kept", ans, maxBody)
				}
			}},
		{"drop_ack with a deadline", deadline, DropAck{},
			func(t *testing.T, resp *http.Response, ans []Answer, err error) {
				if !errors.Is(err, ErrDroppedAck) {
					t.Errorf("DropAck = %v, want ErrDroppedAck", err)
				}
				if len(ans) != 1 || ans[0].Err == nil || len(ans[0].Body.Kept()) != maxBody {
					t.Errorf("hidden answer = %+v, want cut off, %d bytes kept", ans, maxBody)
				}
			}},
		{"drop_ack without a deadline", func(t *testing.T) context.Context { return t.Context() }, DropAck{},
			func(t *testing.T, resp *http.Response, ans []Answer, err error) {
				if !errors.Is(err, ErrDroppedAck) {
					t.Errorf("DropAck = %v, want ErrDroppedAck", err)
				}
				if len(ans) != 1 || !errors.Is(ans[0].Err, ErrReadLimit) || ans[0].Body.Size() != dropAckReadFactor*maxBody || len(ans[0].Body.Kept()) != maxBody {
					t.Errorf("hidden answer = %+v, want stopped by the read limit after %d bytes", ans, dropAckReadFactor*maxBody)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			resp, ans, err := roundTrip(t, tc.ctx(t), bodyRT(200, endless), maxBody, tc.f)
			if resp != nil {
				resp.Body.Close()
			}
			if d := time.Since(start); d > bound {
				t.Errorf("%s over an endless body took %v, want under %v", tc.name, d, bound)
			}
			tc.want(t, resp, ans, err)
		})
	}
}
