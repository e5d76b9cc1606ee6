package scenarios

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/internal/redact"
	"github.com/idemcheck/idemcheck/internal/yamlstrict"
	"gopkg.in/yaml.v3"
)

// UnmarshalYAML implements yaml.Unmarshaler: one URL, or a list of them.
func (t *TargetList) UnmarshalYAML(n *yaml.Node) error {
	const hint = "target: http://localhost:8080, or a list: target: [http://10.0.0.1:8080, http://10.0.0.2:8080]"
	switch n.Kind {
	case yaml.ScalarNode:
		*t = TargetList{n.Value}
		return nil
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return &hintError{msg: "empty list of targets", hint: "leave target out (and give --target), or list at least one URL"}
		}
		out := make(TargetList, len(n.Content))
		for i, item := range n.Content {
			if item.Kind != yaml.ScalarNode || item.ShortTag() == "!!null" {
				return &hintError{msg: fmt.Sprintf("target[%d] (line %d): want a URL, got %s", i, item.Line, yamlstrict.KindName(item)), hint: hint}
			}
			out[i] = item.Value
		}
		*t = out
		return nil
	}
	return &hintError{msg: "want a URL or a list of URLs, got " + yamlstrict.KindName(n), hint: hint}
}

// MarshalYAML implements yaml.Marshaler: one URL is written as a string.
func (t TargetList) MarshalYAML() (any, error) {
	if len(t) == 1 {
		return t[0], nil
	}
	return []string(t), nil
}

// Targets returns the scenario's own target URLs, as written; nil when it
// names none.
func (s *Scenario) Targets() []string { return slices.Clone([]string(s.Target)) }

// TargetURL is the base URL requests are joined to: override (from
// --target or IDEMCHECK_TARGET) when set, else the scenario's first target.
// It must be an absolute http or https URL with a host.
func (s *Scenario) TargetURL(override string) (*url.URL, error) {
	var overrides []string
	if override != "" {
		overrides = []string{override}
	}
	us, err := s.TargetURLs(overrides)
	if err != nil {
		return nil, err
	}
	return us[0], nil
}

// TargetURLs is every base URL the run sends to: overrides (from --target
// or IDEMCHECK_TARGET, empty strings left out) when any is set, else the
// scenario's targets. At least one is returned, each an absolute http or
// https URL with a host; every bad one is reported at once.
func (s *Scenario) TargetURLs(overrides []string) ([]*url.URL, error) {
	var raws []string
	for _, o := range overrides {
		if o != "" {
			raws = append(raws, o)
		}
	}
	fromFile := len(raws) == 0
	if fromFile {
		raws = s.Target
	}
	if len(raws) == 0 {
		return nil, Diagnostics{{Source: s.Source, Field: "target", Message: "no target URL",
			Hint: "set target: http://localhost:8080 in the scenario, --target or IDEMCHECK_TARGET"}}
	}
	out := make([]*url.URL, 0, len(raws))
	var ds Diagnostics
	parse := parseTarget
	if s.IsQueue() {
		parse = parseBroker // a queue's target is its broker
	}
	for i, raw := range raws {
		u, err := parse(raw)
		if err != nil {
			var he *hintError
			errors.As(err, &he)
			d := Diagnostic{Message: he.msg, Hint: he.hint}
			if fromFile {
				d.Source, d.Field = s.Source, s.targetField(i)
				d.Line = s.line(d.Field)
			}
			ds = append(ds, d)
			continue
		}
		out = append(out, u)
	}
	if len(ds) > 0 {
		return nil, ds
	}
	return out, nil
}

// targetField names the i-th target: "target" when there is one.
func (s *Scenario) targetField(i int) string {
	if len(s.Target) == 1 {
		return "target"
	}
	return fmt.Sprintf("target[%d]", i)
}

func parseTarget(raw string) (*url.URL, error) {
	const hint = "write a base URL like http://localhost:8080 or https://staging.example.com/api"
	if scheme, ok := otherScheme(raw); ok {
		// javascript:alert(1), mailto:…: a scheme, not a host. Shown
		// by its scheme alone: the rest may hold anything.
		return nil, &hintError{msg: fmt.Sprintf("target %s:… is not an http or https URL (its scheme is %s)", scheme, scheme), hint: hint}
	}
	if !strings.Contains(raw, "://") && raw != "" {
		// host:port, or a path: url.Parse reads "localhost:8080" as the
		// scheme localhost. Shown as its host alone: no userinfo, path
		// (--redact-path may hide it) or query.
		host, rest, _ := strings.Cut(raw, "/")
		host, _, _ = strings.Cut(host, "?")
		host, _, _ = strings.Cut(host, "#")
		if i := strings.LastIndex(host, "@"); i >= 0 {
			host = host[i+1:]
		}
		more := ""
		if rest != "" || len(host) < len(raw) {
			more = "/…"
		}
		return nil, &hintError{msg: fmt.Sprintf("target %s%s has no scheme", host, more), hint: fmt.Sprintf("write it with one: http://%s%s (or https:// for TLS)", host, more)}
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error and its causes quote the URL, password and all.
		return nil, &hintError{msg: fmt.Sprintf("bad target URL %s", redact.String(raw)), hint: hint + ", escaping special characters in a password with %XX"}
	}
	raw = redact.URL(u) // a password or query value never reaches a message
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, &hintError{msg: fmt.Sprintf("target %q is not an http or https URL", raw), hint: hint}
	}
	if u.Host == "" {
		return nil, &hintError{msg: fmt.Sprintf("target %q has no host", raw), hint: hint}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, &hintError{msg: fmt.Sprintf("target %q: port %s is out of range (1 to 65535)", raw, p), hint: hint}
		}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, &hintError{msg: fmt.Sprintf("target %q has a query or fragment", raw), hint: "put queries in the request paths; the target is a base URL"}
	}
	return u, nil
}

// otherScheme returns the scheme of raw when it is a URL without "//"
// (javascript:alert(1), mailto:a@b) rather than host:port or a path.
func otherScheme(raw string) (string, bool) {
	scheme, rest, ok := strings.Cut(raw, ":")
	if !ok || strings.HasPrefix(rest, "//") || scheme == "" || !isLetter(scheme[0]) {
		return "", false
	}
	for i := 0; i < len(scheme); i++ {
		c := scheme[i]
		if !isLetter(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.' {
			return "", false
		}
	}
	port, _, _ := strings.Cut(rest, "/")
	if _, err := strconv.Atoi(port); err == nil || port == "" && strings.HasPrefix(rest, "/") || strings.Contains(port, "@") {
		return "", false // host:port, host:port/path, user:password@host
	}
	return strings.ToLower(scheme), true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
