package abtest

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limit is the most overhead allowed at one percentile: Value in ms, or in
// % of B when Pct.
type Limit struct {
	Name  string // "p50"
	Value float64
	Pct   bool
}

// String writes l as ParseBudget reads it: p50=30%, p99=5ms.
func (l Limit) String() string {
	if l.Pct {
		return l.Name + "=" + strconv.FormatFloat(l.Value, 'f', -1, 64) + "%"
	}
	return l.Name + "=" + strconv.FormatFloat(l.Value, 'f', -1, 64) + "ms"
}

// Budget is the overhead allowed, a limit per percentile.
type Budget []Limit

// ParseBudget reads "p50=30%,p99=5ms": percentiles among p50, p90, p99 and
// p999, each limited in % of B or as a duration (5ms, 500us).
func ParseBudget(s string) (Budget, error) {
	var b Budget
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("%q: want PERCENTILE=LIMIT, like p50=30%% or p99=5ms", part)
		}
		if !known(name) {
			return nil, fmt.Errorf("%q: unknown percentile %q: want p50, p90, p99 or p999", part, name)
		}
		if seen[name] {
			return nil, fmt.Errorf("%q: %s limited twice", part, name)
		}
		seen[name] = true
		l := Limit{Name: name}
		if v, isPct := strings.CutSuffix(val, "%"); isPct {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) || f > 10000 {
				return nil, fmt.Errorf("%q: %q is not a percentage like 30%%", part, val)
			}
			l.Value, l.Pct = f, true
		} else {
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 || d > time.Hour {
				return nil, fmt.Errorf("%q: %q is not a percentage (30%%) or a duration (5ms)", part, val)
			}
			l.Value = float64(d) / float64(time.Millisecond)
		}
		b = append(b, l)
	}
	return b, nil
}

func known(name string) bool {
	for _, p := range Percentiles {
		if p.Name == name {
			return true
		}
	}
	return false
}

// Verdict is what a budget says of an A/B's deltas.
type Verdict string

// The verdicts.
const (
	// Within: every limit holds with 95% confidence (or no limit was set).
	Within Verdict = "within"
	// Exceeded: some limit is exceeded with 95% confidence.
	Exceeded Verdict = "exceeded"
	// Unclear: some confidence interval straddles its limit (too wide to
	// say), or an arm could not hold the rate.
	Unclear Verdict = "unclear"
)

// Finding is one limit judged.
type Finding struct {
	Limit   Limit
	Verdict Verdict
	// CI is the interval compared, in the limit's unit.
	CI [2]float64
}

// Judge judges ds against b: a limit is exceeded when its interval lies
// wholly above it, holds when wholly at or below it, and is unclear
// otherwise. The verdict is exceeded when any limit is, else unclear when
// any is, else within.
func Judge(ds []Delta, b Budget) (Verdict, []Finding) {
	v := Within
	var fs []Finding
	for _, l := range b {
		var d *Delta
		for i := range ds {
			if ds[i].Name == l.Name {
				d = &ds[i]
			}
		}
		if d == nil {
			continue
		}
		ci := d.CI
		if l.Pct {
			ci = d.CIPct
		}
		f := Finding{Limit: l, CI: ci, Verdict: Unclear}
		switch {
		case ci[0] > l.Value:
			f.Verdict = Exceeded
		case ci[1] <= l.Value:
			f.Verdict = Within
		}
		fs = append(fs, f)
		switch {
		case f.Verdict == Exceeded:
			v = Exceeded
		case f.Verdict == Unclear && v == Within:
			v = Unclear
		}
	}
	return v, fs
}
