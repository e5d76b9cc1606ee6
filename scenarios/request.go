package scenarios

// RequestSpec is a scenario given as one request rather than as a file: the
// operation a command takes as METHOD URL and flags (audit, bench
// overhead), with the sections that command needs. A section left zero
// takes the default a file that leaves it out gets.
type RequestSpec struct {
	// Name is the scenario's name.
	Name string
	// Request is the operation: method, path (with its query), header
	// templates and body template.
	Request Request
	// Key says where the op's key goes.
	Key KeyPlace
	// Targets are the base URLs the path is sent to.
	Targets []string
	// ProfileName names the profile the answers are judged by; "" for
	// DefaultProfile.
	ProfileName string
	Load        Load
	Retry       Retry
	Oracles     []Oracle
	Invariants  []Invariant
	// Webhook sends the operation as webhook deliveries
	// (operation.webhook); with an empty Key, the key goes where its
	// profile carries the event id.
	Webhook *Webhook
}

// FromRequest builds the scenario of spec: it fills in the defaults and
// validates it as Parse does a file (templates, key placement, targets,
// oracles, invariants), and returns every problem at once as Diagnostics.
// source names the input in the scenario and its diagnostics (there is no
// line to give). The scenario keeps spec's slices, maps and pointers, and
// fills in their defaults.
func FromRequest(source string, spec RequestSpec) (*Scenario, error) {
	s := &Scenario{
		Name:        spec.Name,
		Target:      TargetList(spec.Targets),
		ProfileName: spec.ProfileName,
		Operation:   Operation{Request: spec.Request, Key: spec.Key, Webhook: spec.Webhook},
		Load:        spec.Load,
		Retry:       spec.Retry,
		Oracles:     spec.Oracles,
		Invariants:  spec.Invariants,
		Source:      source,
	}
	s.applyDefaults()
	if ds := s.Validate(); ds != nil {
		return nil, ds
	}
	return s, nil
}
