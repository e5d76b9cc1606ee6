package measure

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// TestMeasuredInPartsAsWhole: the measures and charts of a history taken
// one part at a time are those of the history whole.
func TestMeasuredInPartsAsWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	h := &history.History{Meta: history.Meta{Started: time.Unix(100, 0), Ended: time.Unix(103, 0)}}
	for id := range 2000 {
		h.Ops = append(h.Ops, history.Op{ID: id, Key: fmt.Sprintf("k%d", r.IntN(1500))})
		for n := 1; n <= 1+r.IntN(3); n++ {
			at := time.Duration(r.IntN(3000)) * time.Millisecond
			a := history.Attempt{Op: id, N: n, Intended: at, Start: at, End: at + time.Duration(1+r.IntN(200))*time.Millisecond,
				Outcome: history.OK, Status: []int{200, 201, 409, 500}[r.IntN(4)]}
			switch r.IntN(5) {
			case 0:
				a.Fault, a.Outcome, a.Status, a.Err = "timeout", history.Info, 0, "timeout"
			case 1:
				a.Fault = "duplicate"
			case 2:
				a.Outcome, a.Status, a.Err = history.Fail, 0, "connection refused"
			}
			h.Attempts = append(h.Attempts, a)
		}
	}
	h.Sort()
	wantM, wantC := Of(h), ChartsOf(h)
	if len(wantC.Buckets) < Columns/2 || len(wantC.Faults) == 0 || wantM.Load.Ops != 2000 {
		t.Fatalf("the history is too thin to compare: %d buckets, %d fault marks, %d ops", len(wantC.Buckets), len(wantC.Faults), wantM.Load.Ops)
	}
	for _, n := range []int{2, 5, 33} {
		m, c := NewAcc(), NewChartsAcc(history.Span(h.Attempts))
		for _, p := range history.Partition(h, n) {
			m.Add(p)
			c.Add(p)
		}
		if got := m.Measures(h.Meta); !reflect.DeepEqual(got, wantM) {
			t.Errorf("%d parts: measures\n got %+v\nwant %+v", n, got, wantM)
		}
		if got := c.Charts(); !reflect.DeepEqual(got, wantC) {
			t.Errorf("%d parts: charts\n got %+v\nwant %+v", n, got, wantC)
		}
	}
}
