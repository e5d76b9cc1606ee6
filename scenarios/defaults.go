package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/faults"
)

// Defaults, applied to fields the scenario leaves out.
const (
	DefaultMaxInFlight       = 512
	DefaultAttempts          = 5
	DefaultBackoffInitial    = 10 * time.Millisecond
	DefaultBackoffMax        = time.Second
	DefaultBackoffMultiplier = 2.0
	DefaultBackoffJitter     = 0.5
	DefaultQuiet             = 200 * time.Millisecond
	DefaultOracleConcurrency = 8
	DefaultDuplicateCopies   = 2
	DefaultRetention         = 24 * time.Hour
	DefaultReplayCount       = 1
	DefaultRequestTimeout    = 30 * time.Second
	DefaultSettleGrace       = 2 * time.Second
	DefaultMaxPages          = 1000
)

// DefaultRetryOn is what is retried when retry.on is left out.
func DefaultRetryOn() []string { return []string{"fail", "info", "409", "429", "5xx"} }

// set reports whether the file gave path a (non-null) value. A scenario
// built in Go, with no Lines, sets nothing: its zero values are defaulted.
func (s *Scenario) set(path string) bool {
	_, ok := s.Lines[path]
	return ok
}

// applyDefaults fills every field the scenario left out. It is the one place
// defaults live. A field written explicitly keeps its value, even zero
// (jitter: 0 means no jitter), and is then validated as written.
func (s *Scenario) applyDefaults() {
	if s.Expect == "" {
		s.Expect = ExpectPass
	}
	if s.ProfileName == "" && !s.set("profile") {
		s.ProfileName = DefaultProfile
	}
	method := func(r *Request, def string) {
		if r.Method == "" {
			r.Method = def
		}
		r.Method = strings.ToUpper(r.Method)
	}
	for i := range s.Setup {
		method(&s.Setup[i], "GET")
	}
	method(&s.Operation.Request, "POST")
	s.webhookDefaults()
	s.publishDefaults()
	if b := s.Operation.Before; b != nil {
		method(&b.Request, "GET")
	}
	if s.Load.MaxInFlight == 0 && !s.set("load.max_in_flight") {
		s.Load.MaxInFlight = DefaultMaxInFlight
	}
	if s.Load.RequestTimeout == 0 && !s.set("load.request_timeout") {
		s.Load.RequestTimeout = Duration(DefaultRequestTimeout)
	}
	s.stagesDefaults()
	r := &s.Retry
	if r.Attempts == 0 && !s.set("retry.attempts") {
		r.Attempts = DefaultAttempts
	}
	if r.Backoff.Max == 0 && !s.set("retry.backoff.max") {
		r.Backoff.Max = Duration(DefaultBackoffMax)
	}
	if r.Backoff.Initial == 0 && !s.set("retry.backoff.initial") {
		r.Backoff.Initial = min(Duration(DefaultBackoffInitial), r.Backoff.Max)
	}
	if r.Backoff.Multiplier == 0 && !s.set("retry.backoff.multiplier") {
		r.Backoff.Multiplier = DefaultBackoffMultiplier
	}
	if r.Backoff.Jitter == 0 && !s.set("retry.backoff.jitter") {
		r.Backoff.Jitter = DefaultBackoffJitter
	}
	if r.On == nil && !s.set("retry.on") {
		r.On = DefaultRetryOn()
	}
	if s.Retention == 0 && !s.set("retention") {
		s.Retention = Duration(DefaultRetention)
	}
	if rp := s.Operation.Replay; rp != nil && rp.Count == 0 && !s.set("operation.replay.count") {
		rp.Count = DefaultReplayCount
	}
	if rp := s.Operation.Replay; rp != nil && rp.Body != "" && rp.ThenOriginal == nil {
		yes := true
		rp.ThenOriginal = &yes
	}
	if s.Quiet == 0 && !s.set("quiet") {
		s.Quiet = Duration(DefaultQuiet)
	}
	if s.SettleGrace == 0 && !s.set("settle_grace") {
		s.SettleGrace = Duration(DefaultSettleGrace)
	}
	for i := range s.Faults {
		f := &s.Faults[i]
		if f.Kind == faults.KindDuplicate && f.Copies == 0 && !s.set(fmt.Sprintf("faults[%d].copies", i)) {
			f.Copies = DefaultDuplicateCopies
		}
	}
	for i := range s.Oracles {
		o := &s.Oracles[i]
		if st := o.State; st != nil {
			if st.Concurrency == 0 && !s.set(fmt.Sprintf("oracles[%d].state.concurrency", i)) {
				st.Concurrency = DefaultOracleConcurrency
			}
			if st.PerObject != nil {
				method(&st.PerObject.Request, "GET")
			}
		}
		if e := o.Effects; e != nil {
			if e.Concurrency == 0 && !s.set(fmt.Sprintf("oracles[%d].effects.concurrency", i)) {
				e.Concurrency = DefaultOracleConcurrency
			}
			if e.PerKey != nil {
				method(&e.PerKey.Request, "GET")
			}
			if e.Across == "" && !s.set(fmt.Sprintf("oracles[%d].effects.across", i)) {
				e.Across = AcrossFirst
			}
			if b := e.Bulk; b != nil {
				method(&b.Request, "GET")
				if b.MaxPages == 0 && (b.Next != nil || b.Cursor != nil) && !s.set(fmt.Sprintf("oracles[%d].effects.bulk.max_pages", i)) {
					b.MaxPages = DefaultMaxPages
				}
			}
		}
		if o.Counter != nil {
			method(&o.Counter.Request, "GET")
		}
		if a := o.Account; a != nil {
			method(&a.Request, "GET")
			method(&a.Applied.Request, "GET")
		}
	}
}
