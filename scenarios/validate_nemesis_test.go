package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/faults"
)

func TestParseNemesis(t *testing.T) {
	src := valid + `faults:
  - {kind: drop_ack, rate: 0.1}
  - kind: nemesis
    stop: [sh, -c, "kill -9 $(cat lab.pid)"]
    start: [./start-lab.sh]
    at: 40%
    every: 2s
    ready: GET /healthz
    ready_timeout: 10s
  - {kind: nemesis, stop: [kubectl, delete, pod, api-0], at: 0.75}
`
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	want := []faults.Spec{
		{Kind: faults.KindDropAck, Rate: 0.1},
		{Kind: faults.KindNemesis, Stop: []string{"sh", "-c", "kill -9 $(cat lab.pid)"}, Start: []string{"./start-lab.sh"},
			At: 0.4, Every: 2 * time.Second, Ready: "GET /healthz", ReadyTimeout: 10 * time.Second},
		{Kind: faults.KindNemesis, Stop: []string{"kubectl", "delete", "pod", "api-0"}, At: 0.75},
	}
	if diff := cmp.Diff(want, s.Faults); diff != "" {
		t.Errorf("Faults (-want +got):\n%s", diff)
	}
}

func TestNemesisDiagnostics(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault string
		wants []want
	}{
		{"no stop, no at", `{kind: nemesis, start: [x]}`, []want{
			{17, "faults[0].stop", "needs stop"}, {17, "faults[0].at", "needs at"}}},
		{"at out of range", `{kind: nemesis, stop: [x], at: 100%}`, []want{{17, "faults[0].at", "between 0% and 100%"}}},
		{"at not a share", `{kind: nemesis, stop: [x], at: soon}`, []want{{17, "faults[0].at", "like 40%"}}},
		{"at a list", `{kind: nemesis, stop: [x], at: [1]}`, []want{{17, "faults[0].at", "want a share of the load"}}},
		{"stop a string", `{kind: nemesis, stop: "kill -9 1", at: 40%}`, []want{{17, "faults[0].stop", "want a list"}}},
		{"every 0", `{kind: nemesis, stop: [x], at: 40%, every: 0s}`, []want{{17, "faults[0].every", "leave every out for one window"}}},
		{"ready_timeout 0", `{kind: nemesis, stop: [x], at: 40%, ready_timeout: 0s}`, []want{{17, "faults[0].ready_timeout", "leave it out for 30s"}}},
		{"ready without a method", `{kind: nemesis, stop: [x], at: 40%, ready: /healthz}`, []want{{17, "faults[0].ready", "GET /healthz"}}},
		{"a rate", `{kind: nemesis, stop: [x], at: 40%, rate: 0.5}`, []want{{17, "faults[0].rate", "remove rate from this nemesis"}}},
		{"nemesis parameters on a reset", `{kind: reset, rate: 0.1, stop: [x]}`, []want{
			{17, "faults[0].stop", "remove stop from this reset fault"}}},
		{"a typo in the kind", `{kind: nemisis, stop: [x], at: 40%}`, []want{
			{17, "faults[0].kind", "did you mean nemesis?"}, {17, "faults[0].rate", "rate is required"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkDiags(t, diagnose(t, valid+"faults:\n  - "+tc.fault+"\n"), tc.wants)
		})
	}
}

// Every nemesis parameter has its hint.
func TestNemesisHints(t *testing.T) {
	for _, name := range faults.NemesisParams() {
		if nemesisHints[name] == "" {
			t.Errorf("nemesis parameter %s has no hint", name)
		}
	}
}
