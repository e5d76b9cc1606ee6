package redact

import "strings"

// keyValue is s, a key=value connection string (host=h password='p q'),
// with every value not in o.Keep masked and its layout kept. Where the
// string stops making sense (a key without "=", an unclosed quote) the
// rest of it is masked whole: what follows cannot be told to be a name.
func (o Options) keyValue(s string) string {
	var b strings.Builder
	i := 0
	for i < len(s) {
		// spaces between pairs
		j := i
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		b.WriteString(s[i:j])
		i = j
		if i == len(s) {
			break
		}
		// the key, then "=" with optional spaces around it
		for j < len(s) && s[j] != '=' && !isSpace(s[j]) {
			j++
		}
		key := s[i:j]
		k := j
		for k < len(s) && isSpace(s[k]) {
			k++
		}
		if key == "" || k == len(s) || s[k] != '=' {
			b.WriteString(Mask)
			return b.String()
		}
		k++
		for k < len(s) && isSpace(s[k]) {
			k++
		}
		b.WriteString(s[i:k])
		// the value: 'quoted' with backslash escapes, or up to a space
		v, ok := valueEnd(s, k)
		if !ok {
			b.WriteString(Mask)
			return b.String()
		}
		if o.keeps(key) {
			b.WriteString(s[k:v])
		} else if v > k {
			b.WriteString(Mask)
		}
		i = v
	}
	return b.String()
}

// valueEnd is where the value starting at s[i] ends; false for an unclosed
// quote.
func valueEnd(s string, i int) (int, bool) {
	if i < len(s) && s[i] == '\'' {
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case '\'':
				return j + 1, true
			}
		}
		return len(s), false
	}
	j := i
	for j < len(s) && !isSpace(s[j]) {
		if s[j] == '\\' {
			j++
		}
		j++
	}
	return min(j, len(s)), true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
