package history

import "time"

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
