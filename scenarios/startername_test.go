package scenarios

import "testing"

func TestStarterName(t *testing.T) {
	for _, c := range []struct{ method, path, want string }{
		{"POST", "/v1/charges?x=1", "post-v1-charges"},
		{"PUT", "/Accounts/{id}/debit", "put-accounts-id-debit"},
		{"", "/", "my-operation"},
		{"", "?x=1", "my-operation"},
	} {
		if got := StarterName(c.method, c.path); got != c.want {
			t.Errorf("StarterName(%q, %q) = %q, want %q", c.method, c.path, got, c.want)
		}
	}
}
