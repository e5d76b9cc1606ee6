package yamlstrict

import "strings"

// Suggest is the hint for an unknown name: the closest known one, and the
// whole list when even the closest is far off, introduced as what where
// takes ("retry takes: attempts, backoff, on"). It is "" when known is
// empty.
func Suggest(name string, known []string, where string) string {
	best, close := Closest(name, known)
	if best == "" {
		return ""
	}
	hint := "did you mean " + best + "?"
	if !close {
		hint += " " + where + " takes: " + strings.Join(known, ", ")
	}
	return hint
}

// Closest returns the known name nearest to name by edit distance, ignoring
// case, and whether it is near enough to be a likely typo.
func Closest(name string, known []string) (string, bool) {
	best, bestD := "", -1
	for _, k := range known {
		if dist := distance(strings.ToLower(name), strings.ToLower(k)); bestD < 0 || dist < bestD {
			best, bestD = k, dist
		}
	}
	return best, bestD >= 0 && bestD <= max(2, len(name)/2)
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Meant is the known name a mistyped one was likely meant to be: the
// nearest by edit distance when near enough, else the one longer name it
// is a dash-separated word of (quiet for quiet-period); "" when none.
func Meant(name string, known []string) string {
	if best, near := Closest(name, known); near {
		return best
	}
	var longer []string
	for _, n := range known {
		if strings.HasPrefix(n, name+"-") || strings.HasSuffix(n, "-"+name) {
			longer = append(longer, n)
		}
	}
	if len(longer) == 1 {
		return longer[0]
	}
	return ""
}
