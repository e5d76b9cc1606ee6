package measure

import (
	"testing"
	"time"
)

// SlowAllowed agrees with the percentiles PercentilesOf reads: for every
// load of up to 300 ops and every count of slow ops, the percentile is
// over the limit exactly when more ops than SlowAllowed are slower.
func TestSlowAllowedAgreesWithTheHistogram(t *testing.T) {
	const limit = 100 * time.Millisecond
	for _, p := range []struct {
		pct  float64
		read func(Percentiles) time.Duration
	}{
		{50, func(x Percentiles) time.Duration { return x.P50 }},
		{90, func(x Percentiles) time.Duration { return x.P90 }},
		{99, func(x Percentiles) time.Duration { return x.P99 }},
		{99.9, func(x Percentiles) time.Duration { return x.P999 }},
	} {
		for n := 1; n <= 300; n++ {
			allowed := SlowAllowed(p.pct, n)
			for _, slow := range []int{allowed, allowed + 1} {
				if slow > n {
					continue
				}
				h := NewHistogram()
				for i := range n {
					d := 10 * time.Millisecond
					if i < slow {
						d = 2 * limit
					}
					Record(h, d)
				}
				over := p.read(PercentilesOf(h)) > limit
				if over != (slow > allowed) {
					t.Fatalf("p%v of %d ops with %d slow: over the limit %v, SlowAllowed %d says %v", p.pct, n, slow, over, allowed, slow > allowed)
				}
			}
			if n > 1 && SlowAllowed(p.pct, n) < SlowAllowed(p.pct, n-1) {
				t.Fatalf("p%v: SlowAllowed(%d) = %d < SlowAllowed(%d) = %d", p.pct, n, SlowAllowed(p.pct, n), n-1, SlowAllowed(p.pct, n-1))
			}
		}
	}
}
