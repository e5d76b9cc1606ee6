package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// replayObserver checks, when an op is done, that the server already got
// every request of it (its replays included); keys are "k-SEQ".
type replayObserver struct {
	t    *testing.T
	s    *server
	want int // requests per op

	mu    sync.Mutex
	done  map[int]int
	acked int
}

func (o *replayObserver) Start(int, time.Duration) {}

func (o *replayObserver) OpDone(op int, st history.OpState) {
	got := o.s.perKey()[fmt.Sprintf("k-%d", op)]
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done == nil {
		o.done = map[int]int{}
	}
	o.done[op]++
	if st == history.Acked {
		o.acked++
	}
	if got != o.want {
		o.t.Errorf("OpDone(%d): the server has %d requests for it, want %d (OpDone after the replays)", op, got, o.want)
	}
}

func TestReplaySameRequest(t *testing.T) {
	t.Parallel()
	for _, open := range []bool{false, true} {
		t.Run(fmt.Sprintf("open=%v", open), func(t *testing.T) {
			s := newServer(t, nil)
			const after = 20 * time.Millisecond
			sc := scenario(func(sc *scenarios.Scenario) {
				sc.Load = scenarios.Load{Ops: 12, Concurrency: 3}
				if open {
					sc.Load = scenarios.Load{Ops: 12, Rate: 2000, MaxInFlight: 4}
				}
				sc.Users = []string{"alice", "bob"}
				sc.Operation.Headers = map[string]string{"Authorization": "Bearer {{.User}}"}
				sc.Operation.Key.Value = "k-{{.Seq}}"
				sc.Operation.Replay = &scenarios.Replay{Count: 2, After: scenarios.Duration(after)}
			})
			obs := &replayObserver{t: t, s: s, want: 3}
			h, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 3, Observer: obs})
			if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			if len(obs.done) != 12 || obs.acked != 12 {
				t.Errorf("OpDone heard %d ops (%d acked), want 12 once each, acked", len(obs.done), obs.acked)
			}
			for op, n := range obs.done {
				if n != 1 {
					t.Errorf("OpDone(%d) called %d times, want once", op, n)
				}
			}
			bodies := map[string]map[string]bool{}
			for _, r := range s.requests() {
				if bodies[r.Key] == nil {
					bodies[r.Key] = map[string]bool{}
				}
				bodies[r.Key][r.Body+" "+r.Auth] = true
			}
			for _, op := range h.Ops {
				if want := fmt.Sprintf("k-%d", op.ID); op.Key != want {
					t.Errorf("Ops[%d].Key = %q, want %q", op.ID, op.Key, want)
				}
				if n := len(bodies[op.Key]); n != 1 {
					t.Errorf("op %d sent %d different bodies under its key, want 1: %v", op.ID, n, bodies[op.Key])
				}
				as := h.AttemptsOf(op.ID)
				var got []string
				for _, a := range as {
					got = append(got, fmt.Sprintf("%d %s %s %d", a.N, a.Fault, a.Outcome, a.Status))
				}
				want := []string{"1  ok 201", "2 replay ok 201", "3 replay ok 201"}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("op %d attempts (-want +got):\n%s", op.ID, diff)
					continue
				}
				for i := 1; i < len(as); i++ {
					if as[i].Intended != as[i-1].End+after || as[i].Start < as[i].Intended {
						t.Errorf("op %d replay %d intended %v start %v, previous end %v: want intended = end + %v <= start",
							op.ID, i, as[i].Intended, as[i].Start, as[i-1].End, after)
					}
				}
			}
			// Op latency leaves the replays out: it is the first attempt's.
			var slowest time.Duration
			for _, op := range h.Ops {
				slowest = max(slowest, h.AttemptsOf(op.ID)[0].Latency())
			}
			var got time.Duration
			for _, op := range h.Ops {
				got = max(got, history.OpLatency(h.AttemptsOf(op.ID)))
			}
			if got != slowest {
				t.Errorf("op latency max = %v, want %v, the slowest first attempt (replays left out)", got, slowest)
			}
		})
	}
}

// A replay body is another payload under the same key, in the header or in
// the body field; the answer is recorded, not retried.
func TestReplayMismatch(t *testing.T) {
	t.Parallel()
	for _, place := range []string{"header", "body_field"} {
		t.Run(place, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int64, body []byte) {
				if strings.Contains(string(body), `"amount":999`) {
					w.WriteHeader(http.StatusUnprocessableEntity)
					io.WriteString(w, `{"title":"mismatch"}`)
					return
				}
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"id":"ch"}`)
			})
			sc := scenario(func(sc *scenarios.Scenario) {
				sc.Load = scenarios.Load{Ops: 5, Concurrency: 5}
				sc.Operation.Replay = &scenarios.Replay{Count: 1, Body: `{"amount":999,"customer":"cus_{{.Seq}}"}`}
				if place == "body_field" {
					sc.Operation.Key = scenarios.KeyPlace{BodyField: "op_id"}
				}
			})
			h := mustRun(t, s, sc, 4)
			keyOf := func(r seen) string {
				if place == "header" {
					return r.Key
				}
				return fmt.Sprint(jsonBody(t, r.Body)["op_id"])
			}
			sent := map[string][]string{}
			for _, r := range s.requests() {
				m := jsonBody(t, r.Body)
				sent[keyOf(r)] = append(sent[keyOf(r)], fmt.Sprint(m["amount"]))
			}
			for _, op := range h.Ops {
				as := h.AttemptsOf(op.ID)
				if len(as) != 2 || as[1].N != 2 || as[1].Fault != history.FaultMismatch || as[1].Status != 422 {
					t.Errorf("op %d attempts %+v, want a 201 then a mismatch answered 422", op.ID, as)
				}
				amounts := sent[op.Key]
				if len(amounts) != 2 || amounts[0] == amounts[1] {
					t.Errorf("op %d key %s carried amounts %v, want 100 and 999", op.ID, op.Key, amounts)
				}
			}
		})
	}
}

// After another payload under its key, the op's own request goes once
// more (replay.then_original): a server whose rejection of the other
// payload replaced the stored answer answers it 422, and same_response
// catches it; a correct one replays its 201.
func TestReplayThenOriginal(t *testing.T) {
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("broken=%v", broken), func(t *testing.T) {
			var mu sync.Mutex
			stored := map[string]int{} // the answer stored per key
			s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int64, body []byte) {
				key := r.Header.Get("Idempotency-Key")
				mu.Lock()
				defer mu.Unlock()
				if _, ok := stored[key]; !ok {
					stored[key] = http.StatusCreated
				} else if strings.Contains(string(body), `"amount":999`) {
					if broken {
						stored[key] = http.StatusUnprocessableEntity // the bug: the rejection overwrites the 201
					}
					w.WriteHeader(http.StatusUnprocessableEntity)
					io.WriteString(w, `{"title":"mismatch"}`)
					return
				}
				w.WriteHeader(stored[key])
				if stored[key] == http.StatusCreated {
					io.WriteString(w, `{"id":"ch_`+key+`"}`)
				} else {
					io.WriteString(w, `{"title":"mismatch"}`)
				}
			})
			yes := true
			sc := scenario(func(sc *scenarios.Scenario) {
				sc.Load = scenarios.Load{Ops: 6, Concurrency: 3}
				sc.Operation.Replay = &scenarios.Replay{Count: 1, Body: `{"amount":999,"customer":"cus_{{.Seq}}"}`, ThenOriginal: &yes}
			})
			h := mustRun(t, s, sc, 5)
			want := []string{"1  201", "2 mismatch 422", "3 replay 201"}
			if broken {
				want[2] = "3 replay 422"
			}
			for _, op := range h.Ops {
				var got []string
				for _, a := range h.AttemptsOf(op.ID) {
					got = append(got, fmt.Sprintf("%d %s %d", a.N, a.Fault, a.Status))
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("op %d attempts (-want +got):\n%s", op.ID, diff)
				}
			}
			v := checks.Check(h, history.Invariant{Check: checks.SameResponse}, nil)
			if wantStatus := map[bool]checks.Status{false: checks.Pass, true: checks.Fail}[broken]; v.Status != wantStatus {
				t.Errorf("same_response = %s (%s), want %s", v.Status, v.Summary, wantStatus)
			}
		})
	}
}

// Replays follow a 2xx only, get no injected fault and are never retried,
// whatever they are answered.
func TestReplayOnlyAfterAckNoFaultNoRetry(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int64, body []byte) {
		switch {
		case strings.Contains(string(body), `"customer":"cus_0"`): // op 0: never acknowledged
			w.WriteHeader(http.StatusBadRequest)
		case r.Header.Get("X-Replay") != "" || strings.Contains(string(body), "replay"):
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 20, Concurrency: 4}
		sc.Faults = []scenarios.Fault{{Kind: "drop_ack", Rate: 0.5}}
		sc.Operation.Replay = &scenarios.Replay{Count: 1, Body: `{"amount":1,"customer":"replay-{{.Seq}}"}`}
	})
	h := mustRun(t, s, sc, 8)
	if as := h.AttemptsOf(0); len(as) != 1 || as[0].Status != 400 {
		t.Errorf("op 0 attempts %+v, want one 400 and no replay", as)
	}
	replays := 0
	for _, op := range h.Ops[1:] {
		as := h.AttemptsOf(op.ID)
		last := as[len(as)-1]
		if last.Fault != history.FaultMismatch || last.Status != 503 {
			t.Errorf("op %d last attempt %+v, want the replay answered 503", op.ID, last)
			continue
		}
		replays++
		prev := as[len(as)-2]
		if !prev.Acked() || last.N != prev.N+1 {
			t.Errorf("op %d replay %+v after %+v, want it right after the 2xx", op.ID, last, prev)
		}
	}
	if replays != 19 {
		t.Errorf("%d ops replayed, want 19", replays)
	}
}

// Replays wait beside the load: a long wait does not hold the workers.
// On a fake clock (bubbleServer): the 20 ops take no time, so the replay
// comes after them whatever the machine's load.
func TestReplayDoesNotHoldWorkers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, opts := bubbleServer(nil)
		opts.Seed = 1
		const after = 300 * time.Millisecond
		sc := scenario(func(sc *scenarios.Scenario) {
			sc.Load = scenarios.Load{Ops: 20, Concurrency: 1}
			sc.Operation.Replay = &scenarios.Replay{Count: 1, After: scenarios.Duration(after)}
		})
		start := time.Now()
		h, err := Run(runCtx(t), sc, opts)
		if err != nil {
			t.Fatalf("Run() error = %v", err)
		}
		if d := time.Since(start); d != after {
			t.Errorf("Run took %v for 20 ops on one worker with a %v replay wait, want the one wait, beside the load", d, after)
		}
		if len(h.Attempts) != 40 || len(s.requests()) != 40 {
			t.Errorf("%d attempts, %d requests, want 40 each", len(h.Attempts), len(s.requests()))
		}
		// The first op ends its load before its replay: the replay's first
		// send comes a wait after its answer, after later ops were sent.
		if as := h.AttemptsOf(0); as[1].Start < h.AttemptsOf(19)[0].Start {
			t.Errorf("op 0's replay started at %v before op 19's first send at %v", as[1].Start, h.AttemptsOf(19)[0].Start)
		}
	})
}

// Cancelling the run stops the replays waiting; Run returns at once and
// every op is still reported done.
func TestReplayCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(runCtx(t))
	defer cancel()
	s := newServer(t, nil)
	s.answer = func(w http.ResponseWriter, r *http.Request, n int64, body []byte) {
		if n == 6 {
			cancel()
		}
		w.WriteHeader(http.StatusCreated)
	}
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 6, Concurrency: 2}
		sc.Operation.Replay = &scenarios.Replay{Count: 1, After: scenarios.Duration(time.Hour)}
	})
	obs := &countingObserver{}
	start := time.Now()
	h, err := Run(ctx, sc, Options{Target: s.URL, Seed: 2, Observer: obs})
	if !errors.Is(err, context.Canceled) || !h.Meta.Interrupted {
		t.Errorf("Run() = %v, interrupted %v, want context.Canceled and interrupted", err, h.Meta.Interrupted)
	}
	if d := time.Since(start); d > bound/2 {
		t.Errorf("Run took %v after cancel, want at once", d)
	}
	for _, a := range h.Attempts {
		if a.Fault == history.FaultReplay {
			t.Errorf("replay %+v sent, want none within an hour", a)
		}
	}
	if obs.done.Load() != 6 {
		t.Errorf("OpDone called %d times, want 6", obs.done.Load())
	}
}

func TestKeyValue(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 6, Concurrency: 2}
		sc.Users = []string{"alice", "bob"}
		sc.Operation.Key.Value = "shared-{{div .Seq 2}}"
		sc.Operation.Body = `{"key":"{{.Key}}"}`
	})
	h := mustRun(t, s, sc, 1)
	var got []string
	for _, op := range h.Ops {
		got = append(got, op.User+" "+op.Key)
	}
	want := []string{"alice shared-0", "bob shared-0", "alice shared-1", "bob shared-1", "alice shared-2", "bob shared-2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	for _, r := range s.requests() {
		if k := jsonBody(t, r.Body)["key"]; k != r.Key {
			t.Errorf("body sees .Key %v, header %q: want the rendered key in both", k, r.Key)
		}
	}
}

func TestKeyValueRenderError(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 3, Concurrency: 1}
		sc.Operation.Key.Value = `{{div .Seq "two"}}`
	})
	h, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 1})
	var te *scenarios.TemplateError
	if !errors.As(err, &te) || te.Field != "operation.key.value" {
		t.Errorf("Run() error = %v, want a TemplateError on operation.key.value", err)
	}
	if len(s.requests()) != 0 || h == nil || len(h.Attempts) != 3 {
		t.Fatalf("server got %d requests, history %v: want none sent, 3 attempts recorded", len(s.requests()), h)
	}
	for _, a := range h.Attempts {
		if a.Outcome != history.Fail || !strings.HasPrefix(a.Err, "render: ") {
			t.Errorf("attempt %+v, want fail with a render error", a)
		}
	}
}

func TestCompileReplayErrors(t *testing.T) {
	t.Parallel()
	for _, edit := range []func(*scenarios.Scenario){
		func(sc *scenarios.Scenario) { sc.Operation.Key.Value = "{{.Seq" },
		func(sc *scenarios.Scenario) { sc.Operation.Replay = &scenarios.Replay{Body: "{{nope}}"} },
	} {
		_, err := Run(runCtx(t), scenario(edit), Options{Target: newServer(t, nil).URL})
		var te *scenarios.TemplateError
		if !errors.As(err, &te) {
			t.Errorf("Run() error = %v, want a TemplateError", err)
		}
	}
}
