package runner

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Keys gives every op the id, key and user a run records for it, in one
// process or in a shard, for drawn keys, key templates of every variable
// and function, and a key that does not render.
func TestKeysAreTheRunsKeys(t *testing.T) {
	for name, value := range map[string]string{
		"drawn":       "",
		"template":    "k-{{.User}}-{{.Seq}}-{{.Run}}-{{randInt . 1 1000}}-{{uuid .}}",
		"shared":      "shared-{{.Run}}-{{div .Seq 2}}",
		"static":      "one-key",
		"not renders": "{{randInt . 5 1}}",
		// the run records no object for an op whose key failed
		"not renders, with an object": "{{randInt . 5 1}}",
		"with an object":              "k-{{.Seq}}",
	} {
		t.Run(name, func(t *testing.T) {
			sc := scenario(func(sc *scenarios.Scenario) {
				sc.Name = "keys-" + name
				sc.Users = []string{"alice", "bob", "carol"}
				sc.Load = scenarios.Load{Ops: 13, Concurrency: 3}
				sc.Operation.Key.Value = value
				if strings.Contains(name, "object") {
					sc.Operation.Object = "obj-{{.Key}}-{{mod .Seq 3}}"
				}
			})
			s := newServer(t, nil)
			const seed, nonce = 42, 7
			keys, err := NewKeys(sc, seed, nonce, nil)
			if err != nil {
				t.Fatal(err)
			}
			if keys.FromEnv() {
				t.Errorf("%q: FromEnv, want not", value)
			}
			want := func(id int) history.Op { return keys.Op(context.Background(), id) }
			h, _ := Run(runCtx(t), sc, Options{Target: s.URL, Seed: seed, KeyNonce: nonce})
			for _, op := range h.Ops {
				if got := want(op.ID); !cmp.Equal(got, op) {
					t.Errorf("op %d: Keys says %+v, the run recorded %+v", op.ID, got, op)
				}
				if name == "with an object" && op.Object != "obj-"+op.Key+"-"+strconv.Itoa(op.ID%3) {
					t.Errorf("op %d: object %q, want the template's", op.ID, op.Object)
				}
			}
			sh := history.Shard{Index: 1, Count: 3}
			h, _ = Run(runCtx(t), sc, Options{Target: s.URL, Seed: seed, KeyNonce: nonce, Shard: sh})
			for _, op := range h.Ops {
				g := want(sh.Global(op.ID))
				if g.Key != op.Key || g.User != op.User {
					t.Errorf("shard %s's op %d: Keys says %+v for the run's op %d, the shard recorded %+v", sh, op.ID, g, sh.Global(op.ID), op)
				}
			}
			if len(h.Ops) != sh.Ops(13) {
				t.Errorf("shard %s: %d ops, want %d", sh, len(h.Ops), sh.Ops(13))
			}
		})
	}
	sc := scenario(func(sc *scenarios.Scenario) { sc.Operation.Key.Value = `{{env "PREFIX" "p"}}-{{.Seq}}` })
	keys, err := NewKeys(sc, 1, 0, nil)
	if err != nil || !keys.FromEnv() {
		t.Errorf("a key template reading the environment: FromEnv false (%v)", err)
	}
}
