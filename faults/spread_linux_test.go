package faults

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/h1"
	"github.com/idemcheck/idemcheck/internal/testenv"
)

// spreadServer answers HTTP/1.1 requests on kept-alive connections and
// measures, for each round of copies, the time between the first and the
// last copy's last byte arriving, as the kernel stamped the segments that
// carried them (SO_TIMESTAMPNS): what it measures is when the bytes
// arrived, not when a goroutine of the server happened to read them.
type spreadServer struct {
	ln     net.Listener
	copies int
	whole  chan time.Time     // when each request's last byte arrived
	spread chan time.Duration // one per round
	stop   chan struct{}
	wg     sync.WaitGroup
}

func newSpreadServer(t *testing.T, copies int) *spreadServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &spreadServer{ln: ln, copies: copies, whole: make(chan time.Time, copies), spread: make(chan time.Duration, 1), stop: make(chan struct{})}
	s.wg.Add(2)
	go s.accept()
	go s.rounds()
	t.Cleanup(func() {
		close(s.stop)
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *spreadServer) accept() {
	defer s.wg.Done()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close() // ends its serve
		}
	}()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		conns = append(conns, c)
		s.wg.Add(1)
		go s.serve(c.(*net.TCPConn))
	}
}

// serve reads requests on c, each stamped with the arrival of the
// segment that completed it, and answers each once its round is over.
func (s *spreadServer) serve(c *net.TCPConn) {
	defer s.wg.Done()
	defer c.Close()
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1) })
	buf, chunk, oob := []byte(nil), make([]byte, 64<<10), make([]byte, 128)
	for {
		var n, oobn int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), chunk, oob, syscall.MSG_DONTWAIT)
			return !errors.Is(rerr, syscall.EAGAIN)
		})
		if err != nil || rerr != nil || n == 0 {
			return
		}
		buf = append(buf, chunk[:n]...)
		if !whole(buf) {
			continue
		}
		at, ok := stamp(oob[:oobn])
		if !ok {
			at = time.Now() // a segment that came before SO_TIMESTAMPNS was set: a warm-up round's
		}
		buf = buf[:0]
		select {
		case s.whole <- at:
		case <-s.stop:
			return
		}
		if _, err := c.Write([]byte("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")); err != nil {
			return
		}
	}
}

// stamp is the SCM_TIMESTAMPNS of a recvmsg's control messages.
func stamp(oob []byte) (time.Time, bool) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return time.Unix(sec, nsec), true
		}
	}
	return time.Time{}, false
}

// rounds gathers the arrivals of each round's copies into its spread.
func (s *spreadServer) rounds() {
	defer s.wg.Done()
	for {
		var lo, hi time.Time
		for i := range s.copies {
			select {
			case at := <-s.whole:
				if i == 0 {
					lo, hi = at, at
				}
				lo, hi = minTime(lo, at), maxTime(hi, at)
			case <-s.stop:
				return
			}
		}
		select {
		case s.spread <- hi.Sub(lo):
		case <-s.stop:
			return
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// whole reports whether b holds a whole request with a Content-Length.
func whole(b []byte) bool {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return false
	}
	n := 0
	for _, line := range bytes.Split(b[:end], []byte("\r\n")) {
		name, val, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(name, []byte("Content-Length")) {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(val)))
		}
	}
	return len(b) >= end+4+n
}

// TestLastByteSyncSpread measures how far apart the copies of a duplicate
// arrive at a local server, with last-byte synchronisation (the runner's
// HTTP/1.1 client holds every copy's last byte, then writes them all in
// one loop) and with the barrier release other transports get (the
// copies' goroutines released together, each writing its whole request),
// over many rounds each, interleaved. It reports both spreads and holds
// that the synchronised median is well below the barrier's: a comparison
// of medians measured side by side, not a threshold in microseconds.
func (w wrapped) CloseIdleConnections() {
	w.rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
}

// TestLastByteSyncSpread measures how far apart the copies of a duplicate
// arrive at a local server, with last-byte synchronisation (the runner's
// HTTP/1.1 client holds every copy's last byte, then writes them all in
// one loop) and with the barrier release other transports get (the
// copies' goroutines released together, each writing its whole request),
// over many rounds each, interleaved, on kept-alive connections and on
// new ones (each copy dials). It reports both spreads and holds that the
// synchronised median is well below the barrier's (under 3/4 of it): a
// comparison of medians measured side by side, not a threshold in
// microseconds. On loopback each segment costs the sender the receiver's
// work too (about 4 µs), so 4 copies' last bytes span about 12 µs.
func TestLastByteSyncSpread(t *testing.T) {
	testenv.Timing(t)
	for _, c := range []struct {
		name string
		cold bool
	}{{"kept-alive connections", false}, {"new connections", true}} {
		t.Run(c.name, func(t *testing.T) { lastByteSpread(t, c.cold) })
	}
}

func lastByteSpread(t *testing.T, cold bool) {
	const copies = 4
	rounds := testenv.Pick(300, 2000)
	s := newSpreadServer(t, copies)
	url := "http://" + s.ln.Addr().String() + "/charges"
	newH1 := func() *h1.Transport {
		tr := h1.New(newBase(t), copies)
		t.Cleanup(tr.CloseIdleConnections)
		return tr
	}
	synced := &Transport{Base: newH1()}
	barrier := &Transport{Base: wrapped{newH1()}}
	measure := func(tr *Transport, wantSynced bool) time.Duration {
		if cold {
			tr.Base.(interface{ CloseIdleConnections() }).CloseIdleConnections()
		}
		var ans Answers
		resp, err := tr.RoundTrip(post(t, WithAnswers(t.Context(), &ans), url, Duplicate{Copies: copies}))
		if err != nil {
			t.Fatalf("duplicate: %v", err)
		}
		resp.Body.Close()
		if _, got := ans.Spread(); got != wantSynced {
			t.Fatalf("Spread() synced = %v, want %v", got, wantSynced)
		}
		select {
		case d := <-s.spread:
			return d
		case <-time.After(bound):
			t.Fatal("the server saw no round")
			return 0
		}
	}
	for range 10 { // connections dialled, code paths warm
		measure(synced, true)
		measure(barrier, false)
	}
	var sync, bar []time.Duration
	for range rounds {
		sync = append(sync, measure(synced, true))
		bar = append(bar, measure(barrier, false))
	}
	slices.Sort(sync)
	slices.Sort(bar)
	q := func(ds []time.Duration, p float64) time.Duration { return ds[int(float64(len(ds)-1)*p)] }
	t.Logf("arrival spread of %d copies over %d rounds: last-byte sync median %v (p90 %v), barrier median %v (p90 %v)",
		copies, rounds, q(sync, 0.5), q(sync, 0.9), q(bar, 0.5), q(bar, 0.9))
	if 4*q(sync, 0.5) > 3*q(bar, 0.5) {
		t.Errorf("last-byte sync median spread %v is not under 3/4 of the barrier's %v", q(sync, 0.5), q(bar, 0.5))
	}
}
