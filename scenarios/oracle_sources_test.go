package scenarios

import (
	"errors"
	"strings"
	"testing"
)

const sourcesBase = `name: s
operation: {path: /x, key: {header: Idempotency-Key}, body: '{}'}
load: {ops: 1, concurrency: 1}
oracles:
  - name: o
ORACLE
invariants: [{check: CHECK, oracle: o}]
`

func TestOracleSources(t *testing.T) {
	cases := []struct {
		name, oracle, check string
		want                string // "" for valid
	}{
		{"sql per key", `    effects: {sql: {url: '{{env "DB"}}', per_key: "SELECT count(*) FROM p WHERE k = $1"}}`, "at_most_once", ""},
		{"sql grouped", `    effects: {sql: {url: "postgres://u@h/db", grouped: "SELECT k, count(*) FROM p GROUP BY 1"}}`, "exactly_once", ""},
		{"sql per key without $1", `    effects: {sql: {url: "postgres://u@h/db", per_key: "SELECT 1"}}`, "at_most_once", "$1"},
		{"sql both", `    effects: {sql: {url: "postgres://u@h/db", per_key: "x $1", grouped: "y"}}`, "at_most_once", "not both"},
		{"sql no url", `    effects: {sql: {grouped: "y"}}`, "at_most_once", "url is required"},
		{"sql wrong scheme", `    effects: {sql: {url: "mysql://h/db", grouped: "y"}}`, "at_most_once", "postgres://"},
		{"sql and bulk", `    effects: {sql: {url: "postgres://h/db", grouped: "y"}, bulk: {path: /c, value: $.c}}`, "at_most_once", "one of"},
		{"redis exists", `    effects: {redis: {url: "redis://127.0.0.1:6379/0", pattern: "idem:%s"}}`, "exactly_once", ""},
		{"redis bad pattern", `    effects: {redis: {url: "redis://h", pattern: "idem"}}`, "exactly_once", "%s"},
		{"redis bad mode", `    effects: {redis: {url: "redis://h", mode: scan}}`, "exactly_once", "unknown mode"},
		{"sql counter", `    counter: {sql: {url: "postgres://h/db", query: "SELECT likes FROM posts"}}`, "exact_counter", ""},
		{"redis counter", `    counter: {redis: {url: "redis://h", key: likes}}`, "exact_counter", ""},
		{"counter two sources", `    counter: {path: /p, value: $.likes, redis: {url: "redis://h", key: likes}}`, "exact_counter", "one source"},
		{"counter no query", `    counter: {sql: {url: "postgres://h/db"}}`, "exact_counter", "query is required"},
		{"bad url template", `    effects: {sql: {url: '{{env "DB"', grouped: "y"}}`, "at_most_once", "url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(strings.Replace(sourcesBase, "CHECK", c.check, 1), "ORACLE", c.oracle, 1)
			_, err := Parse("s.yaml", []byte(src))
			if c.want == "" {
				if err != nil {
					t.Fatalf("Parse = %v, want valid", err)
				}
				return
			}
			var d Diagnostics
			if !errors.As(err, &d) {
				t.Fatalf("Parse = %v, want Diagnostics mentioning %q", err, c.want)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "s.yaml:6") {
				t.Errorf("Parse error = %v, want %q at s.yaml:6", err, c.want)
			}
		})
	}
}
