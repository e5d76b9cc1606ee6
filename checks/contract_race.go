package checks

import (
	"slices"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// C06, the concurrent-same-key probe, runs adaptively: RaceRounds rounds of
// RaceCopies identical copies released together, and one more round for
// each round that asks for it (RaceRound), up to RaceMaxRounds.
const (
	RaceRounds    = 5
	RaceCopies    = 10
	RaceMaxRounds = 15
)

// RaceRound reports whether a round of concurrent copies of one request
// asks for another round: it decided nothing (no copy answered 2xx, a copy
// got no answer, or every other copy was sent after the winner's answer
// came, so that none overlapped it), or it nearly raced (a copy sent while
// the winner was in flight got the winner's resource: the server took it
// just after the winner finished, not while it ran). A round with a
// finding (two resources, a 5xx, a hang) asks for none: it found what more
// rounds look for.
func RaceRound(copies []*history.Attempt) bool {
	var winner *history.Attempt
	ids := map[string]bool{}
	undecided := false
	for _, e := range copies {
		switch {
		case is5xx(e) || e.Expired:
			return false
		case e.Outcome != history.OK:
			undecided = true
		case e.Acked():
			ids[identity(e)] = true
			if winner == nil || e.End < winner.End {
				winner = e
			}
		}
	}
	switch {
	case len(ids) > 1:
		return false
	case undecided || winner == nil:
		return true
	}
	overlapped := false
	for _, e := range copies {
		if e == winner || e.Start >= winner.End {
			continue
		}
		overlapped = true
		if e.Acked() {
			return true
		}
	}
	return !overlapped && len(copies) > 1
}

// Spread is how far apart the copies reached the server: the spread of
// their last bytes when they were held to them (Attempt.Synced), else of
// their sends (the latest Start less the earliest). synced says which.
func Spread(copies []*history.Attempt) (spread time.Duration, synced bool) {
	if len(copies) == 0 {
		return 0, false
	}
	if s := copies[0].Synced; s > 0 {
		return s, true
	}
	lo, hi := copies[0].Start, copies[0].Start
	for _, e := range copies[1:] {
		lo, hi = min(lo, e.Start), max(hi, e.Start)
	}
	return hi - lo, false
}

// raceNotes says how C06's rounds went: how many asked for another, and
// how far apart the copies' sends were.
func (c *contractRun) raceNotes(rounds [][]*history.Attempt) {
	more, held := 0, 0
	var spreads []time.Duration
	for _, r := range rounds {
		if RaceRound(r) {
			more++
		}
		s, synced := Spread(r)
		spreads = append(spreads, s)
		if synced {
			held++
		}
	}
	if more > 0 {
		c.note("%d of %d rounds were inconclusive or near a race (each earns one more round, up to %d)", more, len(rounds), RaceMaxRounds)
	}
	if len(spreads) == 0 {
		return
	}
	slices.Sort(spreads)
	mid, widest := round(spreads[len(spreads)/2]), round(spreads[len(spreads)-1])
	switch held {
	case len(rounds):
		c.note("the copies reached the server within %v (median round), %v (widest): each held to its last byte, the last bytes written together", mid, widest)
	case 0:
		c.note("the copies' sends spread over %v (median round), %v (widest)", mid, widest)
	default:
		c.note("the copies reached the server within %v (median round), %v (widest); %d of %d rounds held to their last byte, the others released by a barrier", mid, widest, held, len(rounds))
	}
}

// round shortens a duration for a summary.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
