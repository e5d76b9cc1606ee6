package redact

import (
	"net/url"
	"strings"
	"testing"
)

// alnum reports whether s is letters and digits only: such a value, found
// in a redacted URL, lies inside one of its parts, never across two.
func alnum(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// FuzzURL checks that no input panics, that a parseable URL's password
// and query values never appear in its redaction unless a part that is
// shown holds them too, and that the redaction does not depend on a
// planted secret at all.
func FuzzURL(f *testing.F) {
	for _, s := range []string{
		"https://bob:" + canary + "@api.example.com/v1/x?token=" + canary + "&a=b#frag",
		"redis://:p%zz@127.0.0.1:6379/0", "Postgres://app:pw@db:5432/x?sslmode=disable",
		"host=h user=u password='a b' dbname=d", "ftp://u:pw@h/x", "http://h/?private_token=t&session=s",
		"http://[::1%25en0]:80/a%2Fb?x", "mailto:a@b", "memory", "", "%", "http://h/p?;=&&=x",
	} {
		f.Add(s, canary)
	}
	f.Fuzz(func(t *testing.T, raw, secret string) {
		for _, o := range []Options{{}, {Path: true}, {Keep: ConnParams}} {
			_ = o.String(raw)
		}
		u, err := url.Parse(raw)
		if err != nil || u.Opaque != "" {
			return
		}
		out := URL(u)
		// what the redaction shows of u: scheme, username, host, path and
		// the parameter names
		bare := *u
		bare.RawQuery, bare.ForceQuery, bare.Fragment, bare.RawFragment = "", false, "", ""
		if u.User != nil {
			bare.User = url.User(u.User.Username())
		}
		shown := []string{bare.String(), Mask}
		var values []string
		for p := range strings.SplitSeq(u.RawQuery, "&") {
			k, v, ok := strings.Cut(p, "=")
			if !ok {
				k, v = "", p
			}
			shown = append(shown, k)
			values = append(values, v)
			if dv, err := url.QueryUnescape(v); err == nil {
				values = append(values, dv)
			}
		}
		if p, ok := u.User.Password(); ok {
			values = append(values, p, url.QueryEscape(p))
		}
		values = append(values, u.Fragment, u.EscapedFragment())
		all := strings.Join(shown, "\x00")
		for _, v := range values {
			if alnum(v) && strings.Contains(out, v) && !strings.Contains(all, v) {
				t.Fatalf("URL(%q) = %q shows the secret %q", raw, out, v)
			}
		}
		// A planted password and query value change nothing in the output.
		plant := func(s string) string {
			c := *u
			c.User = url.UserPassword(c.User.Username(), s)
			c.RawQuery = strings.TrimPrefix(c.RawQuery+"&t="+url.QueryEscape(s), "&")
			return URL(&c)
		}
		if secret == "" {
			secret = "s"
		}
		if a, b := plant(secret), plant(secret+"other"); a != b {
			t.Fatalf("URL(%q) depends on a planted secret: %q with %q, %q with %q", raw, a, secret, b, secret+"other")
		}
	})
}
