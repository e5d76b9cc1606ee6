package oracles

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/history"
)

var (
	_ Oracle = (*HTTPEffects)(nil)
	_ Oracle = (*HTTPCounter)(nil)
	_ Oracle = (*HTTPAccount)(nil)
)

// HTTPEffects counts the effects of each key over HTTP, either with one GET
// per key of the history (PerKey) or with one bulk GET, perhaps over several
// pages (Bulk, preferred when both are set). Its zero value with a request
// set is usable; a nil Client is http.DefaultClient.
type HTTPEffects struct {
	OracleName string
	Client     *http.Client
	// PerKey builds the read of one key. Value selects in its answer a
	// number (the count) or an array (its length is the count).
	PerKey RequestFunc
	// Bulk builds the read of every key (of its first page). Value selects
	// in its answer an object mapping key to count, an array of keys with
	// one element per effect, or (a path that can select several nodes,
	// like "$.data[*].idempotency_key") a node list of keys, one node per
	// effect. The counts of every page are added up.
	Bulk RequestFunc
	// Value is an RFC 9535 JSONPath; "" is the whole answer ("$").
	Value string
	// Pages says how Bulk reads the pages after the first; the zero value
	// reads one page.
	Pages Pages
	// Concurrency bounds the per-key reads in flight; default 8.
	Concurrency int

	prior allKeys // a bulk read of every key before the load
}

// Name returns the oracle's name.
func (o *HTTPEffects) Name() string { return o.OracleName }

// Before reads every key's effects with a bulk oracle, so that Observe
// can leave out what the run's keys already had and name keys the run
// never sent that gained effects; a per-key oracle cannot list keys and
// reads nothing before.
func (o *HTTPEffects) Before(ctx context.Context) error {
	if o.Bulk == nil {
		return nil
	}
	p, err := compileValue(o.OracleName, o.Value)
	if err != nil {
		return err
	}
	all, err := o.bulk(ctx, nil, p)
	if err != nil {
		return err
	}
	o.prior.keep(all)
	return nil
}

// Observe counts the effects of every key of h. Keys with no effect are left
// out of the observation; with Bulk, so are keys no op of h used.
func (o *HTTPEffects) Observe(ctx context.Context, h *history.History) (*history.Reading, error) {
	p, err := compileValue(o.OracleName, o.Value)
	if err != nil {
		return nil, err
	}
	keys, m, err := effectKeys(h)
	if err != nil {
		return nil, err
	}
	var effects map[string]int
	switch {
	case o.Bulk != nil:
		all, err := o.bulk(ctx, nil, p)
		if err != nil {
			return nil, err
		}
		return m.fold(o.prior.reading(o.OracleName, all, keys))
	case o.PerKey != nil:
		effects, err = countEach(ctx, o.OracleName, keys, concurrency(o.Concurrency, len(keys)),
			func(ctx context.Context, key string) (int64, error) { return o.readKey(ctx, key, p) })
	default:
		return nil, fmt.Errorf("oracle %s: neither a per-key nor a bulk request is configured", o.OracleName)
	}
	return m.fold(effectsObservation(o.OracleName, effects, err))
}

func (o *HTTPEffects) readKey(ctx context.Context, key string, p *path) (int64, error) {
	a, err := fetch(ctx, o.Client, o.OracleName, o.PerKey, key)
	if err != nil {
		return 0, err
	}
	v, err := selectBody(a, p)
	if err != nil {
		return 0, err
	}
	if arr, ok := v.([]any); ok {
		return int64(len(arr)), nil
	}
	n, err := toInt64(v, p)
	if err != nil {
		return 0, a.fail(fmt.Errorf("%w or an array%s", err, countFields(v, p)))
	}
	return n, nil
}

// countFields suggests, when a per-key read's value is an object, the
// paths of its fields that could hold the count: its numbers and arrays
// ("; a count may be at $.count or $.charges").
func countFields(v any, p *path) string {
	obj, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	base := "$"
	if p != nil && p.src != "" {
		base = strings.TrimSuffix(p.src, ".")
	}
	var paths []string
	for k, x := range obj {
		switch x.(type) {
		case json.Number, float64, int, int64, []any:
			if jsonName.MatchString(k) {
				paths = append(paths, base+"."+k)
			}
		}
	}
	if len(paths) == 0 {
		return ""
	}
	slices.Sort(paths)
	return "; a count may be at " + strings.Join(paths, " or ")
}

// jsonName is a field name a dotted JSONPath can name.
var jsonName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (o *HTTPEffects) bulk(ctx context.Context, keys []string, p *path) (map[string]int, error) {
	used := keySet(keys)
	effects := make(map[string]int)
	err := o.Pages.each(ctx, o.Client, o.OracleName, o.Bulk, func(a *answer, doc any) error {
		return countPage(a, doc, p, used, effects)
	})
	if err != nil {
		return nil, err
	}
	for k, n := range effects {
		if n == 0 {
			delete(effects, k)
		}
	}
	return effects, nil
}

// countPage adds the effects one bulk answer holds to effects: p selects
// an object of counts by key or an array of keys, or, a non-singular path,
// a node list of keys. Keys not in used (unless nil) are left out.
func countPage(a *answer, doc any, p *path, used map[string]bool, effects map[string]int) error {
	count := func(k string, n int) {
		if used == nil || used[k] {
			effects[k] += n
		}
	}
	if p.Query().Singular() == nil {
		for i, e := range p.Select(doc) {
			k, ok := keyOf(e)
			if !ok {
				return a.fail(fmt.Errorf("%s node %d is %s, %w: want a key (a string)", p, i, describe(e), ErrType))
			}
			count(k, 1)
		}
		return nil
	}
	v, err := selectOne(doc, p, a.body)
	if err != nil {
		return a.fail(err)
	}
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if used != nil && !used[k] {
				continue
			}
			n, err := toInt64(c, stringer(fmt.Sprintf("%s[%q]", p, k)))
			if err != nil {
				return a.fail(err)
			}
			count(k, int(n))
		}
	case []any:
		for i, e := range x {
			k, ok := keyOf(e)
			if !ok {
				return a.fail(fmt.Errorf("%s[%d] is %s, %w: want a key (a string)", p, i, describe(e), ErrType))
			}
			count(k, 1)
		}
	default:
		return a.fail(fmt.Errorf("%s is %s, %w: want an object of counts by key, an array of keys, or a path like $.data[*].key", p, describe(v), ErrType))
	}
	return nil
}

// keyOf reads a key from a selected node: a string, or a number (an op id).
func keyOf(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	}
	return "", false
}

// HTTPCounter reads one number before and after the run (a like count).
// Its zero value with Request set is usable; a nil Client is
// http.DefaultClient. It must not be copied after first use.
type HTTPCounter struct {
	OracleName string
	Client     *http.Client
	Request    RequestFunc
	// Value is an RFC 9535 JSONPath to the number; "" is the whole answer.
	Value string

	reading counterReading
}

// Name returns the oracle's name.
func (o *HTTPCounter) Name() string { return o.OracleName }

// Before reads the counter before the load.
func (o *HTTPCounter) Before(ctx context.Context) error {
	return o.reading.takeBefore(ctx, o.read)
}

// Observe reads the counter after the run. It fails when Before was not
// called or failed.
func (o *HTTPCounter) Observe(ctx context.Context, _ *history.History) (*history.Reading, error) {
	return o.reading.observe(ctx, o.OracleName, o.read)
}

func (o *HTTPCounter) read(ctx context.Context) (int64, error) {
	p, err := compileValue(o.OracleName, o.Value)
	if err != nil {
		return 0, err
	}
	a, err := fetch(ctx, o.Client, o.OracleName, o.Request, "")
	if err != nil {
		return 0, err
	}
	return selectInt(a, p)
}

// HTTPAccount reads an account for conditional_update: its balance and
// version before and after the run, and the operations applied to it during
// the run (the applied list after the run, minus the entries it already held
// before). Its zero value with the requests and paths set is usable; a nil
// Client is http.DefaultClient. It must not be copied after first use.
type HTTPAccount struct {
	OracleName string
	Client     *http.Client
	// Request reads the account; Balance and Version are JSONPaths into
	// its answer.
	Request          RequestFunc
	Balance, Version string
	// Applied reads the list of applied operations; List selects the
	// array, Key and Amount are JSONPaths relative to each element
	// (e.g. "$.op_id", "$.amount").
	Applied           RequestFunc
	List, Key, Amount string

	reading beforeReading[*accountReading]
}

type accountReading struct {
	balance, version int64
	applied          []history.Applied
}

// Name returns the oracle's name.
func (o *HTTPAccount) Name() string { return o.OracleName }

// Before reads the account and its applied list before the load.
func (o *HTTPAccount) Before(ctx context.Context) error {
	return o.reading.takeBefore(ctx, o.read)
}

// Observe reads the account after the run. It fails when Before was not
// called or failed.
func (o *HTTPAccount) Observe(ctx context.Context, _ *history.History) (*history.Reading, error) {
	b, r, err := o.reading.readAfter(ctx, o.OracleName, o.read)
	if err != nil {
		return nil, err
	}
	old := make(map[history.Applied]int, len(b.applied))
	for _, e := range b.applied {
		old[e]++
	}
	applied := make([]history.Applied, 0, len(r.applied))
	for _, e := range r.applied {
		if old[e] > 0 {
			old[e]--
			continue
		}
		applied = append(applied, e)
	}
	return &history.Reading{Oracle: o.OracleName, Kind: history.KindAccount, Account: &history.Account{
		BalanceBefore: b.balance, BalanceAfter: r.balance,
		VersionBefore: b.version, VersionAfter: r.version,
		Applied: applied,
	}}, nil
}

func (o *HTTPAccount) read(ctx context.Context) (*accountReading, error) {
	paths, err := o.paths()
	if err != nil {
		return nil, err
	}
	if o.Applied == nil {
		return nil, fmt.Errorf("oracle %s: no request for the applied list", o.OracleName)
	}
	a, err := fetch(ctx, o.Client, o.OracleName, o.Request, "")
	if err != nil {
		return nil, err
	}
	doc, err := decode(a.body)
	if err != nil {
		return nil, a.fail(err)
	}
	r := &accountReading{}
	if r.balance, err = selectIntDoc(a, doc, paths[0]); err != nil {
		return nil, err
	}
	if r.version, err = selectIntDoc(a, doc, paths[1]); err != nil {
		return nil, err
	}
	if r.applied, err = o.readApplied(ctx, paths[2], paths[3], paths[4]); err != nil {
		return nil, err
	}
	return r, nil
}

// paths compiles Balance, Version, List, Key and Amount.
func (o *HTTPAccount) paths() ([5]*path, error) {
	var out [5]*path
	for i, f := range []struct{ name, path string }{
		{"balance", o.Balance}, {"version", o.Version},
		{"applied list", o.List}, {"applied key", o.Key}, {"applied amount", o.Amount},
	} {
		if f.path == "" {
			return out, fmt.Errorf("oracle %s: no JSONPath for the %s", o.OracleName, f.name)
		}
		p, err := compile(f.path)
		if err != nil {
			return out, fmt.Errorf("oracle %s: %s: %w", o.OracleName, f.name, err)
		}
		out[i] = p
	}
	return out, nil
}

func (o *HTTPAccount) readApplied(ctx context.Context, list, key, amount *path) ([]history.Applied, error) {
	a, err := fetch(ctx, o.Client, o.OracleName, o.Applied, "")
	if err != nil {
		return nil, err
	}
	v, err := selectBody(a, list)
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, a.fail(fmt.Errorf("%s is %s, %w: want an array", list, describe(v), ErrType))
	}
	out := make([]history.Applied, 0, len(arr))
	for i, e := range arr {
		kv, err := selectOne(e, key, nil)
		if err != nil {
			return nil, a.fail(fmt.Errorf("%s[%d]: %w", list, i, err))
		}
		var k string
		switch x := kv.(type) {
		case string:
			k = x
		case json.Number:
			k = x.String()
		default:
			return nil, a.fail(fmt.Errorf("%s[%d]: %s is %s, %w: want a key", list, i, key, describe(kv), ErrType))
		}
		av, err := selectOne(e, amount, nil)
		if err != nil {
			return nil, a.fail(fmt.Errorf("%s[%d]: %w", list, i, err))
		}
		n, err := toInt64(av, amount)
		if err != nil {
			return nil, a.fail(fmt.Errorf("%s[%d]: %w", list, i, err))
		}
		out = append(out, history.Applied{Key: k, Amount: n})
	}
	return out, nil
}

// compileValue compiles an oracle's value path; "" is the whole answer.
func compileValue(oracle, path string) (*path, error) {
	if path == "" {
		path = "$"
	}
	p, err := compile(path)
	if err != nil {
		return nil, fmt.Errorf("oracle %s: %w", oracle, err)
	}
	return p, nil
}

// selectBody decodes a's body and selects the one node p names.
func selectBody(a *answer, p *path) (any, error) {
	doc, err := decode(a.body)
	if err != nil {
		return nil, a.fail(err)
	}
	v, err := selectOne(doc, p, a.body)
	if err != nil {
		return nil, a.fail(err)
	}
	return v, nil
}

func selectInt(a *answer, p *path) (int64, error) {
	doc, err := decode(a.body)
	if err != nil {
		return 0, a.fail(err)
	}
	return selectIntDoc(a, doc, p)
}

func selectIntDoc(a *answer, doc any, p *path) (int64, error) {
	v, err := selectOne(doc, p, a.body)
	if err != nil {
		return 0, a.fail(err)
	}
	n, err := toInt64(v, p)
	if err != nil {
		return 0, a.fail(err)
	}
	return n, nil
}

// stringer is a string that names a path in errors.
type stringer string

func (s stringer) String() string { return string(s) }
