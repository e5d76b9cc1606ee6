package oracles

import (
	"sort"
	"sync"

	"github.com/idemcheck/idemcheck/history"
)

// maxStrangerKeys bounds the keys a reading names among those the run
// never sent.
const maxStrangerKeys = 5

// allKeys is the reading before the load of an effects oracle that reads
// every key at once (a bulk list, a grouped query), so that the reading
// after can tell the run's own effects from those its keys already had,
// and effects under keys the run never sent.
type allKeys struct {
	mu     sync.Mutex
	before map[string]int // nil until read
}

func (a *allKeys) keep(m map[string]int) {
	a.mu.Lock()
	a.before = m
	a.mu.Unlock()
}

// reading splits the counts of every key read after the load into the
// reading of the run's keys: their effects, what they had before (when a
// reading was taken before), and the keys the run never sent that gained
// effects.
func (a *allKeys) reading(oracle string, all map[string]int, keys []string) (*history.Reading, error) {
	if _, err := effectsObservation(oracle, all, nil); err != nil {
		return nil, err // a negative count is no count
	}
	a.mu.Lock()
	before := a.before
	a.mu.Unlock()
	r := &history.Reading{Oracle: oracle, Kind: history.KindEffects, Effects: make(map[string]int)}
	sent := keySet(keys)
	for k, n := range all {
		if sent == nil || sent[k] {
			if n != 0 {
				r.Effects[k] = n
			}
			if b := before[k]; b != 0 {
				if r.EffectsBefore == nil {
					r.EffectsBefore = map[string]int{}
				}
				r.EffectsBefore[k] = b
			}
			continue
		}
		if before != nil && n > before[k] {
			r.Strangers++
			r.StrangerKeys = append(r.StrangerKeys, k)
		}
	}
	sort.Strings(r.StrangerKeys)
	if len(r.StrangerKeys) > maxStrangerKeys {
		r.StrangerKeys = r.StrangerKeys[:maxStrangerKeys]
	}
	return r, nil
}
