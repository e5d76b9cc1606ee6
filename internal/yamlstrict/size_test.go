package yamlstrict

import (
	"fmt"
	"strings"
	"testing"
)

// A document too large without any alias says so, and is not called an
// alias bomb; one that aliases expand is.
func TestTooLargeWithoutAliases(t *testing.T) {
	var b strings.Builder
	b.WriteString("headers:\n")
	for i := range 2000 { // 200,000 against the default bound, alike

		fmt.Fprintf(&b, "  X-H%d: v\n", i)
	}
	var v struct {
		Headers map[string]string `yaml:"headers"`
	}
	res := Decode([]byte(b.String()), &v, Options{Noun: "scenario", MaxNodes: 1000})
	if len(res.Problems) == 0 {
		t.Fatal("2,000 header keys accepted under a bound of 1,000 values")
	}
	p := res.Problems[0]
	if strings.Contains(p.Message, "alias") || strings.Contains(p.Hint, "alias") || !strings.Contains(p.Message, "scenario is too large: more than 1000 values") {
		t.Errorf("problem %q (hint %q): want the size named, no alias", p.Message, p.Hint)
	}

	var bomb strings.Builder
	bomb.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 8; i++ {
		prev := fmt.Sprintf("*a%d", i-1)
		fmt.Fprintf(&bomb, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(prev+", ", 10), ", "))
	}
	bomb.WriteString("deep: *a7\n")
	var c config
	res = Decode([]byte(bomb.String()), &c, Options{Noun: "scenario", MaxNodes: 1000})
	named := false
	for _, p := range res.Problems {
		named = named || strings.Contains(p.Message, "aliases expand")
	}
	if !named {
		t.Errorf("an alias bomb: %+v, want it named", res.Problems)
	}
}
