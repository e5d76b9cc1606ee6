package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// big is a history of n ops with one to three attempts each and a
// reading of every key.
func big(n int) *History {
	h := sample()
	h.Ops, h.Attempts = nil, nil
	fx := map[string]int{}
	for id := range n {
		key := fmt.Sprintf("key-%d", id*7%max(n-3, 1))
		h.Ops = append(h.Ops, Op{ID: id, Key: key})
		for a := 1; a <= 1+id%3; a++ {
			h.Attempts = append(h.Attempts, Attempt{Op: id, N: a, Outcome: OK, Status: 200 + a, Intended: 10, Start: 11, End: time.Duration(12 + 1000*id)})
		}
		fx[key]++
	}
	h.Readings[0].Effects = fx
	h.Sort()
	return h
}

// joined puts the parts of Split back into one history, in id order.
func joined(t *testing.T, p *Parts) *History {
	t.Helper()
	h := &History{Meta: p.Meta, Readings: p.Readings, Ops: make([]Op, p.Trailer.Ops)}
	var atts []Attempt
	err := p.Each(func(part *History) error {
		if !part.Sorted() {
			t.Error("a part's attempts are not sorted")
		}
		for i, op := range part.Ops {
			if i > 0 && part.Ops[i-1].ID >= op.ID {
				t.Errorf("a part's ops are not in id order: %d then %d", part.Ops[i-1].ID, op.ID)
			}
			h.Ops[op.ID] = op
			for _, a := range part.AttemptsOf(i) {
				a.Op = op.ID
				atts = append(atts, a)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h.Attempts = atts
	h.Sort()
	return h
}

// TestSplitKeepsEverything: a history split into parts on disk holds
// every op, attempt and reading, each key in one part.
func TestSplitKeepsEverything(t *testing.T) {
	h := big(3000)
	enc := encoded(t, h)
	for _, partBytes := range []int64{1 << 30, 50 << 10, 4 << 10} {
		tmp := t.TempDir()
		p, err := Split(context.Background(), strings.NewReader(enc), int64(len(enc)), tmp, partBytes)
		if err != nil {
			t.Fatal(err)
		}
		// no path names the parts: a process killed now leaves nothing
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("parts named in %s: %v", tmp, left)
		}
		if partBytes < int64(len(enc)) && p.Len() < 2 {
			t.Errorf("%d bytes in parts of %d: %d parts", len(enc), partBytes, p.Len())
		}
		keys := map[string]int{}
		part := 0
		p.Each(func(x *History) error {
			for _, op := range x.Ops {
				if q, ok := keys[op.Key]; ok && q != part {
					t.Errorf("key %s in parts %d and %d", op.Key, q, part)
				}
				keys[op.Key] = part
			}
			part++
			return nil
		})
		got := joined(t, p)
		if diff := cmp.Diff(h, got, cmpopts.IgnoreUnexported(History{})); diff != "" {
			t.Errorf("parts of %d bytes: joined history differs (-want +got):\n%s", partBytes, diff)
		}
		if p.Span != Span(h.Attempts) || p.Trailer.Attempts != len(h.Attempts) {
			t.Errorf("span %v, %d attempts; want %v, %d", p.Span, p.Trailer.Attempts, Span(h.Attempts), len(h.Attempts))
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEncoderAsOpsEnd: a history written op by op as ops end, out of id
// order (a long run spilling to disk), decodes and splits to the same
// history.
func TestEncoderAsOpsEnd(t *testing.T) {
	h := big(500)
	var buf bytes.Buffer
	e := NewEncoder(&buf, h.Meta)
	for i := len(h.Ops) - 1; i >= 0; i -= 2 {
		e.Op(h.Ops[i], h.AttemptsOf(i))
	}
	for i := len(h.Ops) - 2; i >= 0; i -= 2 {
		e.Op(h.Ops[i], h.AttemptsOf(i))
	}
	if err := e.Close(h.Readings); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h, got, cmpopts.IgnoreUnexported(History{})); diff != "" {
		t.Errorf("Decode: (-want +got):\n%s", diff)
	}
	p, err := Split(context.Background(), bytes.NewReader(buf.Bytes()), int64(buf.Len()), t.TempDir(), 8<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if diff := cmp.Diff(h, joined(t, p), cmpopts.IgnoreUnexported(History{})); diff != "" {
		t.Errorf("Split: (-want +got):\n%s", diff)
	}
}

// TestSplitReadsFormat2: a history of format 2 (every op, then every
// attempt) splits as well.
func TestSplitReadsFormat2(t *testing.T) {
	h := big(400)
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"header","format_version":2,"run_id":"r1","scenario":"s","seed":42,"started":"2026-01-02T03:04:05Z","ended":"0001-01-01T00:00:00Z","judge":{"expect":"pass","invariants":[]}}`+"\n")
	for _, op := range h.Ops {
		fmt.Fprintf(&b, `{"type":"op","op":%d,"key":%q}`+"\n", op.ID, op.Key)
	}
	for _, a := range h.Attempts {
		fmt.Fprintf(&b, `{"type":"attempt","op":%d,"n":%d,"outcome":"ok","status":%d,"intended_ns":10,"start_ns":11,"end_ns":%d}`+"\n", a.Op, a.N, a.Status, a.End)
	}
	fmt.Fprintf(&b, `{"type":"end","ops":%d,"attempts":%d,"readings":0}`+"\n", len(h.Ops), len(h.Attempts))
	p, err := Split(context.Background(), strings.NewReader(b.String()), int64(b.Len()), t.TempDir(), 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := joined(t, p)
	if len(got.Ops) != len(h.Ops) || len(got.Attempts) != len(h.Attempts) || p.Len() < 2 {
		t.Fatalf("%d ops, %d attempts in %d parts; want %d, %d in several", len(got.Ops), len(got.Attempts), p.Len(), len(h.Ops), len(h.Attempts))
	}
	for i := range h.Attempts {
		if got.Attempts[i].Op != h.Attempts[i].Op || got.Attempts[i].End != h.Attempts[i].End {
			t.Fatalf("attempt %d: %+v, want %+v", i, got.Attempts[i], h.Attempts[i])
		}
	}
}

// TestSplitRefuses: what Decode refuses, Split refuses, with the line;
// an attempt a part finds wrong is reported by Each with its line.
func TestSplitRefuses(t *testing.T) {
	hd := `{"type":"header","format_version":3}` + "\n"
	op := func(id int) string { return fmt.Sprintf(`{"type":"op","op":%d,"key":"k%d"}`+"\n", id, id) }
	att := func(id int, outcome string) string {
		return fmt.Sprintf(`{"type":"attempt","op":%d,"n":1,"outcome":%q}`+"\n", id, outcome)
	}
	end := func(ops, atts int) string {
		return fmt.Sprintf(`{"type":"end","ops":%d,"attempts":%d,"readings":0}`+"\n", ops, atts)
	}
	cases := []struct {
		name, in string
		is       error
		line     string
	}{
		{"truncated", hd + op(0) + att(0, "ok"), ErrTruncated, ""},
		{"op twice", hd + op(0) + op(0) + end(2, 0), ErrFormat, "line 3"},
		{"attempt before its op", hd + att(0, "ok") + op(0) + end(1, 1), ErrFormat, "line 2"},
		{"ids with a gap", hd + op(0) + op(2) + end(2, 0), ErrFormat, "line 4"},
		{"trailer miscounts", hd + op(0) + end(2, 0), ErrFormat, "line 3"},
		{"old format", `{"type":"header","format_version":1}` + "\n", ErrOldFormat, ""},
	}
	for _, c := range cases {
		for _, partBytes := range []int64{1 << 20, 8} {
			_, err := Split(context.Background(), strings.NewReader(c.in), int64(len(c.in)), t.TempDir(), partBytes)
			if !errors.Is(err, c.is) || !strings.Contains(fmt.Sprint(err), c.line) {
				t.Errorf("%s (parts of %d bytes): %v, want %v at %q", c.name, partBytes, err, c.is, c.line)
			}
		}
	}
	in := hd + op(0) + op(1) + att(1, "maybe") + end(2, 1)
	p, err := Split(context.Background(), strings.NewReader(in), int64(len(in)), t.TempDir(), 8)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	err = p.Each(func(*History) error { return nil })
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("Each over a bad attempt: %v, want ErrFormat at line 4", err)
	}
}

// TestLargeReadingOverLines: an effects reading of many keys, or an
// account of many applied ops, is written
// over several lines, each far below the line limit, and read back whole.
func TestLargeReadingOverLines(t *testing.T) {
	h := sample()
	fx, before := map[string]int{}, map[string]int{}
	for i := range 3*readingKeys + 17 {
		fx[fmt.Sprintf("key-%07d", i)] = 1 + i%2
		if i%5 == 0 {
			before[fmt.Sprintf("key-%07d", i)] = 1
		}
	}
	acc := &Account{BalanceBefore: 10, BalanceAfter: 3, VersionBefore: 1, VersionAfter: 2}
	for i := range 2*readingKeys + 5 {
		acc.Applied = append(acc.Applied, Applied{Key: fmt.Sprintf("key-%07d", i), Amount: int64(i % 7)})
	}
	h.Readings = []Reading{{Oracle: "ledger", Kind: KindEffects, Effects: fx, EffectsBefore: before, Strangers: 2, StrangerKeys: []string{"x"}},
		{Oracle: "n", Kind: KindCounter, Before: ptr(int64(1)), After: ptr(int64(2))},
		{Oracle: "acc", Kind: KindAccount, Account: acc}}
	enc := encoded(t, h)
	lines := strings.Split(enc, "\n")
	longest := 0
	for _, l := range lines {
		longest = max(longest, len(l))
	}
	if longest > 4<<20 {
		t.Errorf("a line of %d bytes", longest)
	}
	got, err := Decode(strings.NewReader(enc))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h.Readings, got.Readings) {
		t.Errorf("the readings read back differ")
	}
	path := filepath.Join(t.TempDir(), "h.jsonl")
	os.WriteFile(path, []byte(enc), 0o644)
	p, err := SplitFile(context.Background(), path, t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !reflect.DeepEqual(h.Readings, p.Readings) {
		t.Errorf("Split's readings differ")
	}
}

// FuzzSplit: Split (then Each) refuses what Decode refuses, and what both
// read is the same history.
func FuzzSplit(f *testing.F) {
	f.Add(encoded(&testing.T{}, sample()))
	f.Add(encoded(&testing.T{}, big(40)))
	f.Add(`{"type":"header","format_version":3}` + "\n" + `{"type":"op","op":1,"key":"a"}` + "\n" + `{"type":"op","op":0,"key":"b"}` + "\n" +
		`{"type":"attempt","op":1,"n":1,"outcome":"ok"}` + "\n" + `{"type":"end","ops":2,"attempts":1,"readings":0}`)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in string) {
		want, werr := Decode(strings.NewReader(in))
		p, err := Split(context.Background(), strings.NewReader(in), int64(len(in)), dir, int64(len(in)/3+1))
		if err == nil {
			defer p.Close()
			var got *History
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("joining the parts: %v", r)
					}
				}()
				err = p.Each(func(*History) error { return nil })
				if err == nil {
					got = joined(t, p)
				}
			}()
			if err == nil && werr == nil {
				if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(History{}), cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("Split and Decode read different histories (-Decode +Split):\n%s", diff)
				}
			}
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("Decode: %v; Split: %v", werr, err)
		}
		if err != nil && !errors.Is(err, ErrFormat) && !strings.HasPrefix(err.Error(), "reading history") {
			t.Fatalf("Split error %v does not wrap ErrFormat", err)
		}
	})
}

// TestReadingsRefused: an oracle read twice (not as a continuation) is
// refused, however many readings there are.
func TestReadingsRefused(t *testing.T) {
	hd := `{"type":"header","format_version":3}` + "\n"
	end := `{"type":"end","ops":0,"attempts":0,"readings":2}` + "\n"
	for name, in := range map[string]string{
		"twice apart":       hd + `{"type":"reading","oracle":"a","kind":"counter","before":1,"after":2}` + "\n" + `{"type":"reading","oracle":"b","kind":"counter"}` + "\n" + `{"type":"reading","oracle":"a","kind":"counter"}` + "\n" + end,
		"twice, not a part": hd + `{"type":"reading","oracle":"a","kind":"counter","before":1,"after":2}` + "\n" + `{"type":"reading","oracle":"a","kind":"counter","before":3}` + "\n" + end,
	} {
		if _, err := Decode(strings.NewReader(in)); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "second reading") {
			t.Errorf("%s: %v, want a second reading refused", name, err)
		}
	}
	var b strings.Builder
	b.WriteString(hd)
	for i := range 50000 {
		fmt.Fprintf(&b, `{"type":"reading","oracle":"o%d","kind":"counter"}`+"\n", i)
	}
	fmt.Fprintf(&b, `{"type":"end","ops":0,"attempts":0,"readings":50000}`+"\n")
	h, err := Decode(strings.NewReader(b.String()))
	if err != nil || len(h.Readings) != 50000 {
		t.Fatalf("50000 readings: %v", err)
	}
}

// TestNullOpAlike: what Decode makes of an attempt whose op is null or
// absent (op 0), Split makes too.
func TestNullOpAlike(t *testing.T) {
	in := `{"type":"header","format_version":3}` + "\n" + `{"type":"op","op":0,"key":"k"}` + "\n" +
		`{"type":"attempt","op":null,"n":1,"outcome":"ok"}` + "\n" + `{"type":"attempt","n":2,"outcome":"ok"}` + "\n" +
		`{"type":"end","ops":1,"attempts":2,"readings":0}` + "\n"
	h, err := Decode(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Split(context.Background(), strings.NewReader(in), int64(len(in)), t.TempDir(), 8)
	if err != nil {
		t.Fatalf("Split: %v; Decode read it", err)
	}
	defer p.Close()
	if got := joined(t, p); len(got.Attempts) != len(h.Attempts) {
		t.Errorf("Split read %d attempts, Decode %d", len(got.Attempts), len(h.Attempts))
	}
}

// TestSplitStopsWithContext: a split of a long history ends when its
// context does.
func TestSplitStopsWithContext(t *testing.T) {
	enc := encoded(t, big(20000))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Split(ctx, strings.NewReader(enc), int64(len(enc)), t.TempDir(), 4<<10); !errors.Is(err, context.Canceled) {
		t.Errorf("Split with a cancelled context: %v, want context.Canceled", err)
	}
}
