package runner

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Keys gives each op of a run of a scenario the id, key and user the run
// gives it, from the run's seed, key nonce and the scenario's name alone,
// without sending anything: operation.key.value rendered with the op's
// .Seq, .User, .Run and seeded source when the scenario has one (a key
// that does not render is then drawn as the runner draws it), else a UUID
// drawn from the op's seeded source. A judge checks with it that a
// shard's history holds that shard's own ops. It is not safe for
// concurrent use.
type Keys struct {
	seed     uint64
	runToken string
	key      *scenarios.Text
	fromEnv  bool
	users    []string
	hook     *scenarios.Webhook
	object   *scenarios.Text // operation.object; nil for none
	pcg      rand.PCG
	rnd      *rand.Rand
}

// NewKeys returns the keys of a run of sc with seed and nonce; env is what
// a key template's env reads.
func NewKeys(sc *scenarios.Scenario, seed, nonce uint64, env func(string) string) (*Keys, error) {
	k := &Keys{seed: keySeed(seed, nonce, sc.Name), users: sc.Users, hook: sc.Operation.Webhook}
	k.runToken = fmt.Sprintf("%016x", k.seed)
	k.rnd = rand.New(&k.pcg)
	if kv := sc.Operation.Key.Value; kv != "" {
		var err error
		if k.key, err = scenarios.NewText("operation.key.value", kv, env); err != nil {
			return nil, err
		}
		k.fromEnv = scenarios.ReadsEnv(kv)
	}
	var err error
	if k.object, err = scenarios.ObjectText(sc, env); err != nil {
		return nil, err
	}
	return k, nil
}

// FromEnv reports whether the keys depend on the environment (the key
// template reads {{env}}): the process that made an op may have had
// another, so the op's key cannot be told from here; its id and user can.
func (k *Keys) FromEnv() bool { return k.fromEnv }

// Op returns op id of the run as the runner records it: its id, key and
// user. ctx bounds a key template's render.
func (k *Keys) Op(ctx context.Context, id int) history.Op {
	op := history.Op{ID: id}
	if len(k.users) > 0 {
		op.User = k.users[id%len(k.users)]
	}
	k.pcg.Seed(k.seed, uint64(id))
	if k.key == nil {
		op.Key = scenarios.NewKey(k.rnd)
	} else {
		var err error
		if op.Key, err = k.key.Render(ctx, scenarios.Vars{Seq: id, User: op.User, Rand: k.rnd, Run: k.runToken}); err != nil {
			op.Key = scenarios.NewKey(k.rnd)
		}
	}
	if forged, _ := k.hook.Forges(id, op.Key); forged {
		op.Check = history.CheckForged
	}
	op.Object, _ = scenarios.ObjectOf(ctx, k.object, op, k.runToken)
	return op
}
