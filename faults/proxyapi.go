package faults

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/internal/canon"
	"github.com/idemcheck/idemcheck/internal/redact"
)

// The HTTP proxy's control API, statistics and request log: what `proxy
// tcp` has, so a test can change the faults mid-run, and a user can see
// which request met which fault and what the client was answered.

// statusWriter remembers the status the proxy answered the client.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush and hijack the client's
// connection through it, as the reverse proxy does.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// RequestRecord is one line of the request log: a request the proxy
// received, the fault it injected and what the client got.
type RequestRecord struct {
	Time   time.Time `json:"time"`
	Op     int       `json:"op"` // the request's number, from 1
	Method string    `json:"method"`
	// Path is the request's path and query, query values masked.
	Path string `json:"path"`
	// Key is the request's idempotency key (Proxy.KeyHeader); "" when it
	// had none.
	Key   string `json:"key,omitempty"`
	Fault string `json:"fault,omitempty"`
	// Status is the status the client was answered; 0 when its
	// connection was closed without an answer (drop_ack, reset, a client
	// that went away), as Outcome says.
	Status int `json:"status"`
	// Outcome is "answered"; "closed" when the connection was closed
	// before an answer; "cut" when it was closed after Status was sent
	// but before the answer's end (the upstream reset mid-body).
	Outcome string  `json:"outcome"`
	MS      float64 `json:"ms"`
}

// ProxyStats are what the HTTP proxy has carried.
type ProxyStats struct {
	Requests int64 `json:"requests"`
	// Faults counts the requests each fault kind was injected into.
	Faults map[string]int64 `json:"faults"`
	// Answers counts the statuses the clients were answered, by status,
	// "closed" for a connection closed without an answer, and "cut" for
	// one closed after its status, before the answer's end.
	Answers map[string]int64 `json:"answers"`
	// Keys is how many distinct idempotency keys were seen (at most
	// maxStatKeys are told apart), Repeated how many requests carried a
	// key seen before: the clients' retries.
	Keys     int64 `json:"keys"`
	Repeated int64 `json:"repeated"`
}

// maxStatKeys bounds the keys the statistics remember (as 64-bit
// hashes: 8 bytes a key, whatever its length): past it, new keys are
// counted but no longer told apart from each other.
const maxStatKeys = 1 << 20

type proxyStats struct {
	mu       sync.Mutex
	faults   map[string]int64
	answers  map[string]int64
	keys     map[uint64]struct{}
	keyCount int64
	repeated int64
	logMu    sync.Mutex // one request log line at a time, apart from the counts
}

// record counts a request as it ends and writes its line to the request
// log. It runs deferred, also when the handler panics to close the
// client's connection: it recovers the panic to tell a connection closed
// after its status (the answer cut) from an answered one, and panics
// again once recorded, so that the server still closes the connection.
func (p *Proxy) record(r *http.Request, op int, f Fault, w *statusWriter, start time.Time) {
	aborted := recover()
	if aborted != nil {
		defer panic(aborted)
	}
	rec := RequestRecord{Time: start.UTC(), Op: op, Method: r.Method, Path: p.maskedPath(r.URL), Key: r.Header.Get(p.keyHeader()),
		Status: w.status, Outcome: "answered", MS: float64(time.Since(start).Microseconds()) / 1000}
	if p.Scrub != nil {
		rec.Path, rec.Key = p.Scrub(rec.Path), p.Scrub(rec.Key)
	}
	if f != nil {
		rec.Fault = f.Kind()
	}
	answer := strconv.Itoa(w.status)
	switch {
	case w.status == 0:
		rec.Outcome, answer = "closed", "closed"
	case aborted != nil:
		rec.Outcome, answer = "cut", "cut"
	}
	s := &p.stats
	s.mu.Lock()
	if s.faults == nil {
		s.faults, s.answers, s.keys = map[string]int64{}, map[string]int64{}, map[uint64]struct{}{}
	}
	if rec.Fault != "" {
		s.faults[rec.Fault]++
	}
	s.answers[answer]++
	if rec.Key != "" {
		k := canon.FNV1a([]byte(rec.Key))
		if _, seen := s.keys[k]; seen {
			s.repeated++
		} else {
			s.keyCount++
			if len(s.keys) < maxStatKeys {
				s.keys[k] = struct{}{}
			}
		}
	}
	s.mu.Unlock()
	if p.RequestLog != nil {
		line, _ := json.Marshal(rec)
		s.logMu.Lock()
		_, _ = p.RequestLog.Write(append(line, '\n'))
		s.logMu.Unlock()
	}
}

func (p *Proxy) keyHeader() string {
	if p.KeyHeader == "" {
		return "Idempotency-Key"
	}
	return p.KeyHeader
}

// maskedPath is u's path and query, query values masked (and the path's
// segments with RedactPath): a token in a query never reaches the log.
func (p *Proxy) maskedPath(u *url.URL) string {
	return redact.Options{Path: p.RedactPath}.URL(&url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery})
}

// Stats returns what the proxy has carried.
func (p *Proxy) Stats() ProxyStats {
	s := &p.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	out := ProxyStats{Requests: p.n.Load(), Faults: map[string]int64{}, Answers: map[string]int64{}, Keys: s.keyCount, Repeated: s.repeated}
	for k, v := range s.faults {
		out.Faults[k] = v
	}
	for k, v := range s.answers {
		out.Answers[k] = v
	}
	return out
}

// ProxyFaults are the HTTP proxy's faults as the control API reads and
// writes them: --fault flags (KIND=RATE[,PARAM=VALUE...]) and the seed
// that places them. A PUT replaces both: faults left out are no faults.
type ProxyFaults struct {
	Faults []string `json:"faults"`
	Seed   uint64   `json:"seed"`
}

// Faults returns the faults in force.
func (p *Proxy) Faults() ProxyFaults {
	st := p.plan.Load()
	return ProxyFaults{Faults: append([]string{}, st.flags...), Seed: st.seed}
}

// SetFaults replaces the faults from the next request on; an invalid set
// changes nothing.
func (p *Proxy) SetFaults(f ProxyFaults) error {
	specs, err := ParseFlags(f.Faults)
	if err != nil {
		return err
	}
	plan, err := NewPlan(f.Seed, specs)
	if err != nil {
		return err
	}
	p.plan.Store(&planState{plan: plan, seed: f.Seed, flags: append([]string{}, f.Faults...)})
	return nil
}

// ProxyAPI is the HTTP proxy's control API, for a test that changes the
// faults mid-run:
//
//	GET /faults          the faults in force (ProxyFaults)
//	PUT /faults          replace them; answers the new ones, 400 if invalid
//	GET /stats           what the proxy has carried (ProxyStats)
func ProxyAPI(p *Proxy) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.Faults())
	})
	mux.HandleFunc("PUT /faults", func(w http.ResponseWriter, r *http.Request) {
		var f ProxyFaults
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			problem(w, http.StatusBadRequest, fmt.Errorf("faults: %w (want {\"faults\": [\"drop_ack=0.1\"], \"seed\": 1})", err))
			return
		}
		if err := p.SetFaults(f); err != nil {
			var h interface{ Hint() string }
			if errors.As(err, &h) && h.Hint() != "" {
				err = fmt.Errorf("%w (%s)", err, h.Hint())
			}
			problem(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, p.Faults())
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.Stats())
	})
	return mux
}

// sortedKeys is m's keys in order (for a stable line of statistics).
func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// StatsLine is the statistics in one line: "120 requests; keys 100
// distinct, 20 repeated; faults drop_ack 12, timeout 5; answers 201 100,
// closed 12".
func (s ProxyStats) StatsLine() string {
	line := fmt.Sprintf("%d requests; keys %d distinct, %d repeated", s.Requests, s.Keys, s.Repeated)
	for _, part := range []struct {
		name string
		m    map[string]int64
	}{{"faults", s.Faults}, {"answers", s.Answers}} {
		if len(part.m) == 0 {
			continue
		}
		line += "; " + part.name
		for i, k := range sortedKeys(part.m) {
			if i > 0 {
				line += ","
			}
			line += fmt.Sprintf(" %s %d", k, part.m[k])
		}
	}
	return line
}
