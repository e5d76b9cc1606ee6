package reports

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/checks"
)

// Options tune the writers where a format leaves a choice.
type Options struct {
	// JUnitInconclusive is what an inconclusive check is in JUnit:
	// "error" (the default: the check could not run to a verdict) or
	// "failure". Never "skipped": a skipped case is drawn green.
	JUnitInconclusive string
}

// JUnit's ways to say a case did not pass.
const (
	JUnitError   = "error"
	JUnitFailure = "failure"
)

// WriterFor returns the writer of a format, tuned by o.
func WriterFor(format string, o Options) (WriteFunc, error) {
	if format == "junit" {
		if err := o.validate(); err != nil {
			return nil, err
		}
		return func(w io.Writer, ss []*Summary) error { return writeJUnit(w, ss, o) }, nil
	}
	return Writer(format)
}

func (o Options) validate() error {
	switch o.JUnitInconclusive {
	case "", JUnitError, JUnitFailure:
		return nil
	}
	return fmt.Errorf("inconclusive as %q in JUnit: want error or failure", o.JUnitInconclusive)
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// junitSkipped is a case that did not run (an audit's skipped check; a
// run's checks are never skipped).
type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes JUnit XML as CI test reporters read it, an
// inconclusive check as an error; see WriterFor to make it a failure.
func WriteJUnit(w io.Writer, ss []*Summary) error { return writeJUnit(w, ss, Options{}) }

// writeJUnit writes a suite per scenario and a case per invariant and
// threshold. A case fails when it goes against the expectation (in a
// scenario that expects a violation, a caught one passes); an
// inconclusive check is an error or a failure, never skipped; a scenario
// that could not run is one error case. Each suite is named by its
// scenario and run (junitSuiteName), no two alike in one file; it carries
// the scenario, seed, key nonce and target as properties and the text
// report as system-out; its time is the load's, shared evenly by its
// cases so that reporters that add up the cases show it too.
func writeJUnit(w io.Writer, ss []*Summary, o Options) error {
	out := junitSuites{Name: "idemcheck"}
	var total time.Duration
	named := map[string]int{}
	for _, s := range ss {
		suite := junitSuiteOf(s, o)
		// two summaries of one run of one scenario (a run judged twice)
		// still make two suites
		if named[suite.Name]++; named[suite.Name] > 1 {
			suite.Name += fmt.Sprintf(" #%d", named[suite.Name])
		}
		out.Tests += suite.Tests
		out.Failures += suite.Failures
		out.Errors += suite.Errors
		total += runTime(s)
		out.Suites = append(out.Suites, suite)
	}
	out.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func runTime(s *Summary) time.Duration {
	if s.Ended.After(s.Started) {
		return s.Ended.Sub(s.Started)
	}
	return 0
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

// junitSuiteName is a suite's name: the scenario and its run,
// "charges (run 5f3a9c0d12ab34ef)", or the target (already redacted) for a
// scenario that could not run, so that viewers that merge suites by name
// (xunit-viewer, junit-viewer) keep two runs of one scenario, and their
// properties, apart.
func junitSuiteName(s *Summary) string {
	switch {
	case s.RunID != "":
		return s.Scenario.Name + " (run " + s.RunID + ")"
	case s.Scenario.Target != "":
		return s.Scenario.Name + " (" + s.Scenario.Target + ")"
	}
	return s.Scenario.Name
}

func junitSuiteOf(s *Summary, o Options) junitSuite {
	suite := junitSuite{Name: junitSuiteName(s), Time: seconds(runTime(s))}
	if !s.Started.IsZero() {
		suite.Timestamp = s.Started.UTC().Format("2006-01-02T15:04:05")
	}
	class := "idemcheck." + s.Scenario.Name
	prop := func(name, value string) { suite.Properties = append(suite.Properties, junitProperty{name, value}) }
	prop("scenario", s.Scenario.Name)
	prop("target", s.Scenario.Target)
	if s.Result == Errored {
		prop("result", string(s.Result))
		suite.Cases = []junitCase{{Name: "run", Classname: class, Time: suite.Time,
			Error: &junitMessage{Message: "could not run: " + s.Error, Type: "error", Text: s.Error}}}
		suite.Tests, suite.Errors = 1, 1
		suite.SystemOut = textOf(s)
		return suite
	}
	prop("seed", strconv.FormatUint(s.Seed, 10))
	prop("key_nonce", strconv.FormatUint(s.KeyNonce, 10))
	prop("run_id", s.RunID)
	prop("source", s.Scenario.Source)
	prop("expect", s.Scenario.Expect)
	prop("result", string(s.Result))
	prop("why", s.Why)
	prop("interrupted", strconv.FormatBool(s.Interrupted))
	if s.Aborted != "" {
		prop("aborted", s.Aborted)
	}
	prop("faults", faultList(s.Faults, s.Calibration, "none"))
	if c := calibrationLine(s.Calibration); c != "" {
		prop("calibration", c)
	}

	inconclusive := o.JUnitInconclusive
	if inconclusive == "" {
		inconclusive = JUnitError
	}
	for _, v := range s.Verdicts {
		c := junitCase{Name: verdictName(v), Classname: class}
		bad := v.Status == checks.Fail
		if s.Scenario.Expect == "violation" {
			// the scenario passes by catching a violation, whichever
			// invariant caught it
			bad = s.Result == checks.NotMet
		}
		switch {
		case v.Status == checks.Unknown:
			m := &junitMessage{Message: "inconclusive: " + verdictLine(v), Type: "inconclusive", Text: verdictLine(v)}
			if inconclusive == JUnitFailure {
				c.Failure = m
				suite.Failures++
			} else {
				c.Error = m
				suite.Errors++
			}
		case bad:
			var b strings.Builder
			if l := attributionLine(v); l != "" {
				b.WriteString(l + "\n")
			}
			for _, ex := range v.Examples {
				fmt.Fprintf(&b, "key %s: %s\n", ex.Key, exampleProblem(ex))
				for _, a := range ex.Attempts {
					fmt.Fprintf(&b, "  #%d %s\n", a.N, attemptLine(a))
				}
			}
			if b.Len() == 0 {
				b.WriteString(s.Why)
			}
			c.Failure = &junitMessage{Message: verdictLine(v), Type: "violation", Text: b.String()}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
	}
	for _, t := range s.Thresholds {
		c := junitCase{Name: "threshold " + t.Name, Classname: class}
		if !t.OK {
			c.Failure = &junitMessage{Message: thresholdLine(t) + ": over the limit", Type: "threshold"}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
	}
	if s.Result != checks.Met && suite.Failures+suite.Errors == 0 {
		// The result went against the expectation with no case to show
		// it (an interrupted run, a finding under --fail-on, nothing
		// judged): one case says so, or the suite would be drawn green.
		c := junitCase{Name: "result", Classname: class}
		m := &junitMessage{Message: resultWord(s.Result) + ": " + s.Why, Type: string(s.Result)}
		if s.Result == checks.Inconclusive && inconclusive == JUnitError {
			c.Error = m
			suite.Errors++
		} else {
			c.Failure = m
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Tests = len(suite.Cases)
	if n := len(suite.Cases); n > 0 {
		share := seconds(runTime(s) / time.Duration(n))
		for i := range suite.Cases {
			suite.Cases[i].Time = share
		}
	}
	suite.SystemOut = textOf(s)
	return suite
}

// textOf is s's text report.
func textOf(s *Summary) string {
	var b bytes.Buffer
	ew := &errWriter{w: &b}
	writeText(ew, s)
	return b.String()
}
