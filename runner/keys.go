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
	identity
	fromEnv bool
	pcg     rand.PCG
	rnd     *rand.Rand
}

// NewKeys returns the keys of a run of sc with seed and nonce; env is what
// a key template's env reads.
func NewKeys(sc *scenarios.Scenario, seed, nonce uint64, env func(string) string) (*Keys, error) {
	id, err := newIdentity(sc, seed, nonce, env)
	if err != nil {
		return nil, err
	}
	k := &Keys{identity: id, fromEnv: scenarios.ReadsEnv(sc.Operation.Key.Value)}
	k.rnd = rand.New(&k.pcg)
	return k, nil
}

// FromEnv reports whether the keys depend on the environment (the key
// template reads {{env}}): the process that made an op may have had
// another, so the op's key cannot be told from here; its id and user can.
func (k *Keys) FromEnv() bool { return k.fromEnv }

// Op returns op id of the run as the runner records it: its id, key and
// user. ctx bounds a key template's render.
func (k *Keys) Op(ctx context.Context, id int) history.Op {
	op, _ := k.identify(ctx, id, &k.pcg, k.rnd)
	return op
}

// identity is what names an op of a run: its user, its key, whether it is
// a forgery, and the object it acts on. The runner (runOp) and Keys, which
// tells a lost shard's ops from its history's header, both draw it here,
// so that they agree.
type identity struct {
	seed     uint64          // an op's identity draws from (seed, op)
	runToken string          // scenarios.Vars.Run
	key      *scenarios.Text // operation.key.value; nil draws a UUID
	object   *scenarios.Text // operation.object; nil for none
	users    []string
	hook     *scenarios.Webhook // operation.webhook: which ops are forged
}

func newIdentity(sc *scenarios.Scenario, seed, nonce uint64, env func(string) string) (identity, error) {
	id := identity{seed: keySeed(seed, nonce, sc.Name), users: sc.Users, hook: sc.Operation.Webhook}
	id.runToken = fmt.Sprintf("%016x", id.seed)
	var err error
	if kv := sc.Operation.Key.Value; kv != "" {
		if id.key, err = scenarios.NewText("operation.key.value", kv, env); err != nil {
			return identity{}, err
		}
	}
	if id.object, err = scenarios.ObjectText(sc, env); err != nil {
		return identity{}, err
	}
	return id, nil
}

// identify names op n of the run, seeding pcg, which rnd draws from, for the op:
// the key's random draws come first, and rnd goes on from there for the
// op's request. A key that does not render is drawn as a UUID instead,
// which names the op in the history, and its error returned; so is an
// object that does not render.
func (id *identity) identify(ctx context.Context, n int, pcg *rand.PCG, rnd *rand.Rand) (history.Op, error) {
	pcg.Seed(id.seed, uint64(n))
	op := history.Op{ID: n}
	if len(id.users) > 0 {
		op.User = id.users[n%len(id.users)]
	}
	var err error
	if id.key == nil {
		op.Key = scenarios.NewKey(rnd)
	} else if op.Key, err = id.key.Render(ctx, scenarios.Vars{Seq: n, User: op.User, Rand: rnd, Run: id.runToken}); err != nil {
		op.Key = scenarios.NewKey(rnd)
	}
	if forged, _ := id.hook.Forges(n, op.Key); forged {
		op.Check = history.CheckForged
	}
	if err == nil {
		op.Object, err = scenarios.ObjectOf(ctx, id.object, op, id.runToken)
	}
	return op, err
}
