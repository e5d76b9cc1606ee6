package dsn

import "testing"

func TestLowerScheme(t *testing.T) {
	for in, want := range map[string]string{
		"Postgres://u:p@h/db":      "postgres://u:p@h/db",
		" REDIS://:P@h:1/0 ":       "redis://:P@h:1/0",
		"host=h password=Pass://x": "host=h password=Pass://x",
		"postgres://u@h/db":        "postgres://u@h/db",
	} {
		if got := LowerScheme(in); got != want {
			t.Errorf("LowerScheme(%q) = %q, want %q", in, got, want)
		}
	}
}
