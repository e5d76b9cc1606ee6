package scenarios

import (
	"slices"
	"strconv"
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

// Profile is what a profile expects of an API, as plain data: lists of
// statuses, each an exact status ("409") or a class ("4xx"), answered to a
// request whose key is still in flight (InFlight), to another payload under
// a used key (Mismatch) and to a request without a key (MissingKey, where
// "2xx" means "processed as a new request, without dedup"). Its fields are
// those of history.Profile, in the same order, so
// history.Profile(sc.Profile()) converts it.
type Profile struct {
	Name       string   `json:"name,omitempty"`
	InFlight   []string `json:"in_flight,omitempty"`
	Mismatch   []string `json:"mismatch,omitempty"`
	MissingKey []string `json:"missing_key,omitempty"`
}

// Statuses a profile lists.
const (
	// AnyClientError is any 4xx.
	AnyClientError = "4xx"
	// Processed is any 2xx: the request was processed, as a new one.
	Processed = "2xx"
)

// StatusIn reports whether status is one of list: an exact status
// ("409") or a class ("4xx").
func StatusIn(list []string, status int) bool {
	code := strconv.Itoa(status)
	for _, s := range list {
		if s == code || (len(s) == 3 && s[1:] == "xx" && len(code) == 3 && s[0] == code[0]) {
			return true
		}
	}
	return false
}

// profiles is every profile, by name (docs/scenario.md, "Profiles"); each
// call builds fresh lists.
var profiles = map[string]func() Profile{
	ProfileDraft: func() Profile {
		return Profile{Name: ProfileDraft, InFlight: []string{"409"}, Mismatch: []string{"422"}, MissingKey: []string{"400"}}
	},
	ProfileStripe: func() Profile {
		return Profile{Name: ProfileStripe, InFlight: []string{"409"}, Mismatch: []string{"400"}, MissingKey: []string{Processed}}
	},
	ProfileBrandur: func() Profile {
		return Profile{Name: ProfileBrandur, InFlight: []string{"409"}, Mismatch: []string{"409"}, MissingKey: []string{"400"}}
	},
	ProfilePowertools: func() Profile {
		return Profile{Name: ProfilePowertools, InFlight: []string{AnyClientError}, Mismatch: []string{AnyClientError}, MissingKey: []string{Processed}}
	},
	ProfileLenient: func() Profile {
		return Profile{Name: ProfileLenient, InFlight: []string{AnyClientError}, Mismatch: []string{AnyClientError}, MissingKey: []string{AnyClientError}}
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
func LookupProfile(name string) (p Profile, ok bool) {
	f, ok := profiles[name]
	if !ok {
		return Profile{}, false
	}
	return f(), true
}

// Profile returns the scenario's resolved profile: the one profile names,
// DefaultProfile when it names none. A scenario that failed validation on
// an unknown profile gets DefaultProfile.
func (s *Scenario) Profile() Profile {
	if p, ok := LookupProfile(s.ProfileName); ok {
		return p
	}
	p, _ := LookupProfile(DefaultProfile)
	return p
}
