package redact

import (
	"net/url"
	"strings"
	"testing"
)

// canary is the secret every case plants.
const canary = "c4naryS3cret"

func TestString(t *testing.T) {
	conn := Options{Keep: ConnParams}
	for _, tc := range []struct {
		name string
		o    Options
		in   string
		want string
	}{
		// a Redis oracle URL whose password does not parse
		{"redis password with a bad escape", Options{}, "redis://:p%zz" + canary + "@127.0.0.1:6379/0", "redis://" + Unparseable},
		{"bad port", Options{}, "postgres://u:" + canary + "@h:x/db", "postgres://" + Unparseable},
		{"password with a slash", Options{}, "redis://:ab/" + canary + "@h:6379", "redis://" + Unparseable},
		{"password with a hash", conn, "postgres://u:hun#" + canary + "@h:5432/db", "postgres://" + Unparseable},
		{"unparseable without scheme", Options{}, "%zz" + canary, Unparseable},
		// query parameters outside any fixed list
		{"every query value", Options{}, "https://api.example.com/v1/charges?private_token=" + canary + "&x-api-key=" + canary + "&session=" + canary,
			"https://api.example.com/v1/charges?private_token=xxxxx&x-api-key=xxxxx&session=xxxxx"},
		{"kept parameter", Options{Keep: []string{"Idempotency_Key"}}, "http://h/c?idempotency_key=k1&token=" + canary,
			"http://h/c?idempotency_key=k1&token=xxxxx"},
		{"bare parameter", Options{}, "http://h/c?" + canary, "http://h/c?xxxxx"},
		{"repeated parameter", Options{}, "http://h/c?a=" + canary + "&a=" + canary, "http://h/c?a=xxxxx&a=xxxxx"},
		{"fragment", Options{}, "http://h/cb#access_token=" + canary, "http://h/cb#xxxxx"},
		{"target with a token", Options{}, "http://127.0.0.1:8080/?token=" + canary, "http://127.0.0.1:8080/?token=xxxxx"},
		// secrets in path segments, on request
		{"path kept by default", Options{}, "https://hooks.example.com/services/T0/" + canary, "https://hooks.example.com/services/T0/" + canary},
		{"path masked", Options{Path: true}, "https://hooks.example.com/services/T0/" + canary + "?a=b", "https://hooks.example.com/xxxxx/xxxxx/xxxxx?a=xxxxx"},
		{"escaped path masked", Options{Path: true}, "https://h/a%2F" + canary + "/", "https://h/xxxxx/xxxxx/"},
		// schemes in any case
		{"capitalised scheme", conn, "Postgres://app:" + canary + "@db:5432/x?sslmode=disable", "postgres://app:xxxxx@db:5432/x?sslmode=disable"},
		{"upper-case scheme", Options{}, "REDIS://:" + canary + "@h:6379/0", "redis://:xxxxx@h:6379/0"},
		{"password parameter in a DSN URL", conn, "postgres://u@h/db?password=" + canary, "postgres://u@h/db?password=xxxxx"},
		{"username kept", Options{}, "postgres://u@h/db", "postgres://u@h/db"},
		{"ftp proxy target", Options{}, "ftp://u:" + canary + "@files.example.com/x", "ftp://u:xxxxx@files.example.com/x"},
		{"leading space", Options{}, " postgres://u:" + canary + "@h/db", "postgres://u:xxxxx@h/db"},
		// key=value DSNs
		{"key=value DSN", conn, "host=h user=u password=" + canary + " dbname=db", "host=h user=u password=xxxxx dbname=db"},
		{"key=value DSN, nothing kept", Options{}, "host=h password=" + canary, "host=xxxxx password=xxxxx"},
		{"quoted password", conn, `host=h password = 'hun ter\'2` + canary + `' dbname=db`, "host=h password = xxxxx dbname=db"},
		{"upper-case key", conn, "HOST=h PASSWORD=" + canary, "HOST=h PASSWORD=xxxxx"},
		{"unclosed quote", conn, "host=h password='" + canary + " dbname=db", "host=h password=xxxxx"},
		{"key without value", conn, "host=h " + canary, "host=h xxxxx"},
		// not URLs
		{"store name", Options{}, "memory", "memory"},
		{"empty", Options{}, "", ""},
		{"opaque", Options{}, "redis:" + canary + "@h", "redis:xxxxx"},
		{"userinfo without scheme", Options{}, "u:" + canary + "@h", "u:xxxxx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.o.String(tc.in)
			if got != tc.want {
				t.Errorf("%+v.String(%q) = %q, want %q", tc.o, tc.in, got, tc.want)
			}
			if strings.Contains(got, canary) && !strings.Contains(tc.want, canary) {
				t.Errorf("%+v.String(%q) = %q shows the secret", tc.o, tc.in, got)
			}
		})
	}
}

func TestURL(t *testing.T) {
	u := &url.URL{Scheme: "https", User: url.UserPassword("bob", canary), Host: "h", Path: "/a b", RawQuery: "token=" + canary}
	if got, want := URL(u), "https://bob:xxxxx@h/a%20b?token=xxxxx"; got != want {
		t.Errorf("URL(%v) = %q, want %q", u, got, want)
	}
	if u.User.String() != "bob:"+canary || u.RawQuery != "token="+canary {
		t.Errorf("URL changed its argument: %v", u)
	}
	if got := URL(nil); got != "" {
		t.Errorf("URL(nil) = %q, want \"\"", got)
	}
	// An API key as the username, alone (GitHub) or before an empty
	// password (Stripe's basic auth), is masked in an http(s) URL; a
	// database's user is kept.
	for _, tc := range []struct {
		u    *url.URL
		want string
	}{
		{&url.URL{Scheme: "https", User: url.UserPassword("sk_test_"+canary, ""), Host: "api"}, "https://xxxxx@api"},
		{&url.URL{Scheme: "HTTPS", User: url.User("ghp_" + canary), Host: "h"}, "HTTPS://xxxxx@h"},
		{&url.URL{Scheme: "postgres", User: url.User("postgres"), Host: "db"}, "postgres://postgres@db"},
		{&url.URL{Scheme: "redis", User: url.UserPassword("app", ""), Host: "r"}, "redis://app:@r"},
	} {
		if got := URL(tc.u); got != tc.want {
			t.Errorf("URL(%s) = %q, want %q", tc.u.Scheme, got, tc.want)
		}
	}
}

func TestSecretHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "proxy-authorization": true, "Cookie": true, "X-Api-Key": true, "Api-Key": true,
		"X-Auth-Token": true, "Private-Token": true, "X-Session-Id": true, "X-Hub-Signature": true, "X-CSRF-Token": true,
		"X-Shopify-Hmac-Sha256": true, "webhook-signature": true, "Stripe-Signature": true,
		"Idempotency-Key": false, "Content-Type": false, "Accept": false, "X-Request-Id": false,
	} {
		if got := SecretHeader(name); got != want {
			t.Errorf("SecretHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

// A server that reflects the credentials it was sent puts them in answer
// bodies and error messages; Scrub takes them out.
func TestSecretsScrub(t *testing.T) {
	var s Secrets
	s.AddHeader("Authorization", "Bearer "+canary)
	s.AddHeader("Cookie", "sid=cookie"+canary+"; theme=dark")
	s.AddHeader("X-Api-Key", "key/"+canary)
	s.AddHeader("Proxy-Authorization", "Basic dXNlcjpiYXNpY1Bhc3N3b3Jk") // user:basicPassword
	s.AddHeader("Idempotency-Key", "k-not-secret")
	s.AddURL(&url.URL{Scheme: "http", User: url.UserPassword("u", "urlpass"+canary), Host: "h", RawQuery: "token=q" + canary})
	s.Add("ab") // too short to scrub

	for _, tc := range []struct{ in, want string }{
		{`{"error":"invalid token Bearer ` + canary + `"}`, `{"error":"invalid token xxxxx"}`},
		{"401: token " + canary + " expired", "401: token xxxxx expired"},
		{"cookie sid=cookie" + canary + "; theme=dark", "cookie xxxxx"},
		{"session sid=cookie" + canary + " reused", "session sid=xxxxx reused"},
		{`{"key":"key\/` + canary + `"}`, `{"key":"xxxxx"}`},
		{"key%2F" + canary, "xxxxx"},
		{"who: user:basicPassword, basicPassword", "who: xxxxx, xxxxx"},
		{"u:urlpass" + canary + " q" + canary, "u:xxxxx xxxxx"},
		{"op k-not-secret ab", "op k-not-secret ab"},
	} {
		if got := s.Scrub(tc.in); got != tc.want {
			t.Errorf("Scrub(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Adding after a scrub takes effect.
	s.Add("late-secret")
	if got := s.Scrub("a late-secret"); got != "a xxxxx" {
		t.Errorf("Scrub after Add = %q, want %q", got, "a xxxxx")
	}
	var none *Secrets
	if got := none.Scrub("text"); got != "text" {
		t.Errorf("(*Secrets)(nil).Scrub(text) = %q", got)
	}
}
