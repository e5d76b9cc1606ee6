package history

import "hash/fnv"

// PartOf returns which of n parts key belongs to: every op of a key is in
// one part, so each part can be judged alone (checks.Judger).
func PartOf(key string, n int) int {
	if n <= 1 {
		return 0
	}
	f := fnv.New64a()
	f.Write([]byte(key))
	return int(f.Sum64() % uint64(n))
}

// Partition splits h into n parts by key (PartOf). A part holds every op
// of its keys, in id order, each at its index in the part with its id in
// the run kept in Op.ID; its attempts name their op by that index, and
// are sorted. Parts share h's Meta and have no readings. h must be
// sorted (Sort).
func Partition(h *History, n int) []*History {
	n = max(n, 1)
	parts := make([]*History, n)
	for i := range parts {
		parts[i] = &History{Meta: h.Meta}
	}
	for id := range h.Ops {
		op := h.Ops[id]
		p := parts[PartOf(op.Key, n)]
		local := len(p.Ops)
		p.Ops = append(p.Ops, op)
		for _, a := range h.AttemptsOf(id) {
			a.Op = local
			p.Attempts = append(p.Attempts, a)
		}
	}
	return parts
}
