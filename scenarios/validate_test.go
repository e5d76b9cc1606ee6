package scenarios

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
)

func TestDefaults(t *testing.T) {
	src := strings.Replace(valid, "      bulk: {path: /charges/counts, value: $.counts}\n",
		"      per_key: {path: '/charges?idempotency_key={{.Key}}', value: $.count}\n", 1) +
		"setup:\n  - {method: put, path: /accounts/a}\nfaults:\n  - {kind: duplicate, rate: 0.1}\n"
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	type view struct {
		Expect                Expect
		OpMethod, SetupMethod string
		ProbeMethod           string
		MaxInFlight           int
		Retry                 Retry
		Quiet                 Duration
		Concurrency, Copies   int
	}
	got := view{
		Expect: s.Expect, OpMethod: s.Operation.Method, SetupMethod: s.Setup[0].Method,
		ProbeMethod: s.Oracles[0].Effects.PerKey.Method, MaxInFlight: s.Load.MaxInFlight,
		Retry: s.Retry, Quiet: s.Quiet, Concurrency: s.Oracles[0].Effects.Concurrency, Copies: s.Faults[0].Copies,
	}
	want := view{
		Expect: ExpectPass, OpMethod: "POST", SetupMethod: "PUT", ProbeMethod: "GET", MaxInFlight: 512,
		Retry: Retry{Attempts: 5, On: []string{"fail", "info", "409", "429", "5xx"}, Backoff: Backoff{
			Initial: Duration(10 * time.Millisecond), Max: Duration(time.Second), Multiplier: 2, Jitter: 0.5}},
		Quiet: Duration(200 * time.Millisecond), Concurrency: 8, Copies: 2,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// A value written explicitly keeps its value, even zero.
func TestDefaultsKeepExplicitZeros(t *testing.T) {
	src := valid + "quiet: 0s\nretry:\n  on: []\n  backoff: {jitter: 0, max: 5ms}\n"
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	if s.Quiet != 0 || s.Retry.Backoff.Jitter != 0 || len(s.Retry.On) != 0 {
		t.Errorf("quiet %v jitter %v on %v, want 0, 0, []", s.Quiet, s.Retry.Backoff.Jitter, s.Retry.On)
	}
	if s.Retry.Backoff.Initial.Std() != 5*time.Millisecond {
		t.Errorf("initial = %v, want 5ms (the default capped by max)", s.Retry.Backoff.Initial)
	}
	_, err = Parse("t.yaml", []byte(valid+"retry:\n  attempts: 0\n"))
	if err == nil || !strings.Contains(err.Error(), "retry.attempts") {
		t.Errorf("Parse(attempts: 0) = %v, want an error (not the default)", err)
	}
	// A null is the same as leaving the field out.
	s, err = Parse("t.yaml", []byte(valid+"retry:\n  on:\n"))
	if err != nil || len(s.Retry.On) != 5 {
		t.Errorf("Parse(on: null) = %v, %v, want the default", s.Retry.On, err)
	}
}

// A scenario built in Go has no Lines: its zero values are defaulted and
// Validate reports at line 0.
func TestValidateInGo(t *testing.T) {
	s := &Scenario{
		Name:       "go",
		Operation:  Operation{Request: Request{Path: "/x"}, Key: KeyPlace{None: true}},
		Load:       Load{Ops: 1, Concurrency: 1},
		Faults:     []faults.Spec{{Kind: "reset"}},
		Invariants: []Invariant{{Check: checks.SameResponse}},
	}
	s.applyDefaults()
	ds := s.Validate()
	if len(ds) != 1 || ds[0].Field != "faults[0].rate" || ds[0].Line != 0 {
		t.Errorf("Validate() = %v, want one problem: faults[0].rate required", ds)
	}
	s.Faults[0].Rate = 0.1
	if ds := s.Validate(); ds != nil {
		t.Errorf("Validate() = %v, want nil", ds)
	}
}

func TestTargetURL(t *testing.T) {
	tests := []struct {
		target, override string
		want             string // "" for an error
		wantLine         int
	}{
		{"http://localhost:8080", "", "http://localhost:8080", 0},
		{"http://localhost:8080", "https://staging.example.com/api", "https://staging.example.com/api", 0},
		{"", "http://127.0.0.1:9/", "http://127.0.0.1:9/", 0},
		{"", "", "", 0},
		{"", "localhost:8080", "", 0},
		{"", "ftp://x", "", 0},
		{"", "http://", "", 0},
		{"", "http://x/?a=1", "", 0},
		{"", "http://[::1", "", 0},
	}
	for _, tt := range tests {
		s := &Scenario{}
		if tt.target != "" {
			s.Target = TargetList{tt.target}
		}
		u, err := s.TargetURL(tt.override)
		if tt.want == "" {
			var ds Diagnostics
			if err == nil || !errors.As(err, &ds) || ds[0].Hint == "" {
				t.Errorf("TargetURL(%q) with target %q = %v, %v, want Diagnostics with a hint", tt.override, tt.target, u, err)
			}
			continue
		}
		if err != nil || u.String() != tt.want {
			t.Errorf("TargetURL(%q) with target %q = %v, %v, want %s", tt.override, tt.target, u, err, tt.want)
		}
	}
	// A bad target from the file points at its line.
	s := &Scenario{Source: "t.yaml", Target: TargetList{"nope"}, Lines: map[string]int{"target": 7}}
	_, err := s.TargetURL("")
	var ds Diagnostics
	if !errors.As(err, &ds) || ds[0].Line != 7 || ds[0].Source != "t.yaml" {
		t.Errorf("TargetURL() = %v, want a diagnostic at t.yaml:7", err)
	}
}

// The schema's invariant list is package checks' list of checkers.
func TestChecks(t *testing.T) {
	want := checks.Names()
	slices.Sort(want)
	if diff := cmp.Diff(want, Checks()); diff != "" {
		t.Errorf("Checks() (-checks.Names() +got):\n%s", diff)
	}
	for _, name := range checks.Names() {
		if _, _, ok := checkOracle(name); !ok {
			t.Errorf("checkOracle(%q) unknown, want every checks.Names() entry known", name)
		}
	}
}

func TestDefaultsReplay(t *testing.T) {
	src := strings.Replace(valid, "  key: {header: Idempotency-Key}\n",
		"  key: {header: Idempotency-Key, value: 'k-{{.Seq}}'}\n  replay: {after: 1500ms}\n", 1)
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	want := Replay{Count: 1, After: Duration(1500 * time.Millisecond)}
	if diff := cmp.Diff(&want, s.Operation.Replay); diff != "" {
		t.Errorf("replay defaults (-want +got):\n%s", diff)
	}
	if s.Retention.Std() != 24*time.Hour || s.Operation.Key.Value != "k-{{.Seq}}" {
		t.Errorf("retention %v, key value %q, want 24h, k-{{.Seq}}", s.Retention, s.Operation.Key.Value)
	}
	// No replay: none is invented.
	s, err = Parse("t.yaml", []byte(valid))
	if err != nil || s.Operation.Replay != nil {
		t.Errorf("Parse(valid) replay = %+v, %v, want nil, nil", s.Operation.Replay, err)
	}
}

func TestNewFieldsDefaults(t *testing.T) {
	s, err := Parse("t.yaml", []byte(valid))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	if s.Load.RequestTimeout.Std() != 30*time.Second || s.SettleGrace.Std() != 2*time.Second ||
		s.ProfileName != "draft" || s.Oracles[0].Effects.Across != AcrossFirst {
		t.Errorf("request_timeout %v, settle_grace %v, profile %q, across %q, want 30s, 2s, draft, first",
			s.Load.RequestTimeout, s.SettleGrace, s.ProfileName, s.Oracles[0].Effects.Across)
	}
	want := history.Profile{Name: "draft", InFlight: []string{"409"}, Mismatch: []string{"422"}, MissingKey: []string{"400"}}
	if diff := cmp.Diff(want, s.Profile()); diff != "" {
		t.Errorf("Profile() (-want +got):\n%s", diff)
	}
	src := valid + "profile: stripe\nsettle_grace: 500ms\n"
	src = strings.Replace(src, "  concurrency: 2\n", "  concurrency: 2\n  request_timeout: 5s\n", 1)
	if s, err = Parse("t.yaml", []byte(src)); err != nil {
		t.Fatalf("Parse = %v", err)
	}
	if s.Load.RequestTimeout.Std() != 5*time.Second || s.SettleGrace.Std() != 500*time.Millisecond || s.Profile().Name != "stripe" {
		t.Errorf("request_timeout %v, settle_grace %v, profile %q, want 5s, 500ms, stripe", s.Load.RequestTimeout, s.SettleGrace, s.Profile().Name)
	}
}

func TestProfiles(t *testing.T) {
	tests := []struct {
		profile                     string
		mismatch, inFlight, missing []int // statuses that must match
		notMismatch                 []int // statuses that must not
	}{
		{"draft", []int{422}, []int{409}, []int{400}, []int{400, 409, 201}},
		{"stripe", []int{400}, []int{409}, []int{200, 201}, []int{422}},
		{"brandur", []int{409}, []int{409}, []int{400}, []int{422}},
		{"powertools", []int{400, 409, 422}, []int{400, 409, 429}, []int{201}, []int{201, 500}},
		{"lenient", []int{400, 422}, []int{409, 425}, []int{400, 422}, []int{200, 503}},
	}
	for _, tt := range tests {
		p, ok := LookupProfile(tt.profile)
		if !ok || p.Name != tt.profile {
			t.Fatalf("LookupProfile(%q) = %v, %v", tt.profile, p, ok)
		}
		for _, c := range []struct {
			list     []string
			statuses []int
			want     bool
		}{{p.Mismatch, tt.mismatch, true}, {p.InFlight, tt.inFlight, true}, {p.MissingKey, tt.missing, true}, {p.Mismatch, tt.notMismatch, false}} {
			for _, st := range c.statuses {
				if got := history.Matches(c.list, st); got != c.want {
					t.Errorf("%s: history.Matches(%v, %d) = %v, want %v", tt.profile, c.list, st, got, c.want)
				}
			}
		}
	}
	if diff := cmp.Diff([]string{"brandur", "draft", "lenient", "powertools", "stripe"}, ProfileNames()); diff != "" {
		t.Errorf("ProfileNames() (-want +got):\n%s", diff)
	}
	if _, ok := LookupProfile("custom"); ok {
		t.Errorf("LookupProfile(custom) ok, want unknown")
	}
}

func TestNewFieldsDiagnostics(t *testing.T) {
	src := valid + "profile: strpe\nsettle_grace: 250\n"
	src = strings.Replace(src, "  concurrency: 2\n", "  concurrency: 2\n  request_timeout: 0s\n", 1)
	src = strings.Replace(src, "      bulk: {path: /charges/counts, value: $.counts}\n",
		"      bulk: {path: /charges/counts, value: $.counts}\n      across: all\n", 1)
	checkDiags(t, diagnose(t, src), []want{
		{9, "load.request_timeout", "request_timeout must be above 0"},
		{14, "oracles[0].effects.across", "unknown across"},
		{18, "profile", "did you mean stripe?"},
		{19, "settle_grace", "has no unit"},
	})
}

func TestTimeoutFaultWithinRequestTimeout(t *testing.T) {
	src := valid + "faults:\n  - {kind: timeout, rate: 0.1, after: 2s}\n"
	src = strings.Replace(src, "  concurrency: 2\n", "  concurrency: 2\n  request_timeout: 2s\n", 1)
	checkDiags(t, diagnose(t, src), []want{{18, "faults[0].after", "never fires"}})
}

func TestSettlesInvariant(t *testing.T) {
	// settles needs no oracle, and may name an effects oracle.
	for _, inv := range []string{"  - check: settles\n", "  - {check: settles, oracle: ledger}\n"} {
		if _, err := Parse("t.yaml", []byte(valid+inv)); err != nil {
			t.Errorf("Parse(%q) = %v, want valid", inv, err)
		}
	}
	src := valid + "  - {check: settles, oracle: likes}\n  - {check: settles, oracle: nope}\n"
	src = strings.Replace(src, "invariants:\n", "  - name: likes\n    counter: {path: /likes, value: $.n}\ninvariants:\n", 1)
	checkDiags(t, diagnose(t, src), []want{
		{18, "invariants[1].oracle", `settles needs an effects oracle, "likes" is a counter oracle`},
		{19, "invariants[2].oracle", `no oracle named "nope"`},
	})
}

func TestTargetList(t *testing.T) {
	src := valid + "target: [http://127.0.0.1:1, 'http://127.0.0.1:2/api']\n"
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	if diff := cmp.Diff([]string{"http://127.0.0.1:1", "http://127.0.0.1:2/api"}, s.Targets()); diff != "" {
		t.Errorf("Targets() (-want +got):\n%s", diff)
	}
	us, err := s.TargetURLs(nil)
	if err != nil || len(us) != 2 || us[1].String() != "http://127.0.0.1:2/api" {
		t.Errorf("TargetURLs(nil) = %v, %v, want both targets", us, err)
	}
	u, err := s.TargetURL("")
	if err != nil || u.String() != "http://127.0.0.1:1" {
		t.Errorf("TargetURL(\"\") = %v, %v, want the first target", u, err)
	}
	us, err = s.TargetURLs([]string{"", "http://override:1", "http://override:2"})
	if err != nil || len(us) != 2 || us[0].Host != "override:1" {
		t.Errorf("TargetURLs(overrides) = %v, %v, want the overrides", us, err)
	}
	// One URL is still a string.
	s, err = Parse("t.yaml", []byte(valid+"target: http://127.0.0.1:1\n"))
	if err != nil || len(s.Targets()) != 1 {
		t.Fatalf("Parse(one target) = %v, %v", s, err)
	}

	checkDiags(t, diagnose(t, valid+"target: [http://a:1, ftp://b, http://a:1]\n"), []want{
		{16, "target[1]", "not an http or https URL"},
		{16, "target[2]", "repeats target 0"},
	})
	checkDiags(t, diagnose(t, valid+"target: []\n"), []want{{16, "target", "empty list of targets"}})
	checkDiags(t, diagnose(t, valid+"target: {url: x}\n"), []want{{16, "target", "want a URL or a list of URLs"}})
}

func TestEffectsPaginationSchema(t *testing.T) {
	base := func(bulk string) string {
		return strings.Replace(valid, "      bulk: {path: /charges/counts, value: $.counts}\n", bulk, 1)
	}
	s, err := Parse("t.yaml", []byte(base("      bulk:\n        path: /charges\n        value: $.data[*].idempotency_key\n        next: {path: $.next_page_url}\n")))
	if err != nil {
		t.Fatalf("Parse(next) = %v", err)
	}
	if b := s.Oracles[0].Effects.Bulk; b.MaxPages != DefaultMaxPages || b.Next.Path != "$.next_page_url" {
		t.Errorf("bulk = %+v, want max_pages %d", b, DefaultMaxPages)
	}
	if _, err := Parse("t.yaml", []byte(base("      bulk: {path: /charges, value: '$.data[*].key', cursor: {path: $.next_cursor, param: cursor}, max_pages: 5}\n"))); err != nil {
		t.Errorf("Parse(cursor) = %v", err)
	}
	checkDiags(t, diagnose(t, base("      bulk: {path: /c, value: $.k, cursor: {path: $.n}, next: {path: $.n}}\n")), []want{
		{12, "oracles[0].effects.bulk", "next or cursor, not both"}})
	checkDiags(t, diagnose(t, base("      bulk: {path: /c, value: $.k, cursor: {path: 'x y'}, max_pages: 0}\n")), []want{
		{12, "oracles[0].effects.bulk.cursor.path", "bad JSONPath"},
		{12, "oracles[0].effects.bulk.cursor.param", "param is required"},
		{12, "oracles[0].effects.bulk.max_pages", "at least 1"}})
	checkDiags(t, diagnose(t, base("      bulk: {path: /c, value: $.k, max_pages: 3}\n")), []want{
		{12, "oracles[0].effects.bulk.max_pages", "neither next nor cursor"}})
	// Pagination belongs to bulk reads only.
	checkDiags(t, diagnose(t, base("      per_key: {path: '/c?k={{.Key}}', value: $.n, next: {path: $.n}}\n")), []want{
		{12, "oracles[0].effects.per_key.next", "unknown field"}})
}

func TestRedisPatternTemplate(t *testing.T) {
	base := func(pattern string) string {
		return strings.Replace(valid, "      bulk: {path: /charges/counts, value: $.counts}\n",
			"      redis: {url: 'redis://h', pattern: '"+pattern+"'}\n", 1)
	}
	for _, p := range []string{"idem:%s", "idem:{{.User}}|{{.Key}}", "{{.Key}}"} {
		if _, err := Parse("t.yaml", []byte(base(p))); err != nil {
			t.Errorf("Parse(pattern %q) = %v, want valid", p, err)
		}
	}
	checkDiags(t, diagnose(t, base("idem:{{.User}}")), []want{{12, "oracles[0].effects.redis.pattern", "never uses {{.Key}}"}})
	checkDiags(t, diagnose(t, base("idem:{{.Kye}}")), []want{{12, "oracles[0].effects.redis.pattern", "did you mean .Key?"}})
	checkDiags(t, diagnose(t, base("idem:%s:%s")), []want{{12, "oracles[0].effects.redis.pattern", "exactly once"}})
	// A template with a printf-style %s: the key is {{.Key}} there.
	checkDiags(t, diagnose(t, base(`tok:{{.User}}:%s`)), []want{{12, "oracles[0].effects.redis.pattern", "written {{.Key}}, not %s"}})
}

func TestKeyFromAnswer(t *testing.T) {
	key := func(k string) string {
		return strings.Replace(valid, "  key: {header: Idempotency-Key}\n", k, 1)
	}
	for _, k := range []string{
		"  key: {from_answer: {header: Idempotency-Key}}\n",
		"  key: {from_answer: {json: $.idempotency_key}}\n",
		"  key: {header: Idempotency-Key, from_answer: {header: X-Key}}\n",
		"  key: {body_field: op_id, from_answer: {json: $.op_id}}\n",
	} {
		s, err := Parse("t.yaml", []byte(key(k)))
		if err != nil {
			t.Errorf("Parse(%q) = %v, want valid", k, err)
			continue
		}
		if s.Operation.Key.FromAnswer == nil {
			t.Errorf("Parse(%q): no from_answer", k)
		}
	}
	checkDiags(t, diagnose(t, key("  key: {from_answer: {}}\n")), []want{{5, "operation.key.from_answer", "exactly one of header or json"}})
	checkDiags(t, diagnose(t, key("  key: {from_answer: {header: X-Key, json: $.k}}\n")), []want{{5, "operation.key.from_answer", "exactly one of header or json"}})
	checkDiags(t, diagnose(t, key("  key: {from_answer: {header: 'a b'}}\n")), []want{{5, "operation.key.from_answer.header", "not a valid header name"}})
	checkDiags(t, diagnose(t, key("  key: {from_answer: {json: 'x y'}}\n")), []want{{5, "operation.key.from_answer.json", "bad JSONPath"}})
	checkDiags(t, diagnose(t, key("  key: {none: true, from_answer: {header: X-Key}}\n")), []want{{5, "operation.key.from_answer", "none sends no key"}})
	checkDiags(t, diagnose(t, key("  key: {from_answer: {header: X-Key}}\nresponse:\n  fields: {minted_key: $.k}\n")),
		[]want{{7, "response.fields.minted_key", "where the key from the answers is kept"}})
}
