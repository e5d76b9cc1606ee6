package redact

import (
	"net/url"
	"slices"
	"strings"
)

// Command is argv as a report shows it: each word quoted as a shell would
// need, secrets masked. A value that looks like a secret is masked and
// added to s, so that a command's output scrubbed by s never shows it
// either: a URL's password and query values, the value of NAME=VALUE
// or --name=VALUE with a secret-looking name (TOKEN, PASSWORD, API_KEY
// …), the word after a secret-looking flag or header name ("--token T",
// "Authorization: Bearer T").
func (s *Secrets) Command(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		if i > 0 && secretFlag(argv[i-1]) {
			s.Add(a)
			words[i] = Mask
			continue
		}
		words[i] = shellQuote(s.maskWords(a))
	}
	return s.Scrub(strings.Join(words, " "))
}

// secretFlag reports whether w is a flag or a header name whose value,
// the next word, is a secret: --token, --api-key, Authorization:.
func secretFlag(w string) bool {
	w = strings.Trim(w, `"'`)
	return (strings.HasPrefix(w, "-") || strings.HasSuffix(w, ":")) && !strings.Contains(w, "=") &&
		SecretHeader(strings.Trim(w, "-:"))
}

// maskWords masks the secrets of one argument, word by word (an argument
// may be a whole shell script), and adds them to the run's secrets.
func (s *Secrets) maskWords(arg string) string {
	words := strings.Fields(arg)
	masked := false
	mask := func(i int) {
		s.Add(strings.Trim(words[i], `"'`))
		words[i], masked = Mask, true
	}
	secret := func(name string) bool { return SecretHeader(strings.Trim(name, "-:")) }
	for i := 0; i < len(words); i++ {
		bare := strings.Trim(words[i], `"'`)
		name, value, isPair := strings.Cut(bare, "=")
		switch {
		case strings.Contains(bare, "://"):
			if u, err := url.Parse(bare); err == nil {
				s.AddURL(u)
			}
			if r := String(bare); r != bare {
				words[i], masked = r, true
			}
		case isPair && value != "" && secret(name):
			s.Add(value)
			words[i], masked = name+"="+Mask, true
		case secretFlag(bare):
			// the next word is the value; after a scheme, the one after
			j := i + 1
			if j+1 < len(words) && slices.Contains([]string{"bearer", "basic", "token"}, strings.ToLower(strings.Trim(words[j], `"'`))) {
				j++
			}
			if j < len(words) {
				mask(j)
				i = j
			}
		}
	}
	if !masked {
		return arg
	}
	return strings.Join(words, " ")
}

// shellQuote is w as a POSIX shell reads it back: as it is when it holds
// nothing special, else in single quotes.
func shellQuote(w string) string {
	if w != "" && strings.IndexFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,*", r))
	}) < 0 {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
