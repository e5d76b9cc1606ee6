package faults

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testenv"
)

// The HTTP proxy's control API changes the faults from the next request
// on, refuses an invalid set without changing anything, and its stats
// and request log tell each request's fault and what the client got,
// query values masked.
func TestProxyAPIAndRequestLog(t *testing.T) {
	up := newServer(t, 0)
	p, front, c := newProxy(t, up, []Spec{{Kind: KindDropAck, Rate: 1}})
	var log testenv.SyncBuffer
	p.RequestLog = &log
	api := httptest.NewServer(ProxyAPI(p))
	defer api.Close()

	send := func(key string) int {
		req, _ := http.NewRequest(http.MethodPost, front+"/charges?api_key=s3cr3t", strings.NewReader(`{"amount":1}`))
		req.Header.Set("Idempotency-Key", key)
		resp, err := c.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	put := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPut, api.URL+"/faults", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	if got := send("k1"); got != 0 {
		t.Fatalf("under drop_ack=1 the client got %d, want a closed connection", got)
	}
	if code, body := put(`{"faults": ["drop_ack=2"], "seed": 3}`); code != http.StatusBadRequest || !strings.Contains(body, "drop_ack") {
		t.Errorf("PUT an invalid rate: %d %s, want 400 naming it", code, body)
	}
	if got := send("k1"); got != 0 {
		t.Fatalf("after a refused PUT the client got %d, want the faults unchanged", got)
	}
	if code, body := put(`{"faults": [], "seed": 3}`); code != http.StatusOK || !strings.Contains(body, `"seed":3`) {
		t.Fatalf("PUT no faults: %d %s", code, body)
	}
	if got := send("k1"); got != http.StatusCreated {
		t.Fatalf("with no faults the client got %d, want 201", got)
	}
	resp, err := http.Get(api.URL + "/faults")
	if err != nil {
		t.Fatal(err)
	}
	var f ProxyFaults
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil || len(f.Faults) != 0 || f.Seed != 3 {
		t.Errorf("GET /faults = %+v, %v; want none, seed 3", f, err)
	}
	resp.Body.Close()

	resp, err = http.Get(api.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st ProxyStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st.Requests != 3 || st.Faults[KindDropAck] != 2 || st.Answers["closed"] != 2 || st.Answers["201"] != 1 || st.Keys != 1 || st.Repeated != 2 {
		t.Errorf("stats = %+v; want 3 requests, 2 drop_ack closed, one 201, 1 key repeated twice", st)
	}

	var recs []RequestRecord
	sc := bufio.NewScanner(strings.NewReader(log.String()))
	for sc.Scan() {
		var r RequestRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 3 {
		t.Fatalf("request log has %d lines, want 3:\n%s", len(recs), log.String())
	}
	if r := recs[0]; r.Fault != KindDropAck || r.Status != 0 || r.Outcome != "closed" || r.Key != "k1" || r.Method != "POST" || r.Op != 1 {
		t.Errorf("first line = %+v; want the drop_ack, closed, key k1", r)
	}
	if r := recs[2]; r.Fault != "" || r.Status != http.StatusCreated || r.Outcome != "answered" {
		t.Errorf("last line = %+v; want no fault, answered 201", r)
	}
	if strings.Contains(log.String(), "s3cr3t") || !strings.Contains(recs[0].Path, "/charges?api_key=") {
		t.Errorf("the log keeps a query value, or lost the path:\n%s", log.String())
	}
}

// An upstream that resets after its status and part of its body: the
// client's connection is closed after the status was sent, and the request
// log and stats say the answer was cut, not answered.
func TestProxyLogsACutAnswer(t *testing.T) {
	up := newServer(t, 0)
	up.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":`))
		w.(http.Flusher).Flush()
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	})
	p, front, c := newProxy(t, up, nil)
	var log testenv.SyncBuffer
	p.RequestLog = &log
	resp, err := c.Post(front+"/charges", "application/json", strings.NewReader(`{"amount":1}`))
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("the client read a whole answer from an upstream that reset mid-body")
	}
	var rec RequestRecord
	if err := json.Unmarshal([]byte(strings.TrimSpace(log.String())), &rec); err != nil {
		t.Fatalf("request log %q: %v", log.String(), err)
	}
	if rec.Outcome != "cut" || rec.Status != http.StatusCreated {
		t.Errorf("logged %+v; want outcome cut after status 201", rec)
	}
	if st := p.Stats(); st.Answers["cut"] != 1 || st.Answers["201"] != 0 {
		t.Errorf("stats answers = %v; want one cut, no 201", st.Answers)
	}
}
