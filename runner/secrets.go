package runner

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Credentials and secrets.
//
// A target URL's userinfo (http://user:pass@host) is sent as Basic
// authorization with every request the runner makes (attempts, replays,
// operation.before reads, setup), as net/http's Client sends it for the
// preflight and the oracles, unless the request sets Authorization itself.
//
// The secrets a run sends (that userinfo and the Basic credential built of
// it, the target's query values, the values of the credential headers
// after templating and the values templates read from the environment)
// are registered in the run's one registry (Options.Secrets) and scrubbed
// from everything
// the history keeps of an answer: the evidence body, the kept fields and
// the error strings. A server that reflects a token in its error page
// does not put it into a report.

// maxTemplatedSecrets bounds the distinct credential header values a run
// learns from rendered requests: a signature that differs per request
// would otherwise grow the set (and the cost of every scrub) without end.
const maxTemplatedSecrets = 256

// basicAuth is the Authorization value for u's userinfo; "" when u has
// none.
func basicAuth(u *url.URL) string {
	if u == nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))
}

// keeper holds a run's secrets and the credentials of its targets.
type keeper struct {
	secrets *redact.Secrets
	auth    []string // Authorization per target; "" for none

	// headers with a template whose values are learned as they are sent
	templated []string
	mu        sync.Mutex
	learned   map[string]bool
}

// newKeeper returns the keeper of a run to targets of a scenario whose
// requests are reqs, registering their secrets in secrets (nil: a registry
// of its own); with paths, the targets' path segments are secrets too.
func newKeeper(secrets *redact.Secrets, targets []*url.URL, reqs []scenarios.Request, paths bool) *keeper {
	if secrets == nil {
		secrets = &redact.Secrets{}
	}
	k := &keeper{secrets: secrets, auth: make([]string, len(targets)), learned: map[string]bool{}}
	for i, u := range targets {
		k.auth[i] = basicAuth(u)
		k.secrets.AddURL(u) // the password, and the Basic credential built of it
		k.secrets.AddHeader("Authorization", k.auth[i])
		if paths && u != nil {
			for seg := range strings.SplitSeq(u.Path, "/") {
				k.secrets.Add(seg)
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range reqs {
		// Masked in every URL printed, a literal query value must be
		// masked where a server reflects it too.
		k.secrets.Add(scenarios.LiteralQueryValues(r.Path)...)
		for name, v := range r.Headers {
			if !strings.Contains(v, "{{") {
				k.secrets.AddHeader(name, v)
				continue
			}
			if c := http.CanonicalHeaderKey(name); redact.SecretHeader(c) && !seen[c] {
				seen[c] = true
				k.templated = append(k.templated, c)
			}
		}
	}
	return k
}

// env wraps getenv so that the values templates read become secrets of
// the run (redact.Secrets.Env).
func (k *keeper) env(getenv func(string) string) func(string) string {
	return k.secrets.Env(getenv)
}

// authorize sets req's Authorization to target i's credentials, unless the
// request sets it already, and learns the values of its templated
// credential headers. req's header map may be shared values (a static
// request's): only whole entries are set.
func (k *keeper) authorize(req *http.Request, i int) {
	if a := k.auth[i]; a != "" {
		if _, ok := req.Header["Authorization"]; !ok {
			req.Header["Authorization"] = []string{a}
		}
	}
	for _, name := range k.templated {
		vs := req.Header[name]
		if len(vs) == 0 {
			continue
		}
		k.mu.Lock()
		learn := !k.learned[vs[0]] && len(k.learned) < maxTemplatedSecrets
		if learn {
			k.learned[vs[0]] = true
		}
		k.mu.Unlock()
		if learn {
			k.secrets.AddHeader(name, vs...)
		}
	}
}

// scrub is text without the run's secrets.
func (k *keeper) scrub(text string) string {
	if k == nil || text == "" {
		return text
	}
	return k.secrets.Scrub(text)
}

// scrubPrefix is the first n bytes of b (and a little more, so a secret
// across the cut is seen whole) without the run's secrets: what evidence
// keeps of an answer. It scrubs before evidence truncates, so no part of
// a secret survives at the cut.
func (k *keeper) scrubPrefix(b []byte, n int) []byte {
	const margin = 4 << 10 // longer than any credential
	if len(b) > n+margin {
		b = b[:n+margin]
	}
	if k == nil {
		return b
	}
	return []byte(k.secrets.Scrub(string(b)))
}

// scrubFields scrubs every kept field value in place.
func (k *keeper) scrubFields(m map[string]string) map[string]string {
	for name, v := range m {
		m[name] = k.scrub(v)
	}
	return m
}

// redactTarget is u as histories and messages show it: its password and
// every query value masked (url.URL.Redacted keeps the query), and its
// path segments with paths.
func redactTarget(u *url.URL, paths bool) string { return redact.Options{Path: paths}.URL(u) }
