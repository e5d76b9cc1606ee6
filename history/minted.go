package history

// MintedKeyField is the name under which an attempt's Fields, and an
// Answer's, keep the idempotency key the server returned in that answer,
// when the scenario takes its keys from the answers
// (operation.key.from_answer). The op's Key stays the name the client
// chose for it; the keys in these fields are the others the server may
// have recorded its effects under, which an effects oracle reads and
// counts for the op (see docs/scenario.md).
const MintedKeyField = "minted_key"

// MintedKeys are the keys the answers of attempts (their own and their
// other answers, hidden ones included) carried in MintedKeyField, each
// once, in order, leaving out the op's own key.
func MintedKeys(opKey string, attempts []Attempt) []string {
	var out []string
	add := func(f map[string]string) {
		k := f[MintedKeyField]
		if k == "" || k == opKey {
			return
		}
		for _, o := range out {
			if o == k {
				return
			}
		}
		out = append(out, k)
	}
	for i := range attempts {
		add(attempts[i].Fields)
		for _, x := range attempts[i].Answers {
			add(x.Fields)
		}
	}
	return out
}

// MintedKeysOf is MintedKeys of op's attempts, h holding them.
func (h *History) MintedKeysOf(op int) []string {
	if op < 0 || op >= len(h.Ops) {
		return nil
	}
	return MintedKeys(h.Ops[op].Key, h.AttemptsOf(op))
}
