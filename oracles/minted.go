package oracles

import "github.com/idemcheck/idemcheck/history"

// minted maps each key a server minted for an op (the keys its answers
// carried, history.MintedKeys: operation.key.from_answer) to the op's own
// key; nil when no op has one.
type minted map[string]string

// effectKeys are the keys an effects oracle reads for h: every op's own
// key (distinctKeys), then every key the server minted for an op, which
// it may have recorded the op's effects under (the op's first attempt may
// have sent no key at all), with the op each minted key counts for. The
// effects of an op are the sum over its keys: each effect is recorded
// under one key, the client's or the minted one. A history spilled to
// disk is read by its ops' own keys only.
func effectKeys(h *history.History) ([]string, minted, error) {
	keys, err := distinctKeys(h)
	if err != nil || h == nil || h.Spill != nil {
		return keys, nil, err
	}
	var m minted
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k] = true
	}
	for i, op := range h.Ops {
		for _, k := range h.MintedKeysOf(i) {
			if seen[k] {
				continue // another op's own key, or minted for another op
			}
			seen[k] = true
			if m == nil {
				m = minted{}
			}
			m[k] = op.Key
			keys = append(keys, k)
		}
	}
	return keys, m, nil
}

// owner is the op key whose effects k's count.
func (m minted) owner(k string) string {
	if o, ok := m[k]; ok {
		return o
	}
	return k
}

// fold moves the effects counted under minted keys to their ops' keys,
// in r's effects and in its effects before the load.
func (m minted) fold(r *history.Reading, err error) (*history.Reading, error) {
	if err != nil || r == nil || m == nil {
		return r, err
	}
	r.Effects = m.sum(r.Effects)
	r.EffectsBefore = m.sum(r.EffectsBefore)
	return r, nil
}

func (m minted) sum(counts map[string]int) map[string]int {
	if counts == nil {
		return nil
	}
	out := make(map[string]int, len(counts))
	for k, n := range counts {
		out[m.owner(k)] += n
	}
	return out
}
