package scenarios

import (
	"strings"
	"testing"
)

// A target with a scheme other than http(s) and no "//" is named by its
// scheme, not called scheme-less; host:port still is.
func TestTargetOtherScheme(t *testing.T) {
	for raw, want := range map[string]string{
		"javascript:alert(1)":      "target javascript:… is not an http or https URL (its scheme is javascript)",
		"data:text/plain,hi":       "its scheme is data",
		"localhost:8080":           "target localhost:8080 has no scheme",
		"localhost:8080/api":       "has no scheme",
		"api.example.com/v1":       "has no scheme",
		"ftp://files.example.com/": "is not an http or https URL",
	} {
		_, err := parseTarget(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseTarget(%q) = %v, want %q", raw, err, want)
		}
	}
	if _, err := parseTarget("javascript:alert(document.cookie)"); err != nil && strings.Contains(err.Error(), "cookie") {
		t.Errorf("the rest of the URL is shown: %v", err)
	}
}
