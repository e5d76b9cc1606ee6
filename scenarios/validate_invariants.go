package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/yamlstrict"
)

// Checks lists the invariant checks a scenario can name, sorted: the
// names of package checks' checkers.
func Checks() []string {
	out := checks.Names()
	slices.Sort(out)
	return out
}

// checkOracle returns the oracle kind check reads, whether it may do
// without one (settles judges "stuck in flight" from the history alone and
// "charged but told it failed" from an optional effects oracle; processes
// judges refusals alone and "acknowledged but no effect" from one), and
// whether check is known.
func checkOracle(check string) (kind string, optional, ok bool) {
	kind, ok = checks.OracleKind(check)
	if ok && kind == "" {
		if opt := checks.OptionalOracleKind(check); opt != "" {
			return opt, true, true
		}
	}
	return kind, false, ok
}

func (c *checker) invariants(kinds map[string]string) {
	s := c.s
	if len(s.Invariants) == 0 && s.Thresholds == (Thresholds{}) {
		c.add("invariants", "the scenario checks nothing", "invariants: [{check: exactly_once, oracle: ledger}]")
	}
	if len(s.Invariants) == 0 && s.Expect == ExpectViolation {
		c.add("expect", "expect: violation needs an invariant that can be violated", "add invariants, or expect: pass")
	}
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	slices.Sort(names)
	seen := map[Invariant]bool{}
	for i, inv := range s.Invariants {
		at := fmt.Sprintf("invariants[%d]", i)
		want, optional, known := checkOracle(inv.Check)
		if !known {
			c.add(at+".check", fmt.Sprintf("unknown check %q", inv.Check), yamlstrict.Suggest(inv.Check, Checks(), "check"))
			continue
		}
		if seen[inv] {
			c.add(at, fmt.Sprintf("%s on %q is listed twice", inv.Check, inv.Oracle), "keep one")
		}
		seen[inv] = true
		if inv.Check == checks.PayloadMismatch && (s.Operation.Replay == nil || s.Operation.Replay.Body == "") {
			c.add(at+".check", "payload_mismatch needs operation.replay.body: another payload to send under each acknowledged op's key",
				`operation: {replay: {after: 100ms, body: '{"amount":999,"currency":"usd","customer":"cus_{{.Seq}}"}'}}`, "operation.replay")
		}
		if inv.Check == checks.RejectsForged && (s.Operation.Webhook == nil || s.Operation.Webhook.Forged <= 0) {
			c.add(at+".check", "rejects_forged needs forged deliveries to judge: operation.webhook.forged",
				"operation: {webhook: {profile: standard, secret: '{{env \"WEBHOOK_SECRET\"}}', forged: 0.1}}", "operation.webhook")
		}
		if inv.Check == checks.OrderedApply && s.Operation.Object == "" {
			c.add(at+".check", "ordered_apply groups the ops by the object their event updates: operation.object",
				`operation: {object: 'cus_{{div .Seq 4}}'}`, "operation.object")
		}
		if want == "" {
			if inv.Oracle != "" {
				c.add(at+".oracle", inv.Check+" reads no oracle: it compares the answers in the history", "remove oracle")
			}
			continue
		}
		if inv.Oracle == "" {
			if optional {
				continue
			}
			c.add(at+".oracle", fmt.Sprintf("%s needs an %s oracle", inv.Check, want), oracleHint(want, names, kinds))
			continue
		}
		got, ok := kinds[inv.Oracle]
		switch {
		case !ok:
			c.add(at+".oracle", fmt.Sprintf("no oracle named %q", inv.Oracle), oracleHint(want, names, kinds))
		case got != want && got != "":
			c.add(at+".oracle", fmt.Sprintf("%s needs an %s oracle, %q is a %s oracle", inv.Check, want, inv.Oracle, got), oracleHint(want, names, kinds))
		}
	}
}

func oracleHint(want string, names []string, kinds map[string]string) string {
	var fit []string
	for _, n := range names {
		if kinds[n] == want {
			fit = append(fit, n)
		}
	}
	if len(fit) > 0 {
		return "oracles of that kind: " + strings.Join(fit, ", ")
	}
	return "add an oracle with " + want + ": and name it here"
}
