package redact

import (
	"net/url"
	"strings"
)

// Mask replaces a secret value.
const Mask = "xxxxx"

// Unparseable replaces a URL that does not parse: its parts cannot be told
// apart, so none of them is shown.
const Unparseable = "<unparseable URL redacted>"

// Options say what a redaction may keep. The zero value masks every query
// value and keeps every path segment.
type Options struct {
	// Keep names query parameters and key=value DSN keys whose values are
	// shown, compared without regard to case. Every other value is masked.
	Keep []string
	// Path masks every non-empty path segment too, for URLs that carry a
	// credential in their path (webhook URLs, tokens as tenants).
	Path bool
}

// ConnParams are database and Redis connection parameters whose values are
// never secrets; Options.Keep for a connection string can name them.
var ConnParams = []string{
	"host", "hostaddr", "port", "user", "dbname", "database", "db",
	"sslmode", "sslrootcert", "connect_timeout", "application_name",
	"target_session_attrs", "search_path", "options", "protocol",
	"client_name", "dial_timeout", "read_timeout", "write_timeout",
	"pool_size", "pool_max_conns", "pool_min_conns",
}

// URL is u with its password, query values and fragment masked, with the
// zero Options.
func URL(u *url.URL) string { return Options{}.URL(u) }

// Path is p, a request path with its query ("/charges?api_key=k"),
// with every query value masked.
func Path(p string) string {
	path, q, ok := strings.Cut(p, "?")
	if !ok {
		return p
	}
	return path + "?" + Options{}.query(q)
}

// String is s, a URL or a key=value DSN, redacted with the zero Options.
func String(s string) string { return Options{}.String(s) }

// URL is u with its userinfo password, every query value not in o.Keep and
// its fragment masked (and its path segments, if o.Path). The host is
// kept, and the username, except in an http(s) URL where no password
// follows it: https://TOKEN@host and https://KEY:@host are how API keys
// travel in basic auth (a database's postgres://user@host is not). An
// opaque URL (scheme:opaque) keeps only its scheme.
func (o Options) URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	if u.Opaque != "" {
		return u.Scheme + ":" + Mask
	}
	c := *u
	if c.User != nil {
		if p, ok := c.User.Password(); ok && p != "" {
			c.User = url.UserPassword(c.User.Username(), Mask)
		} else if web := strings.EqualFold(c.Scheme, "http") || strings.EqualFold(c.Scheme, "https"); web && c.User.Username() != "" {
			c.User = url.User(Mask)
		}
	}
	c.RawQuery = o.query(u.RawQuery)
	if c.Fragment != "" || c.RawFragment != "" {
		c.Fragment, c.RawFragment = Mask, ""
	}
	if o.Path {
		c.Path, c.RawPath = maskPath(u.Path), ""
	}
	return c.String()
}

// query is raw with every value not in o.Keep masked, in its order. A
// parameter without "=" is all value: it is masked whole.
func (o Options) query(raw string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		if p == "" {
			continue
		}
		k, _, ok := strings.Cut(p, "=")
		if !ok {
			parts[i] = Mask
			continue
		}
		name, err := url.QueryUnescape(k)
		if err != nil {
			parts[i] = Mask + "=" + Mask // a key that does not decode is no name to show
			continue
		}
		if !o.keeps(name) {
			parts[i] = k + "=" + Mask
		}
	}
	return strings.Join(parts, "&")
}

func (o Options) keeps(name string) bool {
	for _, k := range o.Keep {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// maskPath masks every non-empty segment of p.
func maskPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s != "" {
			segs[i] = Mask
		}
	}
	return strings.Join(segs, "/")
}

// String is s redacted as what it looks like:
//
//   - scheme://… (any case) is a URL, redacted as by Options.URL, or
//     masked whole as scheme://<unparseable URL redacted> when it does not
//     parse;
//   - text with "=" is a key=value connection string: every value not in
//     o.Keep is masked, quoted or not;
//   - anything else that parses as a URL with userinfo, a query or an
//     opaque part is redacted as a URL;
//   - a bare word (a store name such as "memory") is kept;
//   - anything else is masked whole.
func (o Options) String(s string) string {
	if scheme, ok := schemeOf(s); ok {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil {
			return scheme + "://" + Unparseable
		}
		return o.URL(u)
	}
	if strings.Contains(s, "=") {
		return o.keyValue(s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return Unparseable
	}
	if u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return o.URL(u)
	}
	if o.Path {
		return maskPath(s)
	}
	return s
}

// schemeOf is the lower-case scheme of s when s starts with "scheme://".
func schemeOf(s string) (string, bool) {
	s = strings.TrimSpace(s)
	i := strings.Index(s, "://")
	if i <= 0 || i > 32 {
		return "", false
	}
	for j, r := range s[:i] {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (j == 0 || !(r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return "", false
		}
	}
	return strings.ToLower(s[:i]), true
}
