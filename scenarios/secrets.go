package scenarios

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	tparse "text/template/parse"

	"github.com/idemcheck/idemcheck/internal/redact"
)

// LiteralSecrets returns a diagnostic for every credential written into
// the scenario itself rather than read from the environment: a secret
// header's literal value, a secret-named field of a request body (JSON or
// form) or query parameter of a request path (setup, operation, oracles)
// with a literal value, an oracle URL with a password, and, unless the
// targets come from the command line (targetsGiven), a target URL with a
// password or a query value. Such a scenario cannot be copied where others
// read it (a sharded run's manifest on a shared volume) without its
// secrets; nil when there is none. No diagnostic holds the value.
func (s *Scenario) LiteralSecrets(targetsGiven bool) Diagnostics {
	var ds Diagnostics
	add := func(field, msg, hint string) {
		ds = append(ds, Diagnostic{Source: s.Source, Line: s.line(field), Field: field, Message: msg, Hint: hint})
	}
	for _, ft := range s.templates() {
		text := strings.TrimSpace(ft.text)
		if text == "" {
			continue
		}
		name, isHeader := fieldHeader(ft.field)
		switch {
		case strings.HasSuffix(ft.field, ".body"):
			for _, n := range bodySecrets(text) {
				add(ft.field, fmt.Sprintf("a credential written in the scenario (body field %q)", n),
					fmt.Sprintf("read it from the environment: {{env %q}} in its place", envName(n)))
			}
			continue
		case strings.HasSuffix(ft.field, ".path"):
			for _, n := range querySecrets(text) {
				add(ft.field, fmt.Sprintf("a credential written in the scenario (query parameter %q)", n),
					fmt.Sprintf("read it from the environment: ?%s={{env %q}}", n, envName(n)))
			}
			continue
		case strings.Contains(text, "{{"):
			continue
		}
		switch {
		case isHeader && redact.SecretHeader(name):
			add(ft.field, "a credential written in the scenario",
				fmt.Sprintf("read it from the environment: %s: '{{env \"API_TOKEN\"}}'", name))
		case strings.HasSuffix(ft.field, ".url") && urlSecret(text):
			add(ft.field, "a URL with a password written in the scenario",
				"read it from the environment: url: '{{env \"LEDGER_URL\"}}'")
		}
	}
	if !targetsGiven {
		for i, raw := range s.Target {
			if urlSecret(raw) {
				add(s.targetField(i), "a target URL with a password or a token written in the scenario",
					"give it on the command line (--target, or IDEMCHECK_TARGET), which keeps it out of what is saved, and drop it from the scenario")
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

// secretName reports whether a body field or query parameter named name
// carries a credential: the names of a secret header, and any with
// "pass" in it (passphrase, passcode).
func secretName(name string) bool {
	return redact.SecretHeader(name) || strings.Contains(strings.ToLower(name), "pass")
}

// literal reports whether v is a value written in the scenario: not
// empty, and no template.
func literal(v string) bool { return strings.TrimSpace(v) != "" && !strings.Contains(v, "{{") }

// jsonMember matches a JSON member with a string value: "name": "value".
var jsonMember = regexp.MustCompile(`"((?:[^"\\]|\\.){1,128})"\s*:\s*"((?:[^"\\]|\\.)*)"`)

// bodySecrets returns the names of the secret-named fields of body (a
// JSON text, templates and all, or a form) given a literal value.
func bodySecrets(body string) []string {
	var names []string
	if t := strings.TrimSpace(body); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		for _, m := range jsonMember.FindAllStringSubmatch(body, -1) {
			if secretName(m[1]) && literal(m[2]) {
				names = append(names, m[1])
			}
		}
		return names
	}
	return formSecrets(body, secretName)
}

// querySecrets returns the names of the secret-named query parameters of
// path (and key=, as urlSecret reads a URL's) given a literal value.
func querySecrets(path string) []string {
	_, q, ok := strings.Cut(path, "?")
	if !ok {
		return nil
	}
	q, _, _ = strings.Cut(q, "#")
	return formSecrets(q, func(n string) bool { return secretName(n) || strings.EqualFold(n, "key") })
}

// formSecrets returns the names of the parameters of a form
// (name=value&…) that secret says are secret, given a literal value.
func formSecrets(form string, secret func(string) bool) []string {
	var names []string
	for pair := range strings.SplitSeq(form, "&") {
		n, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if un, err := url.QueryUnescape(n); err == nil {
			n = un
		}
		if ok && secret(n) && literal(v) {
			names = append(names, n)
		}
	}
	return names
}

// envName is an environment variable's name for a field named name:
// api_key and apiKey give API_KEY.
func envName(name string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case r >= 'A' && r <= 'Z':
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
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

// ReadsEnv reports whether the template text calls env anywhere, whatever
// the name or the branch: what it renders may then differ from one
// process to another. A text that does not parse reads nothing.
func ReadsEnv(text string) bool {
	if !strings.Contains(text, "{{") {
		return false
	}
	t, err := parse("", text, sampleFuncs())
	if err != nil {
		return false
	}
	for _, tt := range t.Templates() {
		if tt.Tree != nil && callsEnv(tt.Tree.Root) {
			return true
		}
	}
	return false
}

// callsEnv reports whether the parse tree under n names the env function.
func callsEnv(n tparse.Node) bool {
	switch x := n.(type) {
	case *tparse.IdentifierNode:
		return x.Ident == "env"
	case *tparse.ListNode:
		if x == nil {
			return false
		}
		for _, c := range x.Nodes {
			if callsEnv(c) {
				return true
			}
		}
	case *tparse.ActionNode:
		return callsEnv(x.Pipe)
	case *tparse.IfNode:
		return callsEnv(x.Pipe) || callsEnv(x.List) || callsEnv(x.ElseList)
	case *tparse.RangeNode:
		return callsEnv(x.Pipe) || callsEnv(x.List) || callsEnv(x.ElseList)
	case *tparse.WithNode:
		return callsEnv(x.Pipe) || callsEnv(x.List) || callsEnv(x.ElseList)
	case *tparse.TemplateNode:
		return callsEnv(x.Pipe)
	case *tparse.PipeNode:
		if x == nil {
			return false
		}
		for _, c := range x.Cmds {
			if callsEnv(c) {
				return true
			}
		}
	case *tparse.CommandNode:
		for _, a := range x.Args {
			if callsEnv(a) {
				return true
			}
		}
	case *tparse.ChainNode:
		return callsEnv(x.Node)
	}
	return false
}
