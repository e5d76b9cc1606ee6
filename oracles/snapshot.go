package oracles

import (
	"encoding/json"
	"fmt"

	"github.com/idemcheck/idemcheck/history"
)

// The reading an oracle takes before the load passes, in a sharded run,
// from the process that prepares the run to the one that judges it: as
// JSON in the run's manifest. SaveBefore and LoadBefore carry it; an
// oracle that reads nothing before the load saves null.

// beforeKeeper is an oracle part that keeps a reading from before the
// load.
type beforeKeeper interface {
	saveBefore() (json.RawMessage, error)
	loadBefore(json.RawMessage) error
}

// SaveBefore returns o's reading from before the load, to be given to
// LoadBefore on the same oracle in another process: null when o keeps
// none (it reads nothing before, or Before was not called).
func SaveBefore(o Oracle) (json.RawMessage, error) {
	switch o := o.(type) {
	case *SumEffects:
		parts := make([]json.RawMessage, len(o.Parts))
		for i, p := range o.Parts {
			raw, err := SaveBefore(p)
			if err != nil {
				return nil, err
			}
			parts[i] = raw
		}
		return json.Marshal(parts)
	case interface{ keeper() beforeKeeper }:
		return o.keeper().saveBefore()
	}
	return json.RawMessage("null"), nil
}

// LoadBefore gives o the reading from before the load that SaveBefore
// returned for an oracle built from the same scenario. null leaves o
// without one.
func LoadBefore(o Oracle, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	switch o := o.(type) {
	case *SumEffects:
		var parts []json.RawMessage
		if err := json.Unmarshal(raw, &parts); err != nil {
			return fmt.Errorf("oracle %s: reading before the load: %w", o.OracleName, err)
		}
		if len(parts) != len(o.Parts) {
			return fmt.Errorf("oracle %s: reading before the load has %d targets, want %d", o.OracleName, len(parts), len(o.Parts))
		}
		for i, p := range o.Parts {
			if err := LoadBefore(p, parts[i]); err != nil {
				return err
			}
		}
		return nil
	case interface{ keeper() beforeKeeper }:
		if err := o.keeper().loadBefore(raw); err != nil {
			return fmt.Errorf("reading before the load: %w", err)
		}
		return nil
	}
	return fmt.Errorf("oracle %s keeps no reading from before the load, but one was given", o.Name())
}

func (o *HTTPEffects) keeper() beforeKeeper  { return &o.prior }
func (o *SQLEffects) keeper() beforeKeeper   { return &o.prior }
func (o *HTTPCounter) keeper() beforeKeeper  { return &o.reading.beforeReading }
func (o *RedisCounter) keeper() beforeKeeper { return &o.reading.beforeReading }
func (o *SQLCounter) keeper() beforeKeeper   { return &o.reading.beforeReading }
func (o *HTTPAccount) keeper() beforeKeeper  { return accountKeeper{&o.reading} }

func (a *allKeys) saveBefore() (json.RawMessage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.before == nil {
		return json.RawMessage("null"), nil
	}
	return json.Marshal(a.before)
}

func (a *allKeys) loadBefore(raw json.RawMessage) error {
	var m map[string]int
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	a.keep(m)
	return nil
}

func (r *beforeReading[T]) saveBefore() (json.RawMessage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.before == nil {
		return json.RawMessage("null"), nil
	}
	return json.Marshal(*r.before)
}

func (r *beforeReading[T]) loadBefore(raw json.RawMessage) error {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	r.mu.Lock()
	r.before = &v
	r.mu.Unlock()
	return nil
}

// accountKeeper saves an account reading, whose fields are unexported.
type accountKeeper struct {
	r *beforeReading[*accountReading]
}

type accountJSON struct {
	Balance int64             `json:"balance"`
	Version int64             `json:"version"`
	Applied []history.Applied `json:"applied"`
}

func (k accountKeeper) saveBefore() (json.RawMessage, error) {
	k.r.mu.Lock()
	defer k.r.mu.Unlock()
	if k.r.before == nil || *k.r.before == nil {
		return json.RawMessage("null"), nil
	}
	a := *k.r.before
	return json.Marshal(accountJSON{a.balance, a.version, a.applied})
}

func (k accountKeeper) loadBefore(raw json.RawMessage) error {
	var a accountJSON
	if err := json.Unmarshal(raw, &a); err != nil {
		return err
	}
	v := &accountReading{balance: a.Balance, version: a.Version, applied: a.Applied}
	k.r.mu.Lock()
	k.r.before = &v
	k.r.mu.Unlock()
	return nil
}
