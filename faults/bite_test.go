package faults

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/h1"
)

// biteOf sends one request carrying f through a Transport over base and
// returns whether the fault bit.
func biteOf(t *testing.T, ctx context.Context, base http.RoundTripper, url string, f Fault) (bool, *Answers) {
	t.Helper()
	var ans Answers
	resp, err := (&Transport{Base: base}).RoundTrip(post(t, WithAnswers(ctx, &ans), url, f))
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return ans.Bit(), &ans
}

// A fault bites only when it changed what happened: each kind, on a
// target where it does and on one where it does not.
func TestFaultsBite(t *testing.T) {
	slow := newServer(t, 50*time.Millisecond)
	fast := newServer(t, 0)
	base := newBase(t)
	cases := []struct {
		name string
		url  string
		rt   http.RoundTripper
		f    Fault
		ctx  func() context.Context
		want bool
	}{
		{"a timeout that fires before the answer", slow.URL, base, Timeout{After: 5 * time.Millisecond}, nil, true},
		{"a timeout the answer beats", fast.URL, base, Timeout{After: bound}, nil, false},
		{"a timeout that fires before anything is written", fast.URL, &fakeRT{fn: func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done() // a dial that never ends
			return nil, &unsentError{r.Context().Err()}
		}}, Timeout{After: 5 * time.Millisecond}, nil, false},
		{"a drop_ack that drops an answer", fast.URL, base, DropAck{}, nil, true},
		{"a drop_ack with no answer to drop", fast.URL, errRT(errBoom), DropAck{}, nil, false},
		{"a reset", fast.URL, base, Reset{}, nil, true},
		{"a delay that delayed", fast.URL, base, Delay{Wait: time.Millisecond}, nil, true},
		{"a delay cut short", fast.URL, base, Delay{Wait: bound}, func() context.Context {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		}, false},
		{"duplicate copies in flight at once", slow.URL, base, Duplicate{Copies: 2}, nil, true},
		{"duplicate copies answered one after the other", fast.URL, serial(), Duplicate{Copies: 2}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			if c.ctx != nil {
				ctx = c.ctx()
			}
			if got, _ := biteOf(t, ctx, c.rt, c.url, c.f); got != c.want {
				t.Errorf("%s: Bit() = %v, want %v", c.name, got, c.want)
			}
		})
	}
}

// serial is a transport that writes its second request 20ms after its
// first was answered (at once), as a fast server answers copies sent far
// apart, and says when it wrote each (httptrace).
func serial() *fakeRT {
	var n atomic.Int64
	rt := &fakeRT{}
	rt.fn = func(r *http.Request) (*http.Response, error) {
		if n.Add(1) == 2 {
			time.Sleep(20 * time.Millisecond)
		}
		if tr := httptrace.ContextClientTrace(r.Context()); tr != nil && tr.WroteRequest != nil {
			tr.WroteRequest(httptrace.WroteRequestInfo{})
		}
		io.Copy(io.Discard, r.Body)
		return &http.Response{StatusCode: 201, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}"))}, nil
	}
	return rt
}

// Copies the server answers one after the other, each before the next is
// written, did not duplicate anything in flight: overlapped judges by when
// each copy was written and answered.
func TestDuplicateOverlap(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	copyAt := func(sent, answered int, err error) copyResult {
		return copyResult{sent: at(sent), answered: at(answered), err: err}
	}
	cases := []struct {
		name string
		cs   []copyResult
		want bool
	}{
		{"both in flight", []copyResult{copyAt(0, 10, nil), copyAt(1, 11, nil)}, true},
		{"one after the other", []copyResult{copyAt(0, 10, nil), copyAt(12, 20, nil)}, false},
		{"the other never sent", []copyResult{copyAt(0, 10, nil), copyAt(1, 2, &unsentError{errBoom})}, false},
		{"the third overlaps the second", []copyResult{copyAt(0, 1, nil), copyAt(2, 10, nil), copyAt(3, 11, nil)}, true},
	}
	for _, c := range cases {
		cs := c.cs
		for i := range cs {
			cs[i].i = i
		}
		if got := overlapped(cs); got != c.want {
			t.Errorf("overlapped(%s) = %v, want %v", c.name, got, c.want)
		}
	}
	// A written time the transport reported wins over the send's.
	cs := []copyResult{copyAt(0, 10, nil), copyAt(0, 30, nil)}
	cs[1].wrote.Store(at(20).UnixNano())
	if overlapped(cs) {
		t.Error("overlapped: a copy written (20ms) after the other's answer (10ms) overlapped it")
	}
}

// Over the runner's HTTP/1.1 client the copies are synchronised on their
// last byte; over net/http they are released by a barrier. Both say so.
func TestDuplicateSaysHowItSynchronised(t *testing.T) {
	s := newServer(t, 5*time.Millisecond)
	hc := h1.New(newBase(t), 4)
	t.Cleanup(hc.CloseIdleConnections)
	for _, c := range []struct {
		name   string
		rt     http.RoundTripper
		synced bool
	}{{"h1", hc, true}, {"net/http", newBase(t), false}, {"h1 behind a wrapper", wrapped{hc}, false}} {
		bit, ans := biteOf(t, t.Context(), c.rt, s.URL, Duplicate{Copies: 3})
		spread, synced := ans.Spread()
		if !bit || synced != c.synced || spread <= 0 {
			t.Errorf("%s: Bit %v, Spread() = %v, %v; want a bite, synced %v and a spread", c.name, bit, spread, synced, c.synced)
		}
		if got := ans.Take(); len(got) != 2 {
			t.Errorf("%s: %d other answers, want 2", c.name, len(got))
		}
	}
}

// wrapped hides its transport's ability to hold a last byte.
type wrapped struct{ rt http.RoundTripper }

func (w wrapped) RoundTrip(r *http.Request) (*http.Response, error) { return w.rt.RoundTrip(r) }

func TestParseRelative(t *testing.T) {
	ok := map[string]Relative{"p50": {50, 1}, "p90": {90, 1}, "0.5x": {50, 0.5}, " 2x ": {50, 2}, "1x": {50, 1}}
	for in, want := range ok {
		got, isRel, err := ParseRelative(in)
		if err != nil || !isRel || got != want {
			t.Errorf("ParseRelative(%q) = %+v, %v, %v; want %+v", in, got, isRel, err, want)
		}
	}
	for _, in := range []string{"50ms", "1s", "0", ""} {
		if _, isRel, err := ParseRelative(in); isRel || err != nil {
			t.Errorf("ParseRelative(%q) = relative %v, %v; want a duration for the caller", in, isRel, err)
		}
	}
	for _, in := range []string{"p99", "0x", "-1x", "abcx", "1000x", "NaNx"} {
		if _, isRel, err := ParseRelative(in); !isRel || err == nil {
			t.Errorf("ParseRelative(%q) = relative %v, %v; want an error", in, isRel, err)
		}
	}
	for _, s := range []string{"p50", "p90", "0.5x", "2x"} {
		r, _, _ := ParseRelative(s)
		if r.String() != s {
			t.Errorf("ParseRelative(%q).String() = %q", s, r.String())
		}
	}
}

func TestResolveRelative(t *testing.T) {
	l := Latency{P50: 20 * time.Millisecond, P90: 30 * time.Millisecond}
	for _, c := range []struct {
		rel  string
		want time.Duration
	}{{"p50", 20 * time.Millisecond}, {"p90", 30 * time.Millisecond}, {"0.5x", 10 * time.Millisecond}, {"0.001x", MinRelative}} {
		s, err := ParseSpec("timeout=0.1,after=" + c.rel)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(s); !errors.Is(err, ErrUnresolved) {
			t.Errorf("New(after %s) before calibration = %v, want ErrUnresolved", c.rel, err)
		}
		if err := Check(s); err != nil {
			t.Errorf("Check(after %s) = %v, want nil: it is resolved before the load", c.rel, err)
		}
		r := s.Resolve(l)
		f, err := New(r)
		if err != nil || f.(Timeout).After != c.want || r.Relative.String() != c.rel {
			t.Errorf("New(Resolve(after %s)) = %+v, %v; want a timeout after %v that still says %s", c.rel, f, err, c.want, c.rel)
		}
	}
	if err := Check(Spec{Kind: KindDelay, Rate: 0.1, Delay: time.Millisecond, Relative: Relative{50, 0.5}}); err == nil {
		t.Error("Check(a delay with a relative after) = nil, want an error naming after")
	}
}
