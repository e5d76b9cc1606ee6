package redact

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// MinSecret is the shortest value Secrets scrubs from text: a shorter one
// would turn common words and numbers into masks and hide nothing.
const MinSecret = 4

// SecretHeader reports whether a header named name carries a credential:
// Authorization, Cookie, an API key, a token, a session, a signature. An
// Idempotency-Key is not one.
func SecretHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	for _, w := range []string{"auth", "token", "secret", "password", "passwd", "session", "signature", "hmac", "cookie",
		"api-key", "api_key", "apikey", "access-key", "access_key", "private-key", "private_key", "csrf", "xsrf"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Secrets is a set of secret values, such as the credentials a run sends,
// to scrub from free text that may reflect them: answer bodies, errors. It
// is safe for concurrent use; the zero value is empty and ready.
type Secrets struct {
	mu   sync.Mutex
	vals map[string]bool
	r    *strings.Replacer // nil when vals changed since it was built

	short []string // environment variables read too short to mask (Env)
}

// Add adds values, each with the forms a server or a renderer may write
// it in: URL query and path escaped, JSON escaped with or without "\/",
// and base64 (standard and URL alphabets, with or without padding, and,
// for values of MinEncoded bytes and more, the characters that encode the
// value alone at each of the three alignments, so that the value is masked
// inside the base64 of a longer text such as Basic's user:password).
// Values shorter than MinSecret are ignored.
func (s *Secrets) Add(values ...string) {
	for _, v := range values {
		if v = strings.TrimSpace(v); len(v) >= MinSecret {
			s.add(forms(v))
		}
	}
}

// add adds the strings of fs as they are.
func (s *Secrets) add(fs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vals == nil {
		s.vals = map[string]bool{}
	}
	for _, f := range fs {
		if f != "" && !s.vals[f] {
			s.vals[f] = true
			s.r = nil
		}
	}
}

// MinEncoded is the shortest value whose base64 is masked inside a longer
// base64 text: the characters that encode a shorter one alone are too few
// to be told from other base64.
const MinEncoded = 8

// forms are the ways v is written: raw, escaped and encoded.
func forms(v string) []string {
	j, _ := json.Marshal(v)
	js := string(j[1 : len(j)-1])
	var plain strings.Builder
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	jp := strings.TrimSpace(plain.String())
	jp = jp[1 : len(jp)-1]
	return append([]string{v, url.QueryEscape(v), url.PathEscape(v), js, strings.ReplaceAll(js, "/", `\/`), jp, strings.ReplaceAll(jp, "/", `\/`)}, base64Forms(v)...)
}

// base64Forms are v in base64: whole, and, from MinEncoded bytes up, the
// characters that encode v alone at each alignment.
func base64Forms(v string) []string {
	var out []string
	for _, e := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		b := e.EncodeToString([]byte(v))
		out = append(out, b, strings.TrimRight(b, "="))
		if len(v) < MinEncoded {
			continue
		}
		// At alignment k (k bytes before v in a group of three), the
		// characters from ceil(8k/6) to floor(8(k+n)/6) depend on v alone.
		for k := 1; k <= 2; k++ {
			pad := make([]byte, k, k+len(v))
			b := e.EncodeToString(append(pad, v...))
			out = append(out, b[(8*k+5)/6:(8*(k+len(v)))/6])
		}
		out = append(out, b[:8*len(v)/6])
	}
	return out
}

// AddHeader adds the values of a header named name when SecretHeader says
// it carries a credential: each whole value, the credentials after an
// authorization scheme ("Bearer t" adds t; "Basic b" adds b, the decoded
// user:password and the password) and each cookie's value.
func (s *Secrets) AddHeader(name string, values ...string) {
	if !SecretHeader(name) {
		return
	}
	for _, v := range values {
		s.Add(v)
		if scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
			cred = strings.TrimSpace(cred)
			s.Add(cred)
			if strings.EqualFold(scheme, "basic") {
				if d, err := base64.StdEncoding.DecodeString(cred); err == nil {
					_, pw, _ := strings.Cut(string(d), ":")
					s.Add(string(d), pw)
				}
			}
		}
		for c := range strings.SplitSeq(v, ";") {
			if _, cv, ok := strings.Cut(c, "="); ok {
				s.Add(cv)
			}
		}
	}
}

// AddURL adds the secrets of u: its userinfo password, the base64 of the
// user:password that Basic authorization sends, and every query value.
func (s *Secrets) AddURL(u *url.URL) {
	if u == nil {
		return
	}
	if p, ok := u.User.Password(); ok {
		s.Add(p)
		if p != "" {
			s.add(base64Forms(u.User.Username() + ":" + p))
		}
	}
	q, _ := url.ParseQuery(u.RawQuery)
	for _, vs := range q {
		s.Add(vs...)
	}
}

// Scrub is text with every secret in the set replaced by Mask, the longest
// first, so a secret that contains another is masked whole.
func (s *Secrets) Scrub(text string) string {
	if s == nil {
		return text
	}
	s.mu.Lock()
	if s.r == nil {
		if len(s.vals) == 0 {
			s.mu.Unlock()
			return text
		}
		vals := make([]string, 0, len(s.vals))
		for v := range s.vals {
			vals = append(vals, v)
		}
		slices.SortFunc(vals, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
		pairs := make([]string, 0, 2*len(vals))
		for _, v := range vals {
			pairs = append(pairs, v, Mask)
		}
		s.r = strings.NewReplacer(pairs...)
	}
	r := s.r
	s.mu.Unlock()
	return r.Replace(text)
}
