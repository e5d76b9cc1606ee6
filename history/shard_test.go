package history

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestShardText(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    Shard
		missing []int
	}{
		{"", Shard{}, nil},
		{"0/4", Shard{Index: 0, Count: 4}, nil},
		{"3/4", Shard{Index: 3, Count: 4}, nil},
		{"0/1", Shard{Index: 0, Count: 1}, nil},
		{"0,1,3 of 4", Shard{Count: 4, Delivered: []int{0, 1, 3}}, []int{2}},
		{"0 of 2", Shard{Count: 2, Delivered: []int{0}}, []int{1}},
		{"1,2 of 3", Shard{Count: 3, Delivered: []int{1, 2}}, []int{0}},
	} {
		var got Shard
		if err := got.UnmarshalText([]byte(c.in)); err != nil || !cmp.Equal(got, c.want) {
			t.Errorf("UnmarshalText(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		if got.String() != c.in {
			t.Errorf("UnmarshalText(%q).String() = %q", c.in, got.String())
		}
		if m := got.Missing(); !cmp.Equal(m, c.missing) {
			t.Errorf("UnmarshalText(%q).Missing() = %v, want %v", c.in, m, c.missing)
		}
		one, err := ParseShard(c.in)
		if isOne := c.want.Count > 0 && c.want.Delivered == nil; (err == nil) != isOne || isOne && !cmp.Equal(one, c.want) {
			t.Errorf("ParseShard(%q) = %+v, %v; want one shard only", c.in, one, err)
		}
	}
	for _, in := range []string{"4/4", "-1/4", "0/0", "1", "a/4", "0/4/", "2,1 of 3", "0,0 of 2", "3 of 3", "of 4", "0, 1 of 4", "0,1 of x", "0 of 0"} {
		var got Shard
		if err := got.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("UnmarshalText(%q) = %+v, want an error", in, got)
		}
	}
	if err := (Shard{Count: 4, Delivered: []int{0, 1}}).Check(); err == nil {
		t.Error("a merged run's Shard is one shard to run")
	}
	if got := (Shard{Index: 1, Count: 4}).Ops(10); got != 3 { // ops 1, 5, 9
		t.Errorf("shard 1/4 of 10 ops makes %d, want 3", got)
	}
	if got := (Shard{Index: 3, Count: 4}).Ops(3); got != 0 {
		t.Errorf("shard 3/4 of 3 ops makes %d, want 0", got)
	}
	if s := (Shard{Index: 1, Count: 4}); s.Global(2) != 9 || s.Local(9) != 2 {
		t.Errorf("shard 1/4: its op 2 is the run's %d, the run's op 9 its %d; want 9 and 2", s.Global(2), s.Local(9))
	}
}

// A history's header holds the shard as it always has: the very bytes of
// the string field it once was (format 3), and is read back whole.
func TestShardInHeader(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const tail = `"seed":7,"started":"2026-11-30T12:00:00Z","ended":"2026-11-30T12:00:01Z","judge":{"expect":"","invariants":null,"thresholds":{},"profile":{}}}`
	const head = `{"type":"header","format_version":3,"run_id":"r","scenario":"s","target":"http://a",`
	for _, c := range []struct {
		shard Shard
		want  string
	}{
		{Shard{}, head + tail},
		{Shard{Index: 1, Count: 4}, head + `"shard":"1/4",` + tail},
		{Shard{Count: 4, Delivered: []int{0, 1, 3}}, head + `"shard":"0,1,3 of 4",` + tail},
	} {
		h := &History{Meta: Meta{RunID: "r", Scenario: "s", Target: "http://a", Shard: c.shard, Seed: 7, Started: t0, Ended: t0.Add(time.Second)}}
		var buf bytes.Buffer
		if err := Encode(&buf, h); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := strings.Cut(buf.String(), "\n"); got != c.want {
			t.Errorf("header of shard %q:\n got %s\nwant %s", c.shard, got, c.want)
		}
		back, err := Decode(&buf)
		if err != nil || !cmp.Equal(back.Meta.Shard, c.shard) {
			t.Errorf("shard %q read back as %+v, %v", c.shard, back.Meta.Shard, err)
		}
	}
	bad := head + `"shard":"5/4",` + tail + "\n" + `{"type":"end","ops":0,"attempts":0,"readings":0}` + "\n"
	if _, err := Decode(strings.NewReader(bad)); err == nil {
		t.Error("a header naming shard 5/4 decoded")
	}
}
