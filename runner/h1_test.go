package runner

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/h1"
	"github.com/idemcheck/idemcheck/scenarios"
)

// internal/h1 is the runner's default client, so every runner test runs
// through it; this one checks that the client changes nothing the seed
// decides: the same faults, outcomes and ops as through net/http.

// h1Options are the options of a run against u through an h1 transport.
func h1Options(t *testing.T, u *url.URL, seed uint64) Options {
	t.Helper()
	tr := h1.New(NewTransport(8), 8)
	t.Cleanup(tr.CloseIdleConnections)
	return Options{Target: u, Seed: seed, Transport: tr}
}

func TestH1FaultsAndHistory(t *testing.T) {
	t.Parallel()
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 60, Concurrency: 6}
		sc.Faults = []scenarios.Fault{
			{Kind: "drop_ack", Rate: 0.3},
			{Kind: "reset", Rate: 0.2},
			{Kind: "duplicate", Rate: 0.1, Copies: 2},
		}
	})
	run := func(viaH1 bool) ([]faultSeq, []history.Op) {
		s := newServer(t, nil)
		opts := Options{Target: s.URL, Seed: 42}
		if viaH1 {
			opts = h1Options(t, s.URL, 42)
		}
		h, err := Run(runCtx(t), sc, opts)
		if err != nil {
			t.Fatalf("Run() error = %v", err)
		}
		counts := s.perKey()
		var seq []faultSeq
		for _, op := range h.Ops {
			sent := 0
			for _, a := range h.AttemptsOf(op.ID) {
				seq = append(seq, faultSeq{a.Op, a.N, a.Fault, a.Outcome})
				switch a.Fault {
				case "drop_ack":
					sent++
					if a.Outcome != history.Info || len(a.Answers) != 1 || !a.Answers[0].Hidden || a.Answers[0].Status != 201 {
						t.Errorf("drop_ack attempt %d/%d = %+v, want info with the hidden 201", a.Op, a.N, a)
					}
				case "reset":
					if a.Outcome != history.Fail {
						t.Errorf("reset attempt %d/%d outcome %v, want fail", a.Op, a.N, a.Outcome)
					}
				case "duplicate":
					sent += 2
					if a.Outcome != history.OK || a.Copies != 2 || len(a.Answers) != 1 || a.Answers[0].Fingerprint != a.Fingerprint {
						t.Errorf("duplicate attempt %d/%d = %+v, want ok with the other copy's answer", a.Op, a.N, a)
					}
				default:
					sent++
					if a.Outcome != history.OK || a.Status != 201 || a.Fingerprint == 0 {
						t.Errorf("attempt %d/%d = %+v, want ok 201 with a fingerprint", a.Op, a.N, a)
					}
				}
			}
			if counts[op.Key] != sent {
				t.Errorf("op %d: the server got %d requests, the history shows %d sends", op.ID, counts[op.Key], sent)
			}
		}
		return seq, h.Ops
	}
	netSeq, netOps := run(false)
	h1Seq, h1Ops := run(true)
	if diff := cmp.Diff(netSeq, h1Seq); diff != "" {
		t.Errorf("same seed, other faults or outcomes through h1 (-net/http +h1):\n%s", diff)
	}
	if diff := cmp.Diff(netOps, h1Ops); diff != "" {
		t.Errorf("same seed, other ops through h1 (-net/http +h1):\n%s", diff)
	}
}
