package oracles

import "github.com/idemcheck/idemcheck/history"

// Attempt and history builders for oracle tests that judge what they read.
func ok(status int) history.Attempt {
	return history.Attempt{Outcome: history.OK, Status: status, Fingerprint: 1}
}

func lost() history.Attempt {
	return history.Attempt{Outcome: history.Info, Fault: "drop_ack", Err: "connection lost"}
}

type op struct {
	key  string
	atts []history.Attempt
}

func o(key string, atts ...history.Attempt) op { return op{key: key, atts: atts} }

// hist builds a sorted history of ops, one per key.
func hist(ops ...op) *history.History {
	h := &history.History{}
	for i, x := range ops {
		h.Ops = append(h.Ops, history.Op{ID: i, Key: x.key})
		for n, a := range x.atts {
			a.Op, a.N = i, n+1
			h.Attempts = append(h.Attempts, a)
		}
	}
	h.Sort()
	return h
}
