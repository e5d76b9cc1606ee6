package yamlstrict

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSuggest(t *testing.T) {
	tests := []struct {
		name  string
		known []string
		want  string
	}{
		{"retires", []string{"attempts", "backoff", "on"}, "did you mean attempts? retry takes: attempts, backoff, on"},
		{"concurency", []string{"concurrency", "ops", "rate"}, "did you mean concurrency?"},
		{"Name", []string{"name", "users"}, "did you mean name?"},
		{"x", nil, ""},
	}
	for _, tt := range tests {
		if got := Suggest(tt.name, tt.known, "retry"); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if diff := cmp.Diff([]int{0, 1, 3, 3}, []int{distance("a", "a"), distance("ab", "a"), distance("kitten", "sitting"), distance("", "abc")}); diff != "" {
		t.Errorf("distance (-want +got):\n%s", diff)
	}
}
