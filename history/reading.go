package history

// The kinds of reading an oracle takes, as Reading.Kind holds them and as
// the checkers ask for them.
const (
	// KindEffects: an effect count per key.
	KindEffects = "effects"
	// KindCounter: one counter, read before and after the run.
	KindCounter = "counter"
	// KindAccount: a balance and version, read before and after the run,
	// with the operations applied to it.
	KindAccount = "account"
	// KindState: per object, the order (op id) of the event whose state
	// it holds.
	KindState = "state"
)

// Kinds returns every reading kind.
func Kinds() []string { return []string{KindEffects, KindCounter, KindAccount} }

// Reading is what an oracle read of the target's real state. It is part
// of the history (a "reading" record in history.jsonl, as Jepsen keeps its
// final reads), so a saved run can be judged again with nothing else.
type Reading struct {
	Oracle string `json:"oracle"`
	// Kind is "effects", "counter" or "account".
	Kind string `json:"kind"`
	// Effects maps a key to its effect count (effects); a key absent
	// means 0.
	Effects map[string]int `json:"effects,omitempty"`
	// EffectsBefore holds, for the run's keys that already had effects
	// before the load (an oracle that reads every key, e.g. a bulk list,
	// reads before too), their count then: evidence that the run resent
	// earlier keys. The checkers judge a key on its total effects.
	EffectsBefore map[string]int `json:"effects_before,omitempty"`
	// Strangers counts the keys no op of the run sent whose effects grew
	// during it (another writer, or an API that rewrites keys);
	// StrangerKeys names a few.
	Strangers    int      `json:"strangers,omitempty"`
	StrangerKeys []string `json:"stranger_keys,omitempty"`
	// Before is the counter's value before the run (counter).
	Before *int64 `json:"before,omitempty"`
	// After is the counter's value after the run (counter).
	After *int64 `json:"after,omitempty"`
	// Account is the account read before and after the run (account).
	Account *Account `json:"account,omitempty"`
	// States maps an object (Op.Object) to the op id of the event whose
	// state it holds (state); an object absent has no state.
	States map[string]int `json:"states,omitempty"`
	// Err is set when the oracle could not read; checks on this reading
	// are Unknown with this reason.
	Err string `json:"error,omitempty"`
}

// Account is an account read before and after the run, with the operations
// applied to it during the run.
type Account struct {
	BalanceBefore int64     `json:"balance_before"`
	BalanceAfter  int64     `json:"balance_after"`
	VersionBefore int64     `json:"version_before"`
	VersionAfter  int64     `json:"version_after"`
	Applied       []Applied `json:"applied"`
}

// Applied is one operation the account's log says was applied.
type Applied struct {
	Key    string `json:"key"`
	Amount int64  `json:"amount"`
}
