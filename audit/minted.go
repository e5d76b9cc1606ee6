package audit

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/theory/jsonpath"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
)

// Keys the API mints (Config.KeyFromAnswer): the first request of an op
// carries no key, its answer gives one (in a header, or a JSON field), and
// every later request of the op carries that key. The op's key in the
// history becomes the minted key, so that the oracle reads it and the
// checks judge it.

// mintedField is the answer field (history.Attempt.Fields) that keeps a
// key minted in the body.
const mintedField = checks.MintedField

// mintChecks are the checks a minted key leaves without a probe, and why.
var mintChecks = map[string]string{
	"C01": "the API mints the keys (--key-from-answer): a request without a key is the first request of every op",
	"C02": "the API mints the keys (--key-from-answer): the client sends no key of its own shape",
	"C28": "the API mints the keys (--key-from-answer): a request cut by a crash got no key to retry with",
	"C27": "the API mints the keys (--key-from-answer): the client sends no key of its own shape",
	"C06": "the API mints the keys (--key-from-answer): concurrent first requests cannot share a key not minted yet",
	"C07": "the API mints the keys (--key-from-answer): concurrent first requests cannot share a key not minted yet",
	"C08": "the API mints the keys (--key-from-answer): a copy sent while the first is in flight has no key to carry yet",
	"C09": "the API mints the keys (--key-from-answer): a client that lost the first answer has no key to retry with",
	"C10": "the API mints the keys (--key-from-answer): a client that lost the first answer has no key to retry with",
	"C13": "the API mints the keys (--key-from-answer): a client that lost the first answer has no key to retry with",
}

// mintedFrom checks where the key comes from: a JSONPath ($.key) into the
// answer's body, or a header the runner's client keeps in every attempt
// (history.AnswerHeaders). It returns the header's canonical name, or
// the path.
func mintedFrom(where string, keyField string) (header, path string, err error) {
	if where == "" {
		return "", "", nil
	}
	if keyField != "" {
		return "", "", fmt.Errorf("%w: --key-from-answer goes with a key in a header, not in body field %q", ErrConfig, keyField)
	}
	if strings.HasPrefix(where, "$") {
		if _, err := jsonpath.Parse(where); err != nil {
			return "", "", fmt.Errorf("%w: key from answer %q: %w", ErrConfig, where, err)
		}
		return "", where, nil
	}
	name := http.CanonicalHeaderKey(where)
	if !slices.Contains(history.AnswerHeaders, name) {
		return "", "", fmt.Errorf("%w: key from answer %q: the audit keeps only the answer headers %s, or a JSONPath into the answer ($.idempotency_key)",
			ErrConfig, where, strings.Join(history.AnswerHeaders, ", "))
	}
	return name, "", nil
}

// minting reports whether the API mints the keys.
func (a *Auditor) minting() bool { return a.mintHeader != "" || a.mintPath != "" }

// minted is the key the API minted for the op whose own key is key.
func (a *Auditor) minted(key string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m, ok := a.mints[key]
	return m, ok
}

// learn notes the key an answer of o minted: the op is recorded under the
// first one its requests without a key got (first), and its effects are
// read under every key its answers minted (an API that mints a key anew
// for a retry charged under two).
func (a *Auditor) learn(o op, at *history.Attempt, first bool) {
	m := at.Headers[a.mintHeader]
	if a.mintPath != "" {
		m = at.Fields[mintedField]
	}
	if m == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Contains(a.mintsAll[o.key], m) {
		a.mintsAll[o.key] = append(a.mintsAll[o.key], m)
	}
	if _, ok := a.mints[o.key]; ok || !first {
		return
	}
	a.mints[o.key] = m
	a.h.Ops[o.id].Key = m
}

// serverKeys are keys (the ops' own) as the API knows them: every key
// the API minted for the op, where it minted.
func (a *Auditor) serverKeys(keys []string) []string {
	if !a.minting() {
		return slices.Clone(keys)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, k := range keys {
		ms := a.mintsAll[k]
		if len(ms) == 0 {
			ms = []string{k}
		}
		for _, m := range ms {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}
