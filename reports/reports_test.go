package reports

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func msd(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// fixture is a small run of a naive endpoint: key k1 was charged twice after
// a dropped ack.
func fixture(t *testing.T) (*history.History, Input) {
	t.Helper()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	h := &history.History{
		Meta: history.Meta{Scenario: "charges-lost-ack-naive", Target: "http://127.0.0.1:8080", Seed: 42, Started: start, Ended: start.Add(2 * time.Second)},
		Ops:  []history.Op{{ID: 0, Key: "k0", User: "alice"}, {ID: 1, Key: "k1", User: "bob"}, {ID: 2, Key: "k2", User: "alice"}},
		Attempts: []history.Attempt{
			{Op: 0, N: 1, Outcome: history.OK, Status: 201, Intended: 0, Start: 0, End: msd(21), Fingerprint: 1, Fields: map[string]string{"id": "ch_1"}},
			{Op: 1, N: 1, Fault: "drop_ack", Outcome: history.Info, Intended: msd(1), Start: msd(1), End: msd(22), Err: "injected drop_ack: response discarded after the server answered 201"},
			{Op: 1, N: 2, Outcome: history.OK, Status: 201, Intended: msd(32), Start: msd(32), End: msd(54), Fingerprint: 2, Fields: map[string]string{"id": "ch_3"}},
			{Op: 2, N: 1, Fault: "reset", Outcome: history.Fail, Intended: msd(2), Start: msd(2), End: msd(2), Err: "injected reset"},
			{Op: 2, N: 2, Outcome: history.OK, Status: 201, Intended: msd(14), Start: msd(14), End: msd(36), Fingerprint: 3, Fields: map[string]string{"id": "ch_4"}},
		},
	}
	h.Sort()
	obs := &checks.Observation{Oracle: "ledger", Kind: "effects", Effects: map[string]int{"k0": 1, "k1": 2, "k2": 1}}
	invs := []checks.Invariant{{Check: checks.ExactlyOnce, Oracle: "ledger"}, {Check: checks.SameResponse}}
	in := Input{
		Tool:         "idemcheck test",
		Scenario:     ScenarioInfo{Name: "charges-lost-ack-naive", Description: "A naive endpoint.", Source: "builtin:charges-lost-ack-naive", Expect: "pass", Target: "http://127.0.0.1:8080"},
		Verdicts:     checks.Run(h, invs, map[string]*checks.Observation{"ledger": obs}),
		Observations: []*checks.Observation{obs},
		Limits:       Limits{P99: 40 * time.Millisecond},
	}
	return h, in
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./reports -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got), rerun with -update if intended:\n%s", name, diff)
	}
}

func TestWritersGolden(t *testing.T) {
	h, in := fixture(t)
	s := Build(h, in)
	for _, format := range Formats() {
		w, err := Writer(format)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := w(&buf, []*Summary{s}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		golden(t, "report."+format, buf.Bytes())
	}
}

func TestBuildDecides(t *testing.T) {
	h, in := fixture(t)
	s := Build(h, in)
	if s.Result != NotMet {
		t.Errorf("Build(naive run, expect pass).Result = %s, want %s (%s)", s.Result, NotMet, s.Why)
	}
	if s.Load.Ops != 3 || s.Load.Acked != 3 || s.Load.Retries != 2 {
		t.Errorf("Load = %+v, want 3 ops, 3 acked, 2 retries", s.Load)
	}
	if got := s.Faults; !cmp.Equal(got, []Count{{"drop_ack", 1}, {"reset", 1}}) {
		t.Errorf("Faults = %v", got)
	}
	// p99 of op latency is ~53ms, over the 40ms limit.
	if len(s.Thresholds) != 1 || s.Thresholds[0].OK {
		t.Errorf("Thresholds = %+v, want p99 exceeded", s.Thresholds)
	}
	in.Scenario.Expect = "violation"
	in.Limits = Limits{}
	if s = Build(h, in); s.Result != Met {
		t.Errorf("Build(naive run, expect violation).Result = %s, want %s", s.Result, Met)
	}
	in.Verdicts = []checks.Verdict{{Invariant: checks.ExactlyOnce, Status: checks.Unknown, Reason: "oracle down"}}
	if s = Build(h, in); s.Result != Inconclusive {
		t.Errorf("Build(unknown verdict).Result = %s, want %s", s.Result, Inconclusive)
	}
}

func TestJSONNeverNull(t *testing.T) {
	s := Build(&history.History{}, Input{})
	var buf bytes.Buffer
	if err := WriteJSON(&buf, []*Summary{s}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "null") {
		t.Errorf("JSON report of an empty run holds null:\n%s", buf.String())
	}
	var back map[string]any
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back["format_version"] != float64(FormatVersion) {
		t.Errorf("format_version = %v, want %d", back["format_version"], FormatVersion)
	}
	r, err := ReadJSON(&buf)
	if err == nil && r.FormatVersion != FormatVersion {
		t.Errorf("ReadJSON round trip format_version %d", r.FormatVersion)
	}
}

func TestWriterUnknown(t *testing.T) {
	if _, err := Writer("pdf"); err == nil || !strings.Contains(err.Error(), "json") {
		t.Errorf("Writer(pdf) = %v, want an error listing the formats", err)
	}
}

func TestLatency(t *testing.T) {
	h := &history.History{
		Ops: []history.Op{{ID: 0}, {ID: 1}, {ID: 2}, {ID: 3}},
		Attempts: []history.Attempt{
			// queued 1ms before it was sent: latency counts from the intended start
			{Op: 0, N: 1, Outcome: history.OK, Status: 201, Intended: 0, Start: msd(1), End: msd(10)},
			{Op: 1, N: 1, Outcome: history.Info, Fault: "drop_ack", Intended: 0, End: msd(5)},
			{Op: 1, N: 2, Outcome: history.OK, Status: 201, Intended: msd(20), Start: msd(20), End: msd(50)},
			{Op: 2, N: 1, Outcome: history.OK, Status: 201, Fault: "delay", Intended: 0, End: 2 * time.Hour},
			// a replay 1.5s later is no part of the op's latency, nor a retry
			{Op: 3, N: 1, Outcome: history.OK, Status: 201, Intended: 0, Start: 0, End: msd(20)},
			{Op: 3, N: 2, Outcome: history.OK, Status: 201, Fault: history.FaultReplay, Intended: msd(1520), Start: msd(1520), End: msd(1530)},
		},
	}
	h.Sort()
	s := Build(h, Input{})
	near := func(got, want float64) bool { return got > want*0.99 && got < want*1.01 }
	if a := s.Latency.Attempt; a.Count != 3 || !near(a.Max, 30) || !near(a.P50, 20) {
		t.Errorf("attempt latency = %+v, want 3 clean attempts (10, 20, 30ms; the replay and faulted ones left out)", a)
	}
	if o := s.Latency.Op; o.Count != 4 || !near(o.P50, 20) || !near(o.Max, 3600000) {
		t.Errorf("op latency = %+v, want 10, 20, 50ms and the 1h clamp", o)
	}
	if s.Load.Retries != 1 || s.Load.Replays != 1 {
		t.Errorf("retries %d replays %d, want 1 and 1", s.Load.Retries, s.Load.Replays)
	}
	if cmp.Equal(s.Faults, []Count{{"delay", 1}, {"drop_ack", 1}}) == false {
		t.Errorf("faults = %v, want delay and drop_ack only (replays are no fault)", s.Faults)
	}
}
