package scenarios

import (
	"slices"

	"github.com/idemcheck/idemcheck/history"
)

// The profiles a scenario can name: which statuses an API is expected to
// answer where the idempotency specifications disagree.
const (
	// ProfileDraft is the IETF draft "The Idempotency-Key HTTP Header
	// Field": 422 for another payload, 409 in flight, 400 without a key.
	ProfileDraft = "draft"
	// ProfileStripe is Stripe's API: 400 (idempotency_error) for another
	// payload, 409 in flight, a request without a key processed as new.
	ProfileStripe = "stripe"
	// ProfileBrandur is brandur's "Stripe-like idempotency keys in
	// Postgres": 409 for another payload and in flight, 400 without a key.
	ProfileBrandur = "brandur"
	// ProfilePowertools is AWS Lambda Powertools: an error (any 4xx) for
	// another payload and in flight, a request without a key processed.
	ProfilePowertools = "powertools"
	// ProfileLenient accepts any 4xx wherever a rejection is expected.
	ProfileLenient = "lenient"
)

// DefaultProfile is the profile of a scenario that names none.
const DefaultProfile = ProfileDraft

// A profile is what an API is expected to answer where the specifications
// disagree, as plain data (history.Profile): lists of statuses, each an
// exact status ("409") or a class ("4xx"), answered to a request whose key
// is still in flight (InFlight), to another payload under a used key
// (Mismatch) and to a request without a key (MissingKey, where "2xx"
// means "processed as a new request, without dedup"), and the header a
// replay carries (Replayed). history.Matches tells whether a status is in
// such a list.

// Statuses a profile lists.
const (
	// AnyClientError is any 4xx.
	AnyClientError = "4xx"
	// Processed is any 2xx: the request was processed, as a new one.
	Processed = "2xx"
)

// ReplayedHeader is the header Stripe marks a replay with
// ("Idempotent-Replayed: true").
const ReplayedHeader = "Idempotent-Replayed"

// profiles is every profile, by name (docs/scenario.md, "Profiles"); each
// call builds fresh lists.
var profiles = map[string]func() history.Profile{
	ProfileDraft: func() history.Profile {
		return history.Profile{Name: ProfileDraft, InFlight: []string{"409"}, Mismatch: []string{"422"}, MissingKey: []string{"400"}}
	},
	ProfileStripe: func() history.Profile {
		return history.Profile{Name: ProfileStripe, InFlight: []string{"409"}, Mismatch: []string{"400"}, MissingKey: []string{Processed}, Replayed: ReplayedHeader}
	},
	ProfileBrandur: func() history.Profile {
		return history.Profile{Name: ProfileBrandur, InFlight: []string{"409"}, Mismatch: []string{"409"}, MissingKey: []string{"400"}}
	},
	ProfilePowertools: func() history.Profile {
		return history.Profile{Name: ProfilePowertools, InFlight: []string{AnyClientError}, Mismatch: []string{AnyClientError}, MissingKey: []string{Processed}}
	},
	ProfileLenient: func() history.Profile {
		return history.Profile{Name: ProfileLenient, InFlight: []string{AnyClientError}, Mismatch: []string{AnyClientError}, MissingKey: []string{AnyClientError}}
	},
}

// ProfileNames lists the profiles a scenario can name, sorted.
func ProfileNames() []string {
	out := make([]string, 0, len(profiles))
	for n := range profiles {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// LookupProfile returns the profile named name; ok is false for an unknown
// name. Each call returns a fresh value the caller may change.
func LookupProfile(name string) (p history.Profile, ok bool) {
	f, ok := profiles[name]
	if !ok {
		return history.Profile{}, false
	}
	return f(), true
}

// Profile returns the scenario's resolved profile: the one profile names,
// DefaultProfile when it names none. A scenario that failed validation on
// an unknown profile gets DefaultProfile.
func (s *Scenario) Profile() history.Profile {
	if p, ok := LookupProfile(s.ProfileName); ok {
		return p
	}
	p, _ := LookupProfile(DefaultProfile)
	return p
}
