package redact

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// A secret is masked in every form a server or a renderer writes it in,
// base64 included, also inside the base64 of a longer text at any
// alignment (Basic's user:password).
func TestSecretsEncodings(t *testing.T) {
	const secret = "Cn4ry/T0k:9Q&z+?"
	var s Secrets
	s.Add(secret)
	for _, in := range []string{
		secret, url.QueryEscape(secret), url.PathEscape(secret), `Cn4ry\/T0k:9Q&z+?`, `Cn4ry/T0k:9Q\u0026z+?`, `Cn4ry\/T0k:9Q\u0026z+?`,
		base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawURLEncoding.EncodeToString([]byte(secret)),
		base64.StdEncoding.EncodeToString([]byte("bob:" + secret)), base64.StdEncoding.EncodeToString([]byte("u:" + secret + "!")),
		base64.URLEncoding.EncodeToString([]byte("app:" + secret)),
	} {
		got := s.Scrub("<" + in + ">")
		// what is left of an encoding is its neighbours' characters and
		// the two that mix them with the secret's
		if strings.Count(got, Mask) != 1 || len(got) > len(in)-len(secret)+len("<>")+len(Mask) {
			t.Errorf("Scrub(%q) = %q, want the secret masked", in, got)
		}
	}
	if got := s.Scrub("plain text 12345"); got != "plain text 12345" {
		t.Errorf("Scrub of text without the secret = %q", got)
	}
}

// The Basic credential built of a URL's userinfo is registered with the
// password.
func TestAddURLBasic(t *testing.T) {
	var s Secrets
	u, _ := url.Parse("http://bob:pa55word-xyz@h/?api_key=k3y-value")
	s.AddURL(u)
	basic := base64.StdEncoding.EncodeToString([]byte("bob:pa55word-xyz"))
	if got := s.Scrub("Authorization: Basic " + basic + " key k3y-value"); got != "Authorization: Basic xxxxx key xxxxx" {
		t.Errorf("Scrub = %q", got)
	}
}

// Env registers every value templates read: secret-named ones at any
// length from MinSecret, others from MinEnvSecret, whose shorter values
// it names; a URL's password too.
func TestEnv(t *testing.T) {
	var s Secrets
	env := map[string]string{"API_TOKEN": "t0ke", "SESS": "J5e55ionCanary8x", "REGION": "eu-west", "DSN": "postgres://app:dbpa55@h/db", "EMPTY": ""}
	getenv := s.Env(func(k string) string { return env[k] })
	for k := range env {
		getenv(k)
	}
	got := s.Scrub("t0ke J5e55ionCanary8x eu-west dbpa55")
	if got != "xxxxx xxxxx eu-west xxxxx" {
		t.Errorf("Scrub after Env = %q", got)
	}
	if u := s.Unmasked(); !slices.Equal(u, []string{"REGION"}) {
		t.Errorf("Unmasked = %q, want [REGION]", u)
	}
	if (&s).Env(nil) != nil {
		t.Error("Env(nil) is not nil")
	}
}

// Writer scrubs each write and reports the length it was given.
func TestWriter(t *testing.T) {
	var s Secrets
	s.Add("s3cr3t-value")
	var b bytes.Buffer
	w := s.Writer(&b)
	n, err := w.Write([]byte("> Cookie: s3cr3t-value\n"))
	if err != nil || n != len("> Cookie: s3cr3t-value\n") || b.String() != "> Cookie: xxxxx\n" {
		t.Errorf("Write = %d, %v; wrote %q", n, err, b.String())
	}
	var none *Secrets
	if none.Writer(&b) != &b {
		t.Error("(*Secrets)(nil).Writer(w) is not w")
	}
}
