package scenarios

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/idemcheck/idemcheck/internal/redact"
)

// LiteralSecrets returns a diagnostic for every credential written into
// the scenario itself rather than read from the environment: a secret
// header's literal value, an oracle URL with a password, and, unless the
// targets come from the command line (targetsGiven), a target URL with a
// password or a query value. Such a scenario cannot be copied where others
// read it (a sharded run's manifest on a shared volume) without its
// secrets; nil when there is none.
func (s *Scenario) LiteralSecrets(targetsGiven bool) Diagnostics {
	var ds Diagnostics
	for _, ft := range s.templates() {
		text := strings.TrimSpace(ft.text)
		if text == "" || strings.Contains(text, "{{") {
			continue
		}
		name, isHeader := fieldHeader(ft.field)
		switch {
		case isHeader && redact.SecretHeader(name):
			ds = append(ds, Diagnostic{Source: s.Source, Line: s.line(ft.field), Field: ft.field,
				Message: "a credential written in the scenario",
				Hint:    fmt.Sprintf("read it from the environment: %s: '{{env \"API_TOKEN\"}}'", name)})
		case strings.HasSuffix(ft.field, ".url") && urlSecret(text):
			ds = append(ds, Diagnostic{Source: s.Source, Line: s.line(ft.field), Field: ft.field,
				Message: "a URL with a password written in the scenario",
				Hint:    "read it from the environment: url: '{{env \"LEDGER_URL\"}}'"})
		}
	}
	if !targetsGiven {
		for i, raw := range s.Target {
			if urlSecret(raw) {
				f := s.targetField(i)
				ds = append(ds, Diagnostic{Source: s.Source, Line: s.line(f), Field: f,
					Message: "a target URL with a password or a token written in the scenario",
					Hint:    "give it on the command line (--target, or IDEMCHECK_TARGET), which keeps it out of what is saved"})
			}
		}
	}
	return ds
}

// fieldHeader is the header a template field names (…headers.NAME).
func fieldHeader(field string) (string, bool) {
	_, name, ok := strings.Cut(field, ".headers.")
	return name, ok
}

// urlSecret reports whether raw is a URL with a password, or with query
// values, which redaction masks (a DSN's sslmode=disable among them), or a
// key=value DSN with a password.
func urlSecret(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return strings.Contains(strings.ToLower(raw), "password=")
	}
	if _, ok := u.User.Password(); ok {
		return true
	}
	for k := range u.Query() {
		if kl := strings.ToLower(k); strings.Contains(kl, "pass") || strings.Contains(kl, "token") || strings.Contains(kl, "secret") || strings.Contains(kl, "key") {
			return true
		}
	}
	return false
}
