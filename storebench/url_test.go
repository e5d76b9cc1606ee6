package storebench

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A store URL that does not parse is a usage error whose message names
// what is wrong and never the password (the drivers quote the URL).
func TestBadStoreURL(t *testing.T) {
	const pw = "s3cr3t-pw"
	for _, tc := range []struct{ name, url string }{
		{"redis bad escape", "redis://:" + pw + "%zz@127.0.0.1:1/0"},
		{"postgres bad escape", "postgres://u:" + pw + "%zz@127.0.0.1:1/db"},
		{"redis no scheme", ":" + pw + "@127.0.0.1:1"},
	} {
		var err error
		if strings.HasPrefix(tc.url, "postgres") {
			_, err = Postgres(context.Background(), tc.url, Options{})
		} else {
			_, err = Redis(context.Background(), tc.url, Options{})
		}
		if !errors.Is(err, ErrURL) {
			t.Errorf("%s: %v, want ErrURL", tc.name, err)
		}
		if err != nil && (strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "zz")) {
			t.Errorf("%s: the error quotes the URL: %v", tc.name, err)
		}
	}
}
