package checks

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

var (
	bigOnce sync.Once
	bigH    *history.History
	bigObs  *history.Reading
)

// bigHistory is 1,000,000 ops with 1 to 3 attempts each (lost acks,
// resets, retries) and an effect per key that sent something.
func bigHistory() (*history.History, *history.Reading) {
	bigOnce.Do(func() {
		const n = 1_000_000
		h := &history.History{Ops: make([]history.Op, n), Attempts: make([]history.Attempt, 0, 2*n)}
		eff := make(map[string]int, n)
		for i := range n {
			k := "key-" + strconv.Itoa(i)
			h.Ops[i] = history.Op{ID: i, Key: k, User: "alice"}
			var atts []history.Attempt
			switch i % 3 {
			case 0:
				atts = []history.Attempt{{Outcome: history.OK, Status: 201, Fingerprint: history.Fingerprint(i)}}
			case 1:
				atts = []history.Attempt{{Outcome: history.Info, Fault: "drop_ack"}, {Outcome: history.OK, Status: 201, Fingerprint: history.Fingerprint(i)}}
			default:
				atts = []history.Attempt{{Outcome: history.Fail, Fault: "reset"}, {Outcome: history.Info, Fault: "timeout"}, {Outcome: history.OK, Status: 201, Fingerprint: history.Fingerprint(i)}}
			}
			for j, a := range atts {
				a.Op, a.N = i, j+1
				a.Intended = time.Duration(i) * time.Microsecond
				a.Start, a.End = a.Intended, a.Intended+time.Millisecond
				h.Attempts = append(h.Attempts, a)
			}
			eff[k] = 1
		}
		h.Sort()
		h.AttemptsOf(0) // build the index outside the timed part
		bigH, bigObs = h, &history.Reading{Oracle: "ledger", Kind: history.KindEffects, Effects: eff}
	})
	return bigH, bigObs
}

func benchCheck(b *testing.B, check string) {
	h, obs := bigHistory()
	inv := history.Invariant{Check: check, Oracle: "ledger"}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if v := Check(h, inv, obs); v.Status != Pass {
			b.Fatalf("Check(%s) = %s %s, want pass", check, v.Status, v.Summary)
		}
	}
}

func BenchmarkCheckAtMostOnce1M(b *testing.B) { benchCheck(b, AtMostOnce) }
func BenchmarkExactlyOnce1M(b *testing.B)     { benchCheck(b, ExactlyOnce) }
func BenchmarkSameResponse1M(b *testing.B)    { benchCheck(b, SameResponse) }
