package scenarios

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// valid is a small valid scenario; tests edit copies of it.
const valid = `name: t
operation:
  path: /charges
  body: '{"amount":1}'
  key: {header: Idempotency-Key}
load:
  ops: 10
  concurrency: 2
oracles:
  - name: ledger
    effects:
      bulk: {path: /charges/counts, value: $.counts}
invariants:
  - check: exactly_once
    oracle: ledger
`

// want is one expected diagnostic: its line, field, and a part of its
// message or hint.
type want struct {
	line  int
	field string
	text  string
}

func diagnose(t *testing.T, src string) Diagnostics {
	t.Helper()
	s, err := Parse("t.yaml", []byte(src))
	if err == nil {
		t.Fatalf("Parse = %+v, nil, want diagnostics", s)
	}
	if s != nil {
		t.Errorf("Parse returned a scenario with an error")
	}
	var ds Diagnostics
	if !errors.As(err, &ds) {
		t.Fatalf("Parse error %T %v, want Diagnostics", err, err)
	}
	return ds
}

func checkDiags(t *testing.T, ds Diagnostics, wants []want) {
	t.Helper()
	if len(ds) != len(wants) {
		t.Errorf("got %d diagnostics, want %d:\n%v", len(ds), len(wants), ds)
	}
	for _, w := range wants {
		found := false
		for _, d := range ds {
			if d.Line == w.line && d.Field == w.field && strings.Contains(d.Message+" (hint: "+d.Hint+")", w.text) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("missing diagnostic at line %d field %q with %q; got:\n%v", w.line, w.field, w.text, ds)
		}
	}
	for _, d := range ds {
		if d.Source != "t.yaml" {
			t.Errorf("diagnostic %v: Source = %q, want t.yaml", d, d.Source)
		}
	}
}

func TestParseValid(t *testing.T) {
	s, err := Parse("t.yaml", []byte(valid))
	if err != nil {
		t.Fatalf("Parse(valid) = %v, want nil", err)
	}
	if s.Source != "t.yaml" {
		t.Errorf("Source = %q, want t.yaml", s.Source)
	}
	lines := map[string]int{
		"name": 1, "operation": 2, "operation.path": 3, "operation.body": 4,
		"operation.key": 5, "operation.key.header": 5, "load.ops": 7, "load.concurrency": 8,
		"oracles": 9, "oracles[0]": 10, "oracles[0].name": 10, "oracles[0].effects.bulk.value": 12,
		"invariants[0].oracle": 15,
	}
	for path, line := range lines {
		if got := s.Lines[path]; got != line {
			t.Errorf("Lines[%q] = %d, want %d", path, got, line)
		}
	}
}

func TestParseDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []want
	}{
		{"malformed YAML", "name: t\noperation:\n  path: /x\n   body: {\n", []want{{4, "", "malformed YAML"}}},
		{"tabs", "name: t\n\tload: 1\n", []want{{2, "", "spaces, not tabs"}}},
		{"empty", "", []want{{0, "", "empty"}}},
		{"not a mapping", "- a\n- b\n", []want{{1, "", "a mapping of fields"}}},
		{"two documents", valid + "---\nname: u\n", []want{{16, "", "more than one YAML document"}}},
		{"unknown top-level field", strings.Replace(valid, "name: t\n", "name: t\nretires: 3\n", 1),
			[]want{{2, "retires", "did you mean retry?"}}},
		{"unknown nested field", strings.Replace(valid, "name: t\n", "name: t\nretry:\n  retires: 3\n", 1),
			[]want{{3, "retry.retires", `unknown field "retires" in retry (hint: did you mean attempts?`}}},
		{"unknown field in a list item", strings.Replace(valid, "  - check: exactly_once\n", "  - check: exactly_once\n    orcale: x\n", 1),
			[]want{{15, "invariants[0].orcale", "did you mean oracle?"}}},
		{"duplicate field", strings.Replace(valid, "name: t\n", "name: t\nname: u\n", 1),
			[]want{{2, "name", "appears twice (first at line 1)"}}},
		{"bad duration", valid + "quiet: 250\n", []want{{16, "quiet", "write a unit: 250ms"}}},
		{"negative duration", valid + "quiet: -1s\n", []want{{16, "quiet", "negative"}}},
		{"bad rate", strings.Replace(valid, "  concurrency: 2\n", "  rate: lots\n", 1),
			[]want{{8, "load.rate", "200/s"}}},
		{"wrong type: int", strings.Replace(valid, "ops: 10", "ops: many", 1),
			[]want{{7, "load.ops", `want a whole number, got the string "many"`}}},
		{"wrong type: quoted int", strings.Replace(valid, "ops: 10", `ops: "10"`, 1),
			[]want{{7, "load.ops", "without quotes"}}},
		{"wrong type: mapping", strings.Replace(valid, "load:\n  ops: 10\n  concurrency: 2\n", "load: fast\n", 1),
			[]want{{6, "load", "want a mapping"}}},
		{"wrong type: list", valid + "users: alice\n", []want{{16, "users", "want a list"}}},
		{"wrong type: bool", strings.Replace(valid, "key: {header: Idempotency-Key}", "key: {none: maybe}", 1),
			[]want{{5, "operation.key.none", "true or false"}}},
		{"wrong type: string", strings.Replace(valid, "name: t", "name: [a]", 1),
			[]want{{1, "name", "want a string"}}},
		{"rate and concurrency missing", strings.Replace(valid, "  concurrency: 2\n", "", 1),
			[]want{{6, "load", "set load.concurrency (closed model) or load.rate (open model)"}}},
		{"rate and concurrency both", strings.Replace(valid, "  concurrency: 2\n", "  concurrency: 2\n  rate: 10/s\n", 1),
			[]want{{9, "load.rate", "not both"}}},
		{"negative numbers", strings.Replace(strings.Replace(valid, "ops: 10", "ops: -1", 1), "concurrency: 2", "concurrency: -2\n  max_in_flight: 0", 1),
			[]want{{7, "load.ops", "negative ops"}, {8, "load.concurrency", "negative concurrency"}, {9, "load.max_in_flight", "at least 1"}}},
		{"no end", strings.Replace(valid, "  ops: 10\n", "", 1),
			[]want{{6, "load", "set load.ops or load.duration"}}},
		{"template parse error", strings.Replace(valid, "path: /charges", "path: /charges/{{.Key", 1),
			[]want{{3, "operation.path", "bad template"}}},
		{"template field typo", strings.Replace(valid, "path: /charges", "path: /charges/{{.Kye}}", 1),
			[]want{{3, "operation.path", "did you mean .Key?"}}},
		{"template var not captured", strings.Replace(valid, "path: /charges", "path: /charges/{{.Vars.v}}", 1),
			[]want{{3, "operation.path", "operation.before.vars"}}},
		{"template in a header", strings.Replace(valid, "  body:", "  headers: {Authorization: 'Bearer {{.Usr}}'}\n  body:", 1),
			[]want{{4, "operation.headers.Authorization", "did you mean .User?"}}},
		{"body not JSON", strings.Replace(valid, `'{"amount":1}'`, `'{"customer":cus_{{.Seq}}}'`, 1),
			[]want{{4, "operation.body", "not JSON once rendered"}}},
		{"absolute path", strings.Replace(valid, "path: /charges\n", "path: http://evil/charges\n", 1),
			[]want{{3, "operation.path", "relative to the target"}}},
		{"path with a host", strings.Replace(valid, "path: /charges\n", "path: //evil/charges\n", 1),
			[]want{{3, "operation.path", "must be relative to the target"}}},
		{"unknown fault kind", valid + "faults:\n  - kind: drop_ak\n    rate: 0.1\n",
			[]want{{17, "faults[0].kind", "did you mean drop_ack?"}}},
		{"fault parameters", valid + "faults:\n  - kind: timeout\n    rate: 1.5\n  - kind: drop_ack\n    rate: 0.1\n    copies: 3\n",
			[]want{{17, "faults[0].after", "after > 0"}, {18, "faults[0].rate", "between 0 and 1"}, {21, "faults[1].copies", "only a duplicate fault"}}},
		{"fault durations", valid + "faults:\n  - {kind: timeout, rate: 0.1, after: 50}\n  - {kind: delay, rate: 0.1, delay: -1s}\n  - {kind: delay, rate: 0.1, delay: [1]}\n",
			[]want{{17, "faults[0].after", "write a unit: 50ms"}, {18, "faults[1].delay", "negative"}, {19, "faults[2].delay", "want a duration, got a list"}}},
		{"fault rate missing", valid + "faults:\n  - kind: reset\n",
			[]want{{17, "faults[0].rate", "rate is required"}}},
		{"fault rates above 1", valid + "faults:\n  - {kind: reset, rate: 0.6}\n  - {kind: drop_ack, rate: 0.6}\n",
			[]want{{16, "faults", "add up to 1.2"}}},
		{"bad retry.on", valid + "retry:\n  on: [info, 5xx, 4o9, timeout]\n",
			[]want{{17, "retry.on[2]", `cannot retry on "4o9"`}, {17, "retry.on[3]", `"timeout"`}}},
		{"retry numbers", valid + "retry:\n  attempts: 0\n  backoff: {initial: 2s, max: 1s, multiplier: 0.5, jitter: 2}\n",
			[]want{{17, "retry.attempts", "at least 1"}, {18, "retry.backoff.initial", "above max"},
				{18, "retry.backoff.multiplier", "at least 1"}, {18, "retry.backoff.jitter", "within 0..1"}}},
		{"missing oracle", strings.Replace(valid, "oracle: ledger", "oracle: ledgr", 1),
			[]want{{15, "invariants[0].oracle", `no oracle named "ledgr"`}}},
		{"wrong oracle kind", valid + "  - check: exact_counter\n    oracle: ledger\n",
			[]want{{17, "invariants[1].oracle", `"ledger" is a effects oracle`}}},
		{"unknown check", valid + "  - check: exactly_twice\n",
			[]want{{16, "invariants[1].check", "did you mean exactly_once?"}}},
		{"same_response takes no oracle", valid + "  - check: same_response\n    oracle: ledger\n",
			[]want{{17, "invariants[1].oracle", "reads no oracle"}}},
		{"duplicate invariant", valid + "  - check: exactly_once\n    oracle: ledger\n",
			[]want{{16, "invariants[1]", "listed twice"}}},
		{"oracle problems", strings.Replace(valid, "      bulk: {path: /charges/counts, value: $.counts}\n",
			"      bulk: {path: /charges/counts, value: counts}\n  - name: ledger\n    counter: {path: /x, value: $.n}\n    account: {path: /a}\n", 1),
			[]want{{12, "oracles[0].effects.bulk.value", "bad JSONPath"}, {13, "oracles[1].name", "two oracles"},
				{13, "oracles[1]", "reads one thing"}, {15, "oracles[1].account.balance", "JSONPath is required"},
				{15, "oracles[1].account.version", "required"}, {15, "oracles[1].account.applied.path", "path is required"},
				{15, "oracles[1].account.applied.list", "required"}, {15, "oracles[1].account.applied.key", "required"},
				{15, "oracles[1].account.applied.amount", "required"}}},
		{"per_key without the key", strings.Replace(valid, "bulk: {path: /charges/counts, value: $.counts}", "per_key: {path: /charges, value: $.count}", 1),
			[]want{{12, "oracles[0].effects.per_key", "never sends {{.Key}}"}}},
		{"key places", strings.Replace(valid, "key: {header: Idempotency-Key}", "key: {header: Idempotency-Key, none: true}", 1),
			[]want{{5, "operation.key", "exactly one"}}},
		{"body_field needs an object", strings.Replace(valid, "key: {header: Idempotency-Key}", "key: {body_field: op_id}", 1) + "",
			nil},
		{"body_field with an array body", strings.Replace(strings.Replace(valid, "key: {header: Idempotency-Key}", "key: {body_field: op_id}", 1), `'{"amount":1}'`, "'[1]'", 1),
			[]want{{4, "operation.body", "JSON object"}}},
		{"thresholds", valid + "thresholds:\n  p50: 20ms\n  p99: 10ms\n  error_rate: 1.5\n",
			[]want{{18, "thresholds.p99", "below p50"}, {19, "thresholds.error_rate", "within 0..1"}}},
		{"expect and name", strings.Replace(valid, "name: t\n", "expect: fail\n", 1),
			[]want{{1, "expect", `unknown expectation "fail"`}, {0, "name", "name is required"}}},
		{"bad target", valid + "target: ftp://x\n", []want{{16, "target", "not an http or https URL"}}},
		{"nothing to check", strings.Replace(valid, "invariants:\n  - check: exactly_once\n    oracle: ledger\n", "", 1),
			[]want{{0, "invariants", "checks nothing"}}},
		{"setup", valid + "setup:\n  - method: P UT\n  - {path: '/a/{{.Vars.x}}'}\n",
			[]want{{17, "setup[0].method", "bad method"}, {17, "setup[0].path", "path is required"},
				{18, "setup[1].path", "only the operation sees .Vars"}}},
		{"key value reads the key", strings.Replace(valid, "key: {header: Idempotency-Key}", "key: {header: Idempotency-Key, value: 'k-{{.Key}}'}", 1),
			[]want{{5, "operation.key.value", "reads .Key"}}},
		{"key value typo", strings.Replace(valid, "key: {header: Idempotency-Key}", "key: {header: Idempotency-Key, value: 'k-{{.Sq}}'}", 1),
			[]want{{5, "operation.key.value", "did you mean .Seq?"}}},
		{"key value does not parse", strings.Replace(valid, "key: {header: Idempotency-Key}", "key: {header: Idempotency-Key, value: 'k-{{div .Seq'}", 1),
			[]want{{5, "operation.key.value", "bad template"}}},
		{"key value empty once rendered", strings.Replace(valid, "key: {header: Idempotency-Key}", "key: {header: Idempotency-Key, value: '{{.User}}'}", 1),
			[]want{{5, "operation.key.value", "empty key"}}},
		{"key value shared", strings.Replace(valid, "key: {header: Idempotency-Key}", "key: {header: Idempotency-Key, value: 'shared-{{div .Seq 2}}'}", 1),
			nil},
		{"replay after the retention", strings.Replace(valid, "  key: {header: Idempotency-Key}\n", "  key: {header: Idempotency-Key}\n  replay: {after: 2s}\n", 1) + "retention: 1s\n",
			[]want{{6, "operation.replay.after", "a replay after the retention may rightly be executed again"}}},
		{"replay after the default retention", strings.Replace(valid, "  key: {header: Idempotency-Key}\n", "  key: {header: Idempotency-Key}\n  replay: {after: 25h}\n", 1),
			[]want{{6, "operation.replay.after", "not within the retention of 24h0m0s"}}},
		{"replay numbers", strings.Replace(valid, "  key: {header: Idempotency-Key}\n", "  key: {header: Idempotency-Key}\n  replay: {count: 0, after: -1s}\n", 1) + "retention: 0s\n",
			[]want{{6, "operation.replay.count", "at least 1"}, {6, "operation.replay.after", "negative"}, {17, "retention", "above 0"}}},
		{"replay body not JSON", strings.Replace(valid, "  key: {header: Idempotency-Key}\n", "  key: {header: Idempotency-Key}\n  replay: {after: 1s, body: '{\"amount\":x{{.Seq}}}'}\n", 1),
			[]want{{6, "operation.replay.body", "not JSON once rendered"}}},
		{"replay body template", strings.Replace(valid, "  key: {header: Idempotency-Key}\n", "  key: {header: Idempotency-Key}\n  replay: {after: 1s, body: '{\"n\":{{.Sek}}}'}\n", 1),
			[]want{{6, "operation.replay.body", "did you mean .Seq?"}}},
		{"replay body with body_field", strings.Replace(valid, "  key: {header: Idempotency-Key}\n", "  key: {body_field: op_id}\n  replay: {after: 1s, body: '[2]'}\n", 1),
			[]want{{6, "operation.replay.body", "JSON object"}}},
		{"payload_mismatch without a replay body", valid + "  - check: payload_mismatch\n",
			[]want{{16, "invariants[1].check", "needs operation.replay.body"}}},
		{"payload_mismatch", strings.Replace(valid, "  key: {header: Idempotency-Key}\n", "  key: {header: Idempotency-Key}\n  replay: {after: 1s, body: '{\"amount\":2}'}\n", 1) + "  - check: payload_mismatch\n",
			nil},
		{"before", strings.Replace(valid, "  key: {header: Idempotency-Key}\n",
			"  key: {header: Idempotency-Key}\n  before: {path: /a, vars: {1v: $.v, w: nope}}\n", 1),
			[]want{{6, "operation.before.vars.1v", "not an identifier"}, {6, "operation.before.vars.w", "bad JSONPath"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == nil {
				if _, err := Parse("t.yaml", []byte(tt.src)); err != nil {
					t.Fatalf("Parse = %v, want nil", err)
				}
				return
			}
			checkDiags(t, diagnose(t, tt.src), tt.want)
		})
	}
}

// TestParseReportsEverything: one file, many problems, all reported in
// line order, and a field that did not decode does not also fail validation.
func TestParseReportsEverything(t *testing.T) {
	src := `name: many
retires: 3
operation:
  path: /charges/{{.Kye}}
  key: {header: Idempotency-Key}
load:
  ops: 100
  duration: 250
faults:
  - kind: drop_ak
    rate: 0.2
retry:
  on: [info, 4o9]
invariants:
  - check: exactly_once
    oracle: ledger
`
	ds := diagnose(t, src)
	checkDiags(t, ds, []want{
		{2, "retires", "did you mean retry?"},
		{4, "operation.path", "did you mean .Key?"},
		{6, "load", "set load.concurrency (closed model) or load.rate (open model)"},
		{8, "load.duration", "write a unit: 250ms"},
		{10, "faults[0].kind", "did you mean drop_ack?"},
		{13, "retry.on[1]", `"4o9"`},
		{16, "invariants[0].oracle", `no oracle named "ledger"`},
	})
	for i := 1; i < len(ds); i++ {
		if ds[i].Line < ds[i-1].Line && ds[i].Line != 0 {
			t.Errorf("diagnostics not in line order: %v before %v", ds[i-1], ds[i])
		}
	}
}

// A field that failed to decode must not also produce the validation
// problems that follow from its zero value.
func TestParseSuppressesConsequences(t *testing.T) {
	src := strings.Replace(valid, "  ops: 10\n", "  ops: ten\n", 1)
	checkDiags(t, diagnose(t, src), []want{{7, "load.ops", "whole number"}})
}

func TestDiagnosticsError(t *testing.T) {
	ds := Diagnostics{
		{Source: "a.yaml", Line: 3, Column: 5, Field: "retry.attempts", Message: "bad", Hint: "fix it"},
		{Source: "a.yaml", Line: 4, Field: "load", Message: "worse"},
		{Source: "a.yaml", Message: "no line"},
		{Field: "target", Message: "no target"},
	}
	want := "a.yaml:3:5: retry.attempts: bad (hint: fix it)\na.yaml:4: load: worse\na.yaml: no line\ntarget: no target"
	if got := ds.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
	var err error = ds
	var got Diagnostics
	if !errors.As(err, &got) || len(got) != 4 {
		t.Errorf("errors.As(Diagnostics) = %v, want the 4 diagnostics", got)
	}
}

func TestParseColumns(t *testing.T) {
	ds := diagnose(t, "name: t\nload:\n  ops: 1\n  concurrency: 1\n  rat: 3\n")
	var d Diagnostic
	for _, x := range ds {
		if x.Field == "load.rat" {
			d = x
		}
	}
	if d.Line != 5 || d.Column != 3 {
		t.Errorf("load.rat at %d:%d, want 5:3 (%v)", d.Line, d.Column, ds)
	}
	if !strings.Contains(d.String(), "t.yaml:5:3: load.rat: unknown field") {
		t.Errorf("String() = %q, want t.yaml:5:3: load.rat: unknown field ...", d.String())
	}
}

func TestParseAnchorsAndMerge(t *testing.T) {
	src := valid + `retry:
  backoff: &fast {initial: 1ms, max: 5ms}
x_common: &auth {Authorization: "Bearer {{.User}}"}
`
	ds := diagnose(t, src)
	checkDiags(t, ds, []want{{18, "x_common", "unknown field"}})

	src = `name: t
defaults: &load
  ops: 10
  concurrency: 2
`
	ds = diagnose(t, src)
	if len(ds) == 0 || ds[0].Field != "defaults" {
		t.Errorf("diagnostics = %v, want unknown field defaults first", ds)
	}

	src = strings.Replace(valid, "load:\n  ops: 10\n  concurrency: 2\n", "load:\n  <<: {ops: 10, concurrency: 4}\n  concurrency: 2\n", 1)
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse(merge) = %v, want nil", err)
	}
	if s.Load.Ops != 10 || s.Load.Concurrency != 2 {
		t.Errorf("merged load = %+v, want ops 10 concurrency 2 (explicit key wins)", s.Load)
	}
}

func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: t\nx:\n  - &a0 {ops: 1}\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "  - &a%d {<<: [", i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]}\n")
	}
	b.WriteString("load: *a8\n")
	done := make(chan error, 1)
	go func() {
		_, err := Parse("t.yaml", []byte(b.String()))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "too large") {
			t.Errorf("Parse(alias bomb) = %v, want a too-large diagnostic", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Parse(alias bomb) did not return within 10s")
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(p, []byte(valid+"quiet: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(p)
	var ds Diagnostics
	if !errors.As(err, &ds) || len(ds) != 1 || ds[0].Source != p || ds[0].Line != 16 {
		t.Errorf("LoadFile(bad) = %v, want one diagnostic at %s:16", err, p)
	}
	_, err = LoadFile(filepath.Join(dir, "missing.yaml"))
	if !errors.As(err, &ds) || !strings.Contains(err.Error(), "missing.yaml") || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("LoadFile(missing) = %v, want a diagnostic naming the file", err)
	}
}
