package oracles

import (
	"context"
	"fmt"

	"github.com/idemcheck/idemcheck/history"
)

var _ Oracle = (*SumEffects)(nil)

// SumEffects is one effects oracle read on several targets, each keeping
// its own store: a key's effects are the sum of what each part reads. A
// part that cannot read makes the whole unreadable: a partial sum could
// hide a duplicate.
type SumEffects struct {
	OracleName string
	// Parts read the effects on each target; they are read one after the
	// other.
	Parts []Oracle
}

// Name returns the oracle's name.
func (o *SumEffects) Name() string { return o.OracleName }

// Before calls every part's Before.
func (o *SumEffects) Before(ctx context.Context) error {
	for _, p := range o.Parts {
		if err := p.Before(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Observe reads every part and adds up the effects of each key.
func (o *SumEffects) Observe(ctx context.Context, h *history.History) (*history.Reading, error) {
	if len(o.Parts) == 0 {
		return nil, fmt.Errorf("oracle %s: no target to read", o.OracleName)
	}
	effects := make(map[string]int)
	for i, p := range o.Parts {
		r, err := p.Observe(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("target %d: %w", i+1, err)
		}
		if r == nil || r.Kind != history.KindEffects {
			return nil, fmt.Errorf("oracle %s: target %d gave no effects reading", o.OracleName, i+1)
		}
		for k, n := range r.Effects {
			effects[k] += n
		}
	}
	return &history.Reading{Oracle: o.OracleName, Kind: history.KindEffects, Effects: effects}, nil
}
