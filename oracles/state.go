package oracles

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/idemcheck/idemcheck/history"
)

// HTTPState reads, for every object the history's ops update (Op.Object),
// the order of the event whose state the object holds: one GET per object
// (PerObject, built for the object), Value selecting a number in its
// answer. A 404 is an object with no state.
type HTTPState struct {
	OracleName string
	Client     *http.Client
	PerObject  RequestFunc
	// Value is an RFC 9535 JSONPath; "" is the whole answer ("$").
	Value string
	// Concurrency bounds the reads in flight; default 8.
	Concurrency int
}

// Name returns the oracle's name.
func (o *HTTPState) Name() string { return o.OracleName }

// Before reads nothing: the objects' state before the run says nothing of
// the order the run's events were applied in.
func (o *HTTPState) Before(context.Context) error { return nil }

// Observe reads the state of every object of h.
func (o *HTTPState) Observe(ctx context.Context, h *history.History) (*history.Reading, error) {
	p, err := compileValue(o.OracleName, o.Value)
	if err != nil {
		return nil, err
	}
	var objects []string
	seen := map[string]bool{}
	if err := history.EachOp(h, func(op history.Op) error {
		if op.Object != "" && !seen[op.Object] {
			seen[op.Object] = true
			objects = append(objects, op.Object)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	slices.Sort(objects)
	states := make([]int64, len(objects))
	has := make([]bool, len(objects))
	err = parallel(ctx, o.OracleName, len(objects), concurrency(o.Concurrency, len(objects)), func(ctx context.Context, i int) error {
		a, err := fetch(ctx, o.Client, o.OracleName, o.PerObject, objects[i])
		var re *ReadError
		if errors.As(err, &re) && re.Status == http.StatusNotFound {
			return nil // no state
		}
		if err != nil {
			return err
		}
		if states[i], err = selectInt(a, p); err != nil {
			return fmt.Errorf("object %s: %w", objects[i], err)
		}
		has[i] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(objects) > 1 && !slices.Contains(has, true) {
		// every object 404: more likely a wrong path than a receiver
		// that applied nothing
		return nil, fmt.Errorf("oracle %s: every one of %d objects was answered 404: is per_object's path right? (%s read none)", o.OracleName, len(objects), objects[0])
	}
	r := &history.Reading{Oracle: o.OracleName, Kind: history.KindState, States: map[string]int{}}
	for i, obj := range objects {
		if has[i] {
			r.States[obj] = int(states[i])
		}
	}
	return r, nil
}
