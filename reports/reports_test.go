package reports

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func msd(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// fixture is a small run of a naive endpoint: key k1 was charged twice after
// a dropped ack.
func fixture(t *testing.T) *Summary {
	t.Helper()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	h := &history.History{
		Meta: history.Meta{RunID: "run-1", Scenario: "charges-lost-ack-naive", Description: "A naive endpoint.", Source: "builtin:charges-lost-ack-naive",
			Target: "http://127.0.0.1:8080", Seed: 42, Started: start, Ended: start.Add(2 * time.Second), BitRecorded: true,
			Judge: history.Judge{Expect: "pass",
				Invariants: []history.Invariant{{Check: checks.ExactlyOnce, Oracle: "ledger"}, {Check: checks.SameResponse}},
				Thresholds: history.Thresholds{P99: 40 * time.Millisecond}}},
		Ops: []history.Op{{ID: 0, Key: "k0", User: "alice"}, {ID: 1, Key: "k1", User: "bob"}, {ID: 2, Key: "k2", User: "alice"}},
		Attempts: []history.Attempt{
			{Op: 0, N: 1, Outcome: history.OK, Status: 201, Intended: 0, Start: 0, End: msd(21), Fingerprint: 1, Fields: map[string]string{"id": "ch_1"}},
			{Op: 1, N: 1, Fault: "drop_ack", Outcome: history.Info, Intended: msd(1), Start: msd(1), End: msd(22), Err: "injected drop_ack: response discarded after the server answered 201", Bit: true},
			{Op: 1, N: 2, Outcome: history.OK, Status: 201, Intended: msd(32), Start: msd(32), End: msd(54), Fingerprint: 2, Fields: map[string]string{"id": "ch_3"}},
			{Op: 2, N: 1, Fault: "reset", Outcome: history.Fail, Intended: msd(2), Start: msd(2), End: msd(2), Err: "injected reset", Bit: true},
			{Op: 2, N: 2, Outcome: history.OK, Status: 201, Intended: msd(14), Start: msd(14), End: msd(36), Fingerprint: 3, Fields: map[string]string{"id": "ch_4"}},
		},
		Readings: []history.Reading{{Oracle: "ledger", Kind: "effects", Effects: map[string]int{"k0": 1, "k1": 2, "k2": 1}}},
	}
	h.Sort()
	m := measure.Of(h)
	op := m.Latency.Op
	j := checks.Judge(h, checks.Measured{P50: op.P50, P90: op.P90, P99: op.P99, P999: op.P999, Max: op.Max, ErrorRate: m.Load.ErrorRate})
	return New("idemcheck test", h, m, j)
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
	s := fixture(t)
	if s.Result != checks.NotMet || len(s.Thresholds) != 1 || s.Thresholds[0].OK {
		t.Fatalf("fixture: result %s, thresholds %+v; want not_met with p99 over its limit", s.Result, s.Thresholds)
	}
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

func TestJSONNeverNull(t *testing.T) {
	s := New("", &history.History{}, measure.Measures{}, checks.Judgement{})
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
	if r := readJSON(t, &buf); r.FormatVersion != FormatVersion {
		t.Errorf("JSON round trip format_version %d", r.FormatVersion)
	}
}

// readJSON reads back one summary written by WriteJSON.
func readJSON(t *testing.T, r io.Reader) *Summary {
	t.Helper()
	var s Summary
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		t.Fatalf("reading report: %v", err)
	}
	return &s
}

func TestWriterUnknown(t *testing.T) {
	if _, err := Writer("pdf"); err == nil || !strings.Contains(err.Error(), "json") {
		t.Errorf("Writer(pdf) = %v, want an error listing the formats", err)
	}
}

// A load that abort_on_fail stopped early says so, when and why, in
// every format.
func TestAbortedSaysWhyEverywhere(t *testing.T) {
	s := fixture(t)
	s.Aborted, s.AbortedAt = "same_response failed on ops that had ended: 3 of 9 ops differ", 1500*time.Millisecond
	for _, format := range Formats() {
		w, err := Writer(format)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := w(&buf, []*Summary{s}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if !strings.Contains(buf.String(), "3 of 9 ops differ") {
			t.Errorf("%s report does not say why the load stopped early:\n%s", format, buf.String())
		}
	}
}
