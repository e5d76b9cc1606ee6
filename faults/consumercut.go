package faults

import (
	"errors"
	"net"
)

// KindConsumerCut cuts a queue consumer's connection to its broker
// during the load: a TCP proxy the consumer is pointed at (Spec.Listen)
// forwards to the broker and cuts a share Rate of the chunks, either way
// (TCPFaults.CutRate): a delivery the consumer may have applied whose
// acknowledgement never reaches the broker, which then redelivers it. It
// is not a per-attempt fault: New and Plan leave it out, ParseSpec
// refuses it, and a run's trial runs the proxy beside the load. A cut
// that made the broker redeliver nothing did not bite: the run says so.
const KindConsumerCut = "consumer_cut"

// cutParams are the parameters only a consumer_cut takes (no --fault
// flag sets them: a proxy is one already).
var cutParams = []nemesisParam{{"listen", func(s Spec) bool { return s.Listen != "" }}}

var errCutNotPerAttempt = specErr("kind", "a consumer_cut is not a per-attempt fault: a run runs its proxy beside the load")

// CheckConsumerCut checks a consumer_cut's parameters: a rate in (0, 1]
// and the host:port the proxy listens on.
func CheckConsumerCut(s Spec) error {
	var errs []error
	if !(s.Rate > 0 && s.Rate <= 1) {
		errs = append(errs, specErr("rate", "the share of chunks cut is above 0 and at most 1, got %v", s.Rate))
	}
	if _, _, err := net.SplitHostPort(s.Listen); s.Listen == "" || err != nil {
		errs = append(errs, specErr("listen", "the proxy's address is required, as host:port (the consumer connects to it)"))
	}
	if s.After != 0 || s.Copies != 0 || s.Delay != 0 || len(s.Attempts) > 0 || len(nemesisOnly(s)) > 0 {
		errs = append(errs, specErr("kind", "a consumer_cut takes rate and listen alone"))
	}
	return errors.Join(errs...)
}

// ConsumerCutParams returns the names of the parameters only a
// consumer_cut takes, as a scenario writes them: listen.
func ConsumerCutParams() []string { return []string{cutParams[0].name} }
