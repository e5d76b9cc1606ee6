package runner

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/scenarios"
)

func TestMain(m *testing.M) {
	testenv.Parallel(8) // most of runner's tests wait on timers and a loopback server, not on the CPU
	goleak.VerifyTestMain(m)
}

// bound is how long a test waits for something that should happen at once
// (longer under -race: testenv.Bound).
var bound = testenv.Bound(10 * time.Second)

// seen is one request the test server received.
type seen struct {
	Method, Path, Key, Auth string
	Body                    string
}

// server is a test target that records every request and answers with
// answer (default: 201 and a small JSON body).
type server struct {
	URL    *url.URL
	srv    *httptest.Server
	answer func(w http.ResponseWriter, r *http.Request, n int64, body []byte)
	count  atomic.Int64

	mu   sync.Mutex
	reqs []seen
}

func newServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, n int64, body []byte)) *server {
	t.Helper()
	s := &server{answer: answer}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	u, err := url.Parse(s.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	s.URL = u
	return s
}

// bubbleServer is a server with no socket: Options.Transport reaches its
// handler (testenv.HandlerTransport), so that a test runs in a
// testing/synctest bubble, on a fake clock the machine's load cannot
// slow. opts has Target and Transport set.
func bubbleServer(answer func(w http.ResponseWriter, r *http.Request, n int64, body []byte)) (s *server, opts Options) {
	s = &server{answer: answer}
	s.URL, _ = url.Parse("http://target.test")
	return s, Options{Target: s.URL, Transport: testenv.HandlerTransport(http.HandlerFunc(s.serve))}
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	n := s.count.Add(1)
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, seen{
		Method: r.Method, Path: r.URL.RequestURI(), Key: r.Header.Get("Idempotency-Key"),
		Auth: r.Header.Get("Authorization"), Body: string(body),
	})
	s.mu.Unlock()
	if s.answer != nil {
		s.answer(w, r, n, body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"id":"ch_1","status":"succeeded"}`)
}

func (s *server) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.reqs...)
}

// perKey counts the requests per Idempotency-Key.
func (s *server) perKey() map[string]int {
	m := map[string]int{}
	for _, r := range s.requests() {
		m[r.Key]++
	}
	return m
}

// scenario returns a small closed-model charge scenario with fast retries;
// edit sets what a test needs.
func scenario(edit func(sc *scenarios.Scenario)) *scenarios.Scenario {
	sc := &scenarios.Scenario{
		Name: "test",
		Operation: scenarios.Operation{
			Request: scenarios.Request{
				Method: "POST", Path: "/charges",
				Body: `{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}`,
			},
			Key: scenarios.KeyPlace{Header: "Idempotency-Key"},
		},
		Load: scenarios.Load{Ops: 20, Concurrency: 4, MaxInFlight: 64},
		Retry: scenarios.Retry{
			Attempts: 5,
			Backoff: scenarios.Backoff{
				Initial: scenarios.Duration(100 * time.Microsecond), Max: scenarios.Duration(time.Millisecond),
				Multiplier: 2, Jitter: 0.5,
			},
			On: scenarios.DefaultRetryOn(),
		},
	}
	if edit != nil {
		edit(sc)
	}
	return sc
}

func runCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return ctx
}

// mustRun runs sc against s and fails the test on an error.
func mustRun(t *testing.T, s *server, sc *scenarios.Scenario, seed uint64) *history.History {
	t.Helper()
	h, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: seed})
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	return h
}

func jsonBody(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", s, err)
	}
	return m
}
