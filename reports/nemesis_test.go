package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
)

// nemesisFixture is a run whose nemesis killed and restarted the target
// once, while k1 was in flight (charged twice), and whose second window
// never opened.
func nemesisFixture(t *testing.T) *Summary {
	t.Helper()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	h := &history.History{
		Meta: history.Meta{RunID: "run-n", Scenario: "charges-crash", Target: "http://127.0.0.1:8080", Seed: 5, Started: start, Ended: start.Add(time.Second),
			Judge: history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: checks.ExactlyOnce, Oracle: "ledger"}}},
			Nemesis: []history.NemesisWindow{
				{Fault: 1, N: 1, Start: msd(20), Ready: msd(30),
					Stop:    &history.NemesisCommand{Command: "kill -9 42", Start: msd(20), End: msd(21)},
					Restart: &history.NemesisCommand{Command: "./serve", Start: msd(21), End: msd(22)}},
				{Fault: 2, N: 1, Start: msd(90), Ready: msd(90), Err: "it never ran: the load ended before its moment"},
			}},
		Ops: []history.Op{{ID: 0, Key: "k0"}, {ID: 1, Key: "k1"}},
		Attempts: []history.Attempt{
			{Op: 0, N: 1, Outcome: history.OK, Status: 201, End: msd(10), Fingerprint: 1},
			{Op: 1, N: 1, Outcome: history.Info, Intended: msd(15), Start: msd(15), End: msd(21), Err: "h1: reading the status line: EOF"},
			{Op: 1, N: 2, Outcome: history.OK, Status: 201, Intended: msd(40), Start: msd(40), End: msd(50), Fingerprint: 2},
		},
		Readings: []history.Reading{{Oracle: "ledger", Kind: "effects", Effects: map[string]int{"k0": 1, "k1": 2}}},
	}
	h.Sort()
	m := measure.Of(h)
	return New("idemcheck test", h, m, checks.Judge(h, checks.Measured{}))
}

// Every format shows a line per nemesis window; the HTML report shades
// the windows on the latency chart; the evidence names a key whose
// attempts span one.
func TestNemesisWindowsInReports(t *testing.T) {
	s := nemesisFixture(t)
	first := "nemesis window 1 (faults[1]): stopped at 0.02 s by `kill -9 42` (exit 0), started by `./serve` (exit 0), ready at 0.03 s (0.01 s down)"
	second := "nemesis window 2 (faults[2]): FAILED: it never ran: the load ended before its moment"
	spanned := "its attempts span nemesis window 1: the target stopped at 0.02 s, ready at 0.03 s"
	render := func(w WriteFunc) string {
		var b bytes.Buffer
		if err := w(&b, []*Summary{s}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	text := render(WriteText)
	for _, want := range []string{first + "\n", second + "\n", spanned} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
	if md := render(WriteMarkdown); !strings.Contains(md, "nemesis window 1 (faults\\[1\\])") || !strings.Contains(md, "nemesis window 2") {
		t.Errorf("markdown report lacks the windows:\n%s", md)
	}
	page := render(WriteHTML)
	if n := strings.Count(page, `<p class="meta nemesis">`); n != 2 {
		t.Errorf("HTML report has %d nemesis lines, want 2", n)
	}
	if n := strings.Count(page, `<rect class="nemesis"`); n != 1 {
		t.Errorf("HTML latency chart shades %d nemesis windows, want 1 (the second never opened)", n)
	}
	var back struct {
		Nemesis []history.NemesisWindow `json:"nemesis"`
	}
	if err := json.Unmarshal([]byte(render(WriteJSON)), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Nemesis) != 2 || back.Nemesis[0].Stop.Command != "kill -9 42" || back.Nemesis[1].Err == "" {
		t.Errorf("JSON report's nemesis = %+v, want both windows", back.Nemesis)
	}
	if s.Result != checks.NotMet {
		t.Errorf("result %s (%s), want not_met: the double charge stands beside a window that never opened", s.Result, s.Why)
	}
}

// Every format says what a consumer_cut did; a cut that made nothing
// redeliver leaves the run inconclusive, saying so.
func TestConsumerCutInReports(t *testing.T) {
	for _, tc := range []struct {
		cc     history.ConsumerCut
		result checks.Result
	}{
		{history.ConsumerCut{Rate: 0.05, Listen: "127.0.0.1:16379", Cuts: 25, Redelivered: 61}, checks.Met},
		{history.ConsumerCut{Rate: 0.05, Listen: "127.0.0.1:16379", Cuts: 25}, checks.Inconclusive},
		{history.ConsumerCut{Rate: 0.05, Listen: "127.0.0.1:16379", Redelivered: 3}, checks.Inconclusive}, // a consumer's own retries, no cut
	} {
		start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
		cc := tc.cc
		h := &history.History{
			Meta: history.Meta{RunID: "run-c", Scenario: "stream-charges-cut", Target: "redis://127.0.0.1:6379/0", Started: start, Ended: start.Add(time.Second), BitRecorded: true,
				Judge:       history.Judge{Expect: "pass", Invariants: []history.Invariant{{Check: checks.ExactlyOnce, Oracle: "ledger"}}},
				ConsumerCut: &cc},
			Ops:      []history.Op{{ID: 0, Key: "k0"}},
			Attempts: []history.Attempt{{Op: 0, N: 1, Outcome: history.OK, Status: 200, End: msd(1)}},
			Readings: []history.Reading{{Oracle: "ledger", Kind: "effects", Effects: map[string]int{"k0": 1}}},
		}
		s := New("idemcheck test", h, measure.Of(h), checks.Judge(h, checks.Measured{}))
		if s.Result != tc.result {
			t.Errorf("%+v: result %s (%s), want %s", tc.cc, s.Result, s.Why, tc.result)
		}
		if tc.result == checks.Inconclusive && !strings.Contains(s.Why, "consumer_cut never bit") {
			t.Errorf("%+v: why %q, want the consumer_cut named", tc.cc, s.Why)
		}
		line := "consumer_cut: " + strings.Fields(consumerCutLine(&cc))[1]
		for name, w := range map[string]WriteFunc{"text": WriteText, "markdown": WriteMarkdown, "html": WriteHTML, "json": WriteJSON} {
			var b bytes.Buffer
			if err := w(&b, []*Summary{s}); err != nil {
				t.Fatal(err)
			}
			want := line
			switch name {
			case "json":
				want = `"consumer_cut"`
			case "markdown":
				want = strings.Replace(line, "_", `\_`, 1)
			}
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s report lacks %q", name, want)
			}
		}
	}
}
