package runner

import (
	"math"
	"time"
)

// Pacer spaces the ops of the open model at a constant rate: when each is
// due. It is a pure function of the op's number, so it is tested without
// sleeping (after vegeta's ConstantPacer).
type Pacer struct {
	Rate float64 // ops per second, > 0
}

// Due returns when op number hit (0-based) is scheduled, as an offset from
// the start of the load: hit / Rate.
func (p Pacer) Due(hit int) time.Duration {
	if p.Rate <= 0 {
		return 0
	}
	d := float64(hit) * float64(time.Second) / p.Rate
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}
