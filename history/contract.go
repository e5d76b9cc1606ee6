package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"time"
)

// Contract is what an audit's history is judged against: the contract
// checks of docs/audit.md the audit ran, and what it was told of the API.
// Its ops name their check (Op.Check), its attempts their role in the
// probe (Attempt.Label), and each check's effects reading is a Reading
// named by the check's id.
type Contract struct {
	// Method and URL are the audited request's, the URL redacted.
	Method string `json:"method"`
	URL    string `json:"url"`
	// Checks are the checks in the order they ran, each with why it did
	// not run when it did not.
	Checks []ContractCheck `json:"checks"`
	// Oracle names how effects were counted; "" when they were not, and
	// every check judged from the answers alone.
	Oracle string `json:"oracle,omitempty"`
	// Errors is the declared error policy ("cached", "re-executed"), ""
	// when none was declared.
	Errors string `json:"errors,omitempty"`
	// Lease is how long a key may answer 409 after its request ended or
	// its client went away; Retention how long keys are kept (0 when not
	// declared).
	Lease     time.Duration `json:"lease_ns"`
	Retention time.Duration `json:"retention_ns,omitempty"`
	// Requests is how many requests the audit sent (oracle reads aside).
	Requests int `json:"requests"`
	// RetentionKeys is how many fresh keys C24 sent after a key before
	// its retry (0 when C24 was not configured).
	RetentionKeys int `json:"retention_keys,omitempty"`
	// KeyFromAnswer says where the API returned the keys it minted (an
	// answer header, or a JSONPath into the answer); "" when the client
	// chose the keys. An op's key is then the minted one.
	KeyFromAnswer string `json:"key_from_answer,omitempty"`
}

// ContractCheck is one contract check of an audit, as the probes left it.
type ContractCheck struct {
	ID string `json:"id"`
	// Skip says why the check's probe did not run (not selected, not
	// configured, over the request cap, interrupted); "" when it ran.
	Skip string `json:"skip,omitempty"`
	// Cut is the client deadline that cut the check's requests short
	// (C10, C13), the last one tried; 0 for the others.
	Cut time.Duration `json:"cut_ns,omitempty"`
}

// CheckCalibration is the Op.Check of an audit's calibration requests.
const CheckCalibration = "calibration"

// CheckLinks is the Op.Check of the requests an audit sends first, to
// other endpoints, for the path parameters their answers give (an
// OpenAPI document's links): no check judges them.
const CheckLinks = "links"

// CheckForged is the Op.Check of a run's forged webhook deliveries
// (operation.webhook.forged): every attempt of the op carries a wrong
// signature or a stale timestamp, and the receiver must refuse them all
// with no effect. The other invariants leave such ops out.
const CheckForged = "forged"

// maxAuditHeader bounds the header line IsAudit reads: an audit's is a
// few kilobytes, and a file whose first line is longer is not one.
const maxAuditHeader = 1 << 20

// IsAudit reports whether the history in the file at path is an audit's
// (its header holds a Contract). It reads the first line only, at most
// maxAuditHeader bytes of it: a file that is not a history, or a header
// too long, is not an audit (Decode says what is wrong with it).
func IsAudit(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, maxAuditHeader)).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	var h struct {
		Type  string `json:"type"`
		Judge struct {
			Contract *Contract `json:"contract"`
		} `json:"judge"`
	}
	return json.Unmarshal(line, &h) == nil && h.Type == "header" && h.Judge.Contract != nil
}
