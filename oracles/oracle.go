package oracles

import (
	"github.com/idemcheck/idemcheck/internal/dsn"

	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/redact"
)

// Oracle reads the real state of the target.
type Oracle interface {
	// Name is the oracle's name, as invariants refer to it.
	Name() string
	// Before takes the reading before the load (counter, account); it is a
	// no-op for effects.
	Before(ctx context.Context) error
	// Observe reads the state after the run for the keys of h.
	Observe(ctx context.Context, h *history.History) (*history.Reading, error)
}

// Observe runs o.Observe and folds a failure into the observation's Err,
// so that the checks reading it are Unknown with that reason. It never
// returns nil.
func Observe(ctx context.Context, o Oracle, h *history.History) *history.Reading {
	obs, err := o.Observe(ctx, h)
	switch {
	case err != nil:
		return &history.Reading{Oracle: o.Name(), Err: err.Error()}
	case obs == nil:
		return &history.Reading{Oracle: o.Name(), Err: "the oracle returned no observation"}
	}
	return obs
}

// RequestFunc builds an oracle's request; key is the op key for per-key
// reads and "" for the others. The request may carry credentials: oracles
// never put a header into an error.
type RequestFunc func(ctx context.Context, key string) (*http.Request, error)

// ReadError is an oracle read that failed: the request could not be made,
// the answer was not 2xx, or its body did not hold what the oracle looks
// for. It names the request's method and URL (passwords and secret query
// parameters removed), the status, and Err, which quotes the start of the
// body. It never holds a request header.
type ReadError struct {
	Oracle string
	Method string
	URL    string
	Status int // 0 when no answer was received
	Err    error

	// secrets are the credentials the request sent, scrubbed from the
	// message: a server may reflect them in what Err quotes.
	secrets *redact.Secrets
}

func (e *ReadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "oracle %s: %s %s", e.Oracle, e.Method, e.URL)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": status %d", e.Status)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return e.secrets.Scrub(b.String())
}

func (e *ReadError) Unwrap() error { return e.Err }

// maxBody bounds an oracle's answer: a bulk answer of half a million keys
// fits; a longer list is read in pages (next-link or cursor). An answer
// past it fails the reading, read no further (not at all when its
// Content-Length says so).
const maxBody = 32 << 20

// maxKeyBody bounds the answer of a per-key read, which holds one count:
// they are read several at a time, and must not hold maxBody each.
const maxKeyBody = 1 << 20

// answer is a 2xx answer to an oracle request.
type answer struct {
	oracle, method, url string
	status              int
	body                []byte
	secrets             *redact.Secrets // what the request sent; nil for none
}

// fail wraps err as a ReadError about this answer.
func (a *answer) fail(err error) error {
	return &ReadError{Oracle: a.oracle, Method: a.method, URL: a.url, Status: a.status, Err: err, secrets: a.secrets}
}

// requestSecrets are the credentials req sends: its credential headers'
// values, its URL's password and the values of its query parameters whose
// names say they are secret (private_token=, api_key=). Other query values
// (limit=100, the key) are data the answer may rightly hold.
func requestSecrets(req *http.Request) *redact.Secrets {
	var s redact.Secrets
	for name, vs := range req.Header {
		s.AddHeader(name, vs...)
	}
	if req.URL != nil {
		if p, ok := req.URL.User.Password(); ok {
			s.Add(p)
		}
		for name, vs := range req.URL.Query() {
			if redact.SecretHeader(name) || strings.EqualFold(name, "key") || strings.EqualFold(name, "sig") {
				s.Add(vs...)
			}
		}
	}
	return &s
}

// fetch makes the request build returns for key and reads a 2xx answer,
// at most maxKeyBody bytes of it for a per-key read (key != ""), maxBody
// otherwise.
func fetch(ctx context.Context, c *http.Client, oracle string, build RequestFunc, key string) (*answer, error) {
	if build == nil {
		return nil, fmt.Errorf("oracle %s: no request configured", oracle)
	}
	req, err := build(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("oracle %s: building the request: %w", oracle, err)
	}
	a := &answer{oracle: oracle, method: req.Method, url: redactURL(req.URL), secrets: requestSecrets(req)}
	if a.method == "" {
		a.method = http.MethodGet
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is already named, redacted
		}
		return nil, a.fail(err)
	}
	defer resp.Body.Close()
	a.status = resp.StatusCode
	limit := int64(maxBody)
	if key != "" {
		limit = maxKeyBody
	}
	body, err := readCapped(resp, limit)
	if err != nil {
		return nil, a.fail(err)
	}
	a.body = body
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Scrubbed before the snippet cuts it: no part of a reflected
		// secret survives at the cut.
		head := body[:min(len(body), snippetLen+4<<10)]
		return nil, a.fail(fmt.Errorf("%w: %s", ErrStatus, snippet([]byte(a.secrets.Scrub(string(head))))))
	}
	return a, nil
}

// readCapped reads resp's body, at most limit bytes: in one buffer of the
// announced size, or in blocks joined once at the end, so that reading
// never holds more than twice what was read (a buffer grown by doubling
// leaves its halves behind). An answer over limit is an error, found
// before reading when its Content-Length says so.
func readCapped(resp *http.Response, limit int64) ([]byte, error) {
	tooLarge := fmt.Errorf("answer larger than %d bytes", limit)
	if resp.ContentLength > limit {
		return nil, tooLarge
	}
	r := io.LimitReader(resp.Body, limit+1)
	if n := resp.ContentLength; n >= 0 {
		buf := make([]byte, n+1) // one more, to see a body longer than announced
		m, err := io.ReadFull(r, buf)
		switch {
		case err == io.ErrUnexpectedEOF || err == io.EOF:
			return buf[:m], nil
		case err != nil:
			return nil, fmt.Errorf("reading the answer: %w", err)
		}
		return nil, fmt.Errorf("reading the answer: longer than its Content-Length %d", n)
	}
	const block = 256 << 10
	var blocks [][]byte
	total := 0
	for {
		b := make([]byte, block)
		m, err := io.ReadFull(r, b)
		total += m
		blocks = append(blocks, b[:m])
		if int64(total) > limit {
			return nil, tooLarge
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the answer: %w", err)
		}
	}
	if len(blocks) == 1 {
		return blocks[0], nil
	}
	return bytes.Join(blocks, nil), nil
}

// secretParams is how oracle URLs and connection strings are redacted:
// every query and key=value DSN value is masked but the connection
// parameters redact.ConnParams names and the idempotency key, which the
// evidence needs and which are never secrets.
var secretParams = redact.Options{Keep: append([]string{"idempotency_key", "idempotency-key", "idempotencykey"}, redact.ConnParams...)}

// redactURL is u without its password, its query values (but those
// secretParams keeps) and its fragment.
func redactURL(u *url.URL) string {
	return secretParams.URL(u)
}

// lowerScheme is raw with the scheme of a scheme://… URL in lower case, as
// the drivers want it: Postgres://… and REDIS://… are the URLs they name.
func lowerScheme(raw string) string { return dsn.LowerScheme(raw) }

// ErrBadURL: a database or Redis URL that does not parse. The driver's own
// message is left out, since it quotes the URL with its password.
var ErrBadURL = errors.New("cannot parse the URL: check its form (scheme://user:password@host:port/db), escaping special characters in the password with %XX")

// ErrNoBefore: an oracle that compares before and after was observed
// without a reading before the run.
var ErrNoBefore = errors.New("no reading was taken before the run")

// beforeReading keeps an oracle's reading from before the run.
type beforeReading[T any] struct {
	mu     sync.Mutex
	before *T
}

// takeBefore reads with read and keeps the value.
func (r *beforeReading[T]) takeBefore(ctx context.Context, read func(context.Context) (T, error)) error {
	v, err := read(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.before = &v
	r.mu.Unlock()
	return nil
}

// readAfter reads with read after the run and returns both readings. It
// fails when no reading was kept before.
func (r *beforeReading[T]) readAfter(ctx context.Context, oracle string, read func(context.Context) (T, error)) (before, after T, err error) {
	r.mu.Lock()
	b := r.before
	r.mu.Unlock()
	if b == nil {
		return before, after, fmt.Errorf("oracle %s: %w", oracle, ErrNoBefore)
	}
	if after, err = read(ctx); err != nil {
		return before, after, err
	}
	return *b, after, nil
}

// counterReading keeps a counter oracle's reading from before the run.
type counterReading struct {
	beforeReading[int64]
}

// observe reads the counter after the run with read, and returns both
// readings.
func (c *counterReading) observe(ctx context.Context, oracle string, read func(context.Context) (int64, error)) (*history.Reading, error) {
	before, after, err := c.readAfter(ctx, oracle, read)
	if err != nil {
		return nil, err
	}
	return &history.Reading{Oracle: oracle, Kind: history.KindCounter, Before: &before, After: &after}, nil
}

// effectsObservation is the observation of effects counted by an oracle,
// or err.
//
// A negative count is no count of effects: the reading fails (so the
// checks that need it are inconclusive) rather than accuse or clear the
// target with a number that cannot be.
func effectsObservation(oracle string, effects map[string]int, err error) (*history.Reading, error) {
	if err != nil {
		return nil, err
	}
	for k, n := range effects {
		if n < 0 {
			return nil, fmt.Errorf("oracle %s: key %q has %d effects, %w: a count cannot be negative (does the path select a count?)", oracle, k, n, ErrType)
		}
	}
	return &history.Reading{Oracle: oracle, Kind: history.KindEffects, Effects: effects}, nil
}

// distinctKeys returns the keys of h's ops, each once, in op order (in
// the order they ended when the history is spilled to disk).
func distinctKeys(h *history.History) ([]string, error) {
	if h == nil {
		return nil, nil
	}
	seen := make(map[string]bool, len(h.Ops))
	keys := make([]string, 0, len(h.Ops))
	err := history.EachOp(h, func(op history.Op) error {
		if !seen[op.Key] {
			seen[op.Key] = true
			keys = append(keys, op.Key)
		}
		return nil
	})
	return keys, err
}

// keySet is the set of keys; nil for nil keys (no history: every key is
// kept).
func keySet(keys []string) map[string]bool {
	if keys == nil {
		return nil
	}
	used := make(map[string]bool, len(keys))
	for _, k := range keys {
		used[k] = true
	}
	return used
}

// concurrency is the number of workers for n items: conc, default 8, at
// most n.
func concurrency(conc, n int) int {
	if conc <= 0 {
		conc = 8
	}
	return max(min(conc, n), 1)
}

// countEach counts the effects of every key with count, conc keys at a
// time, leaving out keys with no effect.
func countEach(ctx context.Context, oracle string, keys []string, conc int, count func(ctx context.Context, key string) (int64, error)) (map[string]int, error) {
	counts := make([]int64, len(keys))
	err := parallel(ctx, oracle, len(keys), conc, func(ctx context.Context, i int) error {
		n, err := count(ctx, keys[i])
		counts[i] = n
		return err
	})
	if err != nil {
		return nil, err
	}
	return effectsOf(keys, counts), nil
}

// parallel calls fn for every i in [0, n), conc at a time. The first error
// cancels the others and is returned; so is ctx's end, named after oracle.
func parallel(ctx context.Context, oracle string, n, conc int, fn func(ctx context.Context, i int) error) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next  atomic.Int64
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	for range min(conc, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := parent.Err(); err != nil {
		return fmt.Errorf("oracle %s: %w", oracle, err)
	}
	return nil
}

// effectsOf maps keys[i] to counts[i], leaving out keys with no effect.
func effectsOf(keys []string, counts []int64) map[string]int {
	effects := make(map[string]int)
	for i, c := range counts {
		if c != 0 {
			effects[keys[i]] = int(c)
		}
	}
	return effects
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
