package checks

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/history"
)

// AnswerJudge judges one answer of an audit's history: judged is false
// when it cannot tell (a body cut short, a content type it does not
// read); msg is "" when the answer is right, else what is wrong, at
// severity sev. replay is true when an earlier request of the same key
// was answered 2xx, and that answer judged right: the answer should be
// that one again.
type AnswerJudge func(a *history.Attempt, replay bool) (judged bool, sev Severity, msg string)

// JudgeAnswers judges every answer of h to a request of method with
// judge, as one check of an audit's scorecard (id, name, the worst it
// can find): a check outside the contract, such as an OpenAPI
// document's declared responses (audit --openapi). It is unknown when
// no answer could be judged.
func JudgeAnswers(h *history.History, method, id, name string, worst Severity, judge AnswerJudge) ContractCheck {
	c := &contractRun{}
	h.Sort()
	// the operation's path is the calibration's: a probe sent elsewhere
	// (another endpoint, C16) is another operation's answer
	paths := map[string]bool{}
	for i, op := range h.Ops {
		if op.Check != history.CheckCalibration {
			continue
		}
		for _, a := range h.AttemptsOf(i) {
			if a.Request != nil {
				paths[urlPath(a.Request.URL)] = true
			}
		}
	}
	judged := 0
	for i := range h.Ops {
		if h.Ops[i].Check == history.CheckLinks {
			continue // another operation's answers
		}
		// a replay is held to its first answer only when that one was
		// right: a faithful replay of a wrong first answer is the first's
		// finding, not a wrong replay
		acked := false
		for _, a := range h.AttemptsOf(i) {
			if a.Outcome != history.OK || a.Status == 0 || a.Request == nil || !strings.EqualFold(a.Request.Method, method) ||
				len(paths) > 0 && !paths[urlPath(a.Request.URL)] {
				continue
			}
			ok, sev, msg := judge(&a, acked)
			if a.Acked() && !acked && ok && msg == "" {
				acked = true
			}
			if !ok {
				continue
			}
			judged++
			if msg != "" {
				c.fail(sev, "%s", msg)
				c.show(&a)
			}
		}
	}
	if judged == 0 {
		c.unknown("no answer could be judged")
	}
	c.pass = fmt.Sprintf("%d answers judged, every one as declared", judged)
	out := c.result(contractDef{id: id, name: name, severity: worst})
	return out
}

// Decide sets the scorecard's result from its checks again, after a
// check was added (JudgeAnswers).
func (s *Scorecard) Decide() {
	s.Result, s.Why = decideContract(s.Checks, s.FailOn, s.Interrupted)
}

// urlPath is the path of a recorded URL, without its query.
func urlPath(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
		if j := strings.IndexByte(u, '/'); j >= 0 {
			u = u[j:]
		} else {
			u = "/"
		}
	}
	u, _, _ = strings.Cut(u, "?")
	return u
}
