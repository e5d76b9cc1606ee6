package oracles

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// DefaultMaxPages is the most pages a paginated read follows when Pages
// names no bound.
const DefaultMaxPages = 1000

// ErrTooManyPages: a paginated read still had pages left after its bound.
var ErrTooManyPages = errors.New("more pages than the bound")

// Pages says how a bulk read follows its pages: Next, a JSONPath to a link
// to the next page (absolute, or relative to the page's URL), or Cursor, a
// JSONPath to a cursor sent as the query parameter Param of the first
// request. The last page has the link or cursor null, "" or absent. The
// zero value reads one page.
type Pages struct {
	Next   string
	Cursor string
	Param  string
	// MaxPages bounds the pages read; 0 is DefaultMaxPages. More pages
	// left after it is ErrTooManyPages, never a partial count.
	MaxPages int
}

// each reads the first page with build, then every following page, and
// calls page with each answer and its decoded body. The whole read is
// bounded by ctx and by MaxPages.
func (pg Pages) each(ctx context.Context, c *http.Client, oracle string, build RequestFunc, page func(a *answer, doc any) error) error {
	var next *path
	var err error
	switch {
	case pg.Next != "" && pg.Cursor != "":
		return fmt.Errorf("oracle %s: set a next link or a cursor, not both", oracle)
	case pg.Next != "":
		next, err = compile(pg.Next)
	case pg.Cursor != "":
		if pg.Param == "" {
			return fmt.Errorf("oracle %s: a cursor needs the query parameter that carries it", oracle)
		}
		next, err = compile(pg.Cursor)
	}
	if err != nil {
		return fmt.Errorf("oracle %s: %w", oracle, err)
	}
	limit := pg.MaxPages
	if limit <= 0 {
		limit = DefaultMaxPages
	}
	req, seen := build, map[string]bool{}
	var at *url.URL // the URL of the page being read
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("oracle %s: page %d: %w", oracle, n, err)
		}
		a, err := fetch(ctx, c, oracle, func(ctx context.Context, key string) (*http.Request, error) {
			r, err := req(ctx, key)
			if r != nil {
				at = r.URL
			}
			return r, err
		}, "")
		if err != nil {
			return err
		}
		doc, err := decode(a.body)
		if err != nil {
			return a.fail(err)
		}
		if err := page(a, doc); err != nil {
			return err
		}
		if next == nil {
			return nil
		}
		ref, err := pageRef(a, doc, next)
		if err != nil || ref == "" {
			return err
		}
		if seen[ref] {
			return a.fail(fmt.Errorf("%s repeats %q, read before: the pages loop", next, ref))
		}
		seen[ref] = true
		if n >= limit {
			return a.fail(fmt.Errorf("%w: %d pages read and %s still names another", ErrTooManyPages, limit, next))
		}
		if pg.Next != "" {
			req, err = nextLink(a, at, build, ref)
		} else {
			req = withParam(build, pg.Param, ref)
		}
		if err != nil {
			return err
		}
	}
}

// pageRef is the next link or cursor p selects in a page; "" on the last
// page (null, "" or absent).
func pageRef(a *answer, doc any, p *path) (string, error) {
	nodes := p.Select(doc)
	switch len(nodes) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", a.fail(fmt.Errorf("%s %w (%d nodes)", p, ErrManyMatches, len(nodes)))
	}
	switch x := nodes[0].(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	default:
		if k, ok := keyOf(x); ok {
			return k, nil
		}
		return "", a.fail(fmt.Errorf("%s is %s, %w: want a link or cursor (a string)", p, describe(x), ErrType))
	}
}

// nextLink builds the request for the page at ref, resolved against the
// URL of the page a was read from. It must stay on the first request's
// scheme and host: its headers (credentials) go with it.
func nextLink(a *answer, from *url.URL, build RequestFunc, ref string) (RequestFunc, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, a.fail(fmt.Errorf("next link %q: %w", ref, err))
	}
	return func(ctx context.Context, key string) (*http.Request, error) {
		req, err := build(ctx, key)
		if err != nil {
			return nil, err
		}
		to := from.ResolveReference(u)
		if to.Scheme != req.URL.Scheme || to.Host != req.URL.Host {
			return nil, fmt.Errorf("next link %s leaves %s://%s, where the first page was read: its credentials stay there", redactURL(to), req.URL.Scheme, req.URL.Host)
		}
		req.URL = to
		return req, nil
	}, nil
}

// withParam builds the first request with its query parameter param set
// to cursor.
func withParam(build RequestFunc, param, cursor string) RequestFunc {
	return func(ctx context.Context, key string) (*http.Request, error) {
		req, err := build(ctx, key)
		if err != nil {
			return nil, err
		}
		u := *req.URL
		q := u.Query()
		q.Set(param, cursor)
		u.RawQuery = q.Encode()
		req.URL = &u
		return req, nil
	}
}
