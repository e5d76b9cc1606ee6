// Package dsn holds what every reader of a database or Redis URL given by
// a user needs before the driver sees it.
package dsn

import "strings"

// LowerScheme is raw, trimmed, with its scheme in lower case: drivers
// match schemes exactly, so "Postgres://…" would be read as a key=value
// connection string (the local socket) and "REDIS://…" refused. A string
// without a scheme (key=value) is returned trimmed.
func LowerScheme(raw string) string {
	raw = strings.TrimSpace(raw)
	if scheme, rest, ok := strings.Cut(raw, "://"); ok && !strings.ContainsAny(scheme, "/?#@ ") {
		return strings.ToLower(scheme) + "://" + rest
	}
	return raw
}
