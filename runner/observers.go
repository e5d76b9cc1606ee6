package runner

import (
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// Observers are several observers of one run heard as one (progress and
// metrics): each call goes to each, in order. AttemptDone goes to those
// that are AttemptObservers, OpStarted to those that are OpObservers, Phase (the steps trial announces after the
// load) to those that have the method.
type Observers []Observer

// Start implements Observer.
func (all Observers) Start(total int, d time.Duration) {
	for _, o := range all {
		o.Start(total, d)
	}
}

// OpDone implements Observer.
func (all Observers) OpDone(op int, state history.OpState) {
	for _, o := range all {
		o.OpDone(op, state)
	}
}

// OpStarted implements OpObserver.
func (all Observers) OpStarted(op history.Op) {
	for _, o := range all {
		if oo, ok := o.(OpObserver); ok {
			oo.OpStarted(op)
		}
	}
}

// AttemptDone implements AttemptObserver.
func (all Observers) AttemptDone(a history.Attempt) {
	for _, o := range all {
		if ao, ok := o.(AttemptObserver); ok {
			ao.AttemptDone(a)
		}
	}
}

// Phase tells every observer that hears phases.
func (all Observers) Phase(what string) {
	for _, o := range all {
		if p, ok := o.(interface{ Phase(string) }); ok {
			p.Phase(what)
		}
	}
}
