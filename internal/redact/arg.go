package redact

import (
	"net/url"
	"strings"
)

// Arg is a URL (or path) argument fit for an error message: its password
// and query values masked; a string that does not parse as a URL goes
// through String.
func Arg(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return String(raw)
	}
	return URL(u)
}

// HeaderArg is a 'Name: value' argument fit for an error message: its
// name only (at most 40 bytes), the value never shown. Without a colon
// only the first word is kept: the rest may be the secret.
func HeaderArg(h string) string {
	name, _, _ := strings.Cut(h, ":")
	if f := strings.Fields(name); len(f) > 0 {
		name = f[0]
	}
	if len(name) > 40 {
		name = name[:40] + "…"
	}
	return name + ": …"
}
