package runner

import (
	"math"
	"time"
)

// Pacer spaces the ops of the open model at a constant rate. It is a pure
// function of the elapsed time and the number of ops already issued, so it
// is tested without sleeping (after vegeta's ConstantPacer).
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

// Pace returns how long to wait, at elapsed since the start, before issuing
// the next op when hits ops were already issued: 0 when it is due (or
// overdue: a pacer that fell behind catches up at once), else the time left
// until it is due.
func (p Pacer) Pace(elapsed time.Duration, hits int) time.Duration {
	due := p.Due(hits)
	if due <= elapsed {
		return 0
	}
	return due - elapsed
}
