package scenarios

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/history"
)

func (c *checker) oracles() map[string]string {
	kinds := map[string]string{}
	oracleVars := Vars{Key: "00000000-0000-4000-8000-000000000000"}
	for i, o := range c.s.Oracles {
		at := fmt.Sprintf("oracles[%d]", i)
		if o.Name == "" {
			c.add(at+".name", "name is required", "name: ledger (invariants name it)")
		} else if _, dup := kinds[o.Name]; dup {
			c.add(at+".name", fmt.Sprintf("two oracles are named %q", o.Name), "give each oracle its own name")
		}
		n := 0
		kind := ""
		if e := o.Effects; e != nil {
			n++
			kind = history.KindEffects
			ea := at + ".effects"
			sources := 0
			for _, set := range []bool{e.PerKey != nil, e.Bulk != nil, e.SQL != nil, e.Redis != nil} {
				if set {
					sources++
				}
			}
			switch {
			case sources > 1:
				c.add(ea, "set one of per_key, bulk, sql or redis", "bulk reads every count in one GET; per_key makes one GET per key; sql and redis read the stores")
			case e.SQL != nil:
				c.sqlEffects(ea+".sql", e.SQL)
			case e.Redis != nil:
				c.redisEffects(ea+".redis", e.Redis)
			case e.PerKey != nil:
				c.probe(ea+".per_key", *e.PerKey, oracleVars)
				if !mentionsKey(e.PerKey.Request) {
					c.add(ea+".per_key", "per_key reads one key at a time but never sends {{.Key}}", "path: /charges?idempotency_key={{.Key}}")
				}
			case e.Bulk != nil:
				c.bulk(ea+".bulk", e.Bulk, oracleVars)
			default:
				c.add(ea, "set one of per_key, bulk, sql or redis", "bulk: {path: /charges/counts, value: $.counts}")
			}
			if e.Across != AcrossFirst && e.Across != AcrossSum {
				c.add(ea+".across", fmt.Sprintf("unknown across %q", e.Across),
					"across: first reads the first target only (one shared store); across: sum adds up what every target reads (a store per target)")
			}
			if e.Across == AcrossSum && (e.SQL != nil || e.Redis != nil) {
				c.add(ea+".across", "across: sum reads each target over HTTP; an sql or redis oracle reads one store, whatever the targets",
					"leave across out, or make one oracle per store")
			}
			if e.Concurrency < 1 {
				c.add(ea+".concurrency", fmt.Sprintf("concurrency must be at least 1, got %d", e.Concurrency), fmt.Sprintf("leave it out for %d", DefaultOracleConcurrency))
			}
		}
		if o.Counter != nil {
			n++
			kind = history.KindCounter
			ca := at + ".counter"
			switch cn := o.Counter; {
			case cn.SQL != nil && cn.Redis != nil, (cn.SQL != nil || cn.Redis != nil) && (cn.Path != "" || cn.Value != ""):
				c.add(ca, "a counter reads one source: a request (path and value), sql or redis", "split it into two oracles")
			case cn.SQL != nil:
				c.url(ca+".sql.url", cn.SQL.URL, "postgres://", `url: '{{env "LEDGER_URL"}}'`)
				if strings.TrimSpace(cn.SQL.Query) == "" {
					c.add(ca+".sql.query", "query is required", "query: SELECT likes FROM posts WHERE id = 'post-1'")
				}
			case cn.Redis != nil:
				c.url(ca+".redis.url", cn.Redis.URL, "redis://", `url: '{{env "REDIS_URL"}}'`)
				if cn.Redis.Key == "" {
					c.add(ca+".redis.key", "key is required", "key: likes:post-1")
				}
			default:
				c.probe(ca, cn.Probe, oracleVars)
			}
		}
		if st := o.State; st != nil {
			n++
			kind = history.KindState
			sa := at + ".state"
			if st.PerObject == nil {
				c.add(sa+".per_object", "per_object is required: the read of one object", "per_object: {path: '/customers/{{.Object}}', value: $.version}")
			} else {
				c.probe(sa+".per_object", *st.PerObject, Vars{Object: "obj_1"})
				if !strings.Contains(st.PerObject.Path+st.PerObject.Body, ".Object") {
					c.add(sa+".per_object", "per_object reads one object at a time but never sends {{.Object}}", "path: '/customers/{{.Object}}'")
				}
				if st.PerObject.Value == "" {
					c.add(sa+".per_object.value", "value is required: where the answer says which event the state came from", "value: $.version")
				}
			}
			if st.Concurrency < 1 {
				c.add(sa+".concurrency", fmt.Sprintf("concurrency must be at least 1, got %d", st.Concurrency), fmt.Sprintf("leave it out for %d", DefaultOracleConcurrency))
			}
		}
		if a := o.Account; a != nil {
			n++
			kind = history.KindAccount
			aa := at + ".account"
			c.request(aa, a.Request, oracleVars, false)
			c.jsonPath(aa+".balance", a.Balance)
			c.jsonPath(aa+".version", a.Version)
			c.request(aa+".applied", a.Applied.Request, oracleVars, false)
			c.jsonPath(aa+".applied.list", a.Applied.List)
			c.jsonPath(aa+".applied.key", a.Applied.Key)
			c.jsonPath(aa+".applied.amount", a.Applied.Amount)
		}
		switch {
		case n == 0:
			c.add(at, "an oracle needs one of effects, counter, account or state", "effects counts effects per key; counter reads one number; account reads a balance and version; state reads each object's")
		case n > 1:
			c.add(at, "an oracle reads one thing: set one of effects, counter, account or state", "split it into two oracles")
		}
		if o.Name != "" {
			if _, dup := kinds[o.Name]; !dup {
				kinds[o.Name] = kind
			}
		}
	}
	return kinds
}

func (c *checker) sqlEffects(at string, q *SQLEffects) {
	c.url(at+".url", q.URL, "postgres://", `url: '{{env "LEDGER_URL"}}'`)
	switch {
	case q.PerKey != "" && q.Grouped != "":
		c.add(at, "set per_key or grouped, not both", "grouped reads every count in one query")
	case q.PerKey != "":
		if !strings.Contains(q.PerKey, "$1") {
			c.add(at+".per_key", "per_key must use $1, the key", "per_key: SELECT count(*) FROM payments WHERE idempotency_key = $1")
		}
	case q.Grouped == "":
		c.add(at, "set per_key or grouped", "grouped: SELECT idempotency_key, count(*) FROM payments GROUP BY 1")
	}
}

func (c *checker) redisEffects(at string, r *RedisEffects) {
	c.url(at+".url", r.URL, "redis://", `url: '{{env "REDIS_URL"}}'`)
	switch {
	case strings.Contains(r.Pattern, "{{"):
		sample := Vars{Key: "00000000-0000-4000-8000-000000000000"}
		if len(c.s.Users) > 0 {
			sample.User = c.s.Users[0]
		}
		out, ok := c.render(at+".pattern", r.Pattern, sample)
		switch {
		case !ok || strings.Contains(out, sample.Key):
		case strings.Contains(r.Pattern, "%s"):
			// A template ({{env …}}) and a printf-style %s: in a template
			// the key is {{.Key}}.
			c.add(at+".pattern", fmt.Sprintf("pattern %q is a template (it holds {{…}}), where the key is written {{.Key}}, not %%s", r.Pattern),
				"pattern: '"+strings.Replace(r.Pattern, "%s", "{{.Key}}", 1)+"'")
		default:
			c.add(at+".pattern", fmt.Sprintf("pattern %q never uses {{.Key}}: every op would read one store key", r.Pattern), "pattern: 'idem:{{.User}}:{{.Key}}'")
		}
	case r.Pattern != "" && strings.Count(r.Pattern, "%s") != 1:
		c.add(at+".pattern", fmt.Sprintf("pattern %q must hold %%s exactly once, where the key goes", r.Pattern), "pattern: 'idem:%s', or a template: 'idem:{{.User}}:{{.Key}}'")
	}
	if r.Mode != "" && r.Mode != "exists" && r.Mode != "get" {
		c.add(at+".mode", fmt.Sprintf("unknown mode %q", r.Mode), "mode: exists (1 when the key is there) or get (the integer stored)")
	}
}

// url checks a database URL: a template reading a secret from the
// environment, or a URL with the given scheme.
func (c *checker) url(at, u, scheme, hint string) {
	switch {
	case u == "":
		c.add(at, "url is required", hint+" (secrets come from the environment)")
	case strings.Contains(u, "{{"):
		if _, err := NewText(at, u, nil); err != nil {
			c.add(at, err.Error(), hint)
		}
	case !strings.HasPrefix(u, scheme) && !(scheme == "postgres://" && strings.HasPrefix(u, "postgresql://")) && !(scheme == "redis://" && strings.HasPrefix(u, "rediss://")):
		c.add(at, fmt.Sprintf("url must start with %s", scheme), hint)
	}
}

func mentionsKey(r Request) bool {
	if strings.Contains(r.Path, ".Key") || strings.Contains(r.Body, ".Key") {
		return true
	}
	for _, v := range r.Headers {
		if strings.Contains(v, ".Key") {
			return true
		}
	}
	return false
}

// bulk checks a bulk effects read and its pagination.
func (c *checker) bulk(at string, b *BulkProbe, v Vars) {
	c.probe(at, b.Probe, v)
	switch {
	case b.Next != nil && b.Cursor != nil:
		c.add(at, "set next or cursor, not both", "next follows a link to the next page; cursor sends a cursor as a query parameter", at+".next", at+".cursor")
	case b.Next != nil:
		c.jsonPath(at+".next.path", b.Next.Path)
	case b.Cursor != nil:
		c.jsonPath(at+".cursor.path", b.Cursor.Path)
		if strings.TrimSpace(b.Cursor.Param) == "" {
			c.add(at+".cursor.param", "param is required: the query parameter that carries the cursor", "cursor: {path: $.next_cursor, param: cursor}")
		}
	default:
		if c.s.set(at + ".max_pages") {
			c.add(at+".max_pages", "max_pages bounds pagination, but neither next nor cursor is set", "next: {path: $.next_page_url}, or remove max_pages")
		}
		return
	}
	if b.MaxPages < 1 {
		c.add(at+".max_pages", fmt.Sprintf("max_pages must be at least 1, got %d", b.MaxPages), fmt.Sprintf("leave it out for %d", DefaultMaxPages))
	}
}

func (c *checker) probe(at string, p Probe, v Vars) {
	c.request(at, p.Request, v, false)
	c.jsonPath(at+".value", p.Value)
}
