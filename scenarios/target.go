package scenarios

import (
	"errors"
	"fmt"
	"net/url"
)

// TargetURL is the base URL requests are joined to: override (from
// --target or IDEMCHECK_TARGET) when set, else the scenario's target. It
// must be an absolute http or https URL with a host.
func (s *Scenario) TargetURL(override string) (*url.URL, error) {
	raw, field, line := override, "", 0
	src := ""
	if raw == "" {
		raw, field, line, src = s.Target, "target", s.line("target"), s.Source
	}
	if raw == "" {
		return nil, Diagnostics{{Source: s.Source, Field: "target", Message: "no target URL",
			Hint: "set target: http://localhost:8080 in the scenario, --target or IDEMCHECK_TARGET"}}
	}
	u, err := parseTarget(raw)
	if err != nil {
		var he *hintError
		errors.As(err, &he)
		return nil, Diagnostics{{Source: src, Line: line, Field: field, Message: he.msg, Hint: he.hint}}
	}
	return u, nil
}

func parseTarget(raw string) (*url.URL, error) {
	const hint = "write a base URL like http://localhost:8080 or https://staging.example.com/api"
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &hintError{msg: fmt.Sprintf("bad target URL: %v", errors.Unwrap(err)), hint: hint}
	}
	raw = u.Redacted() // a password in the URL never reaches a message
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, &hintError{msg: fmt.Sprintf("target %q is not an http or https URL", raw), hint: hint}
	}
	if u.Host == "" {
		return nil, &hintError{msg: fmt.Sprintf("target %q has no host", raw), hint: hint}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, &hintError{msg: fmt.Sprintf("target %q has a query or fragment", raw), hint: "put queries in the request paths; the target is a base URL"}
	}
	return u, nil
}
