package oracles

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/history"
)

// The state oracle reads each object the ops name once, in memory and
// spilled; a 404 is an object without state, every object 404 a reading
// error (a wrong path), an answer without the value an error.
func TestHTTPState(t *testing.T) {
	versions := map[string]string{"c1": `{"version":3}`, "c2": `{"version":5}`, "bad": `{"name":"x"}`}
	reads := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/customers/")
		reads[id]++
		b, ok := versions[id]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(b))
	}))
	defer srv.Close()
	o := &HTTPState{OracleName: "customers", Client: srv.Client(), Value: "$.version", Concurrency: 1,
		PerObject: func(ctx context.Context, obj string) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/customers/"+obj, nil)
		}}
	objects := func(objs ...string) *history.History {
		h := &history.History{}
		for i, obj := range objs {
			h.Ops = append(h.Ops, history.Op{ID: i, Key: fmt.Sprintf("k%d", i), Object: obj})
		}
		h.Sort()
		return h
	}
	h := objects("c1", "c1", "c2", "none", "c2")
	for name, h := range map[string]*history.History{"memory": h, "spilled": spilled(t, h)} {
		clear(reads)
		r, err := o.Observe(context.Background(), h)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.Kind != history.KindState || fmt.Sprint(r.States) != "map[c1:3 c2:5]" {
			t.Errorf("%s: %s %v, want state map[c1:3 c2:5] (none: no state)", name, r.Kind, r.States)
		}
		if fmt.Sprint(reads) != "map[c1:1 c2:1 none:1]" {
			t.Errorf("%s: reads %v, want each object once", name, reads)
		}
	}
	if _, err := o.Observe(context.Background(), objects("x", "y")); err == nil || !strings.Contains(err.Error(), "every one of 2 objects was answered 404") {
		t.Errorf("every object 404: %v, want an error naming the path", err)
	}
	if _, err := o.Observe(context.Background(), objects("bad")); err == nil || !strings.Contains(err.Error(), "object bad") {
		t.Errorf("no version in the answer: %v, want an error naming the object", err)
	}
}
