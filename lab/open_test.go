package lab

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestOpenConfigErrors: a store, ledger or namespace that cannot be used
// is a *ConfigError naming its field, found before anything connects,
// and its message never holds the password.
func TestOpenConfigErrors(t *testing.T) {
	const secret = "s3cr3t-pw"
	for _, c := range []struct {
		b     Backends
		field string
		want  string
	}{
		{Backends{Store: "memory", Ledger: "memory", Namespace: "Bad-Name"}, "namespace", `namespace "Bad-Name": use lowercase letters, digits and _`},
		{Backends{Store: "memory", Ledger: "mysql://u:" + secret + "@h/db"}, "ledger", "want memory, a postgres:// URL or a key=value DSN"},
		{Backends{Store: "memory", Ledger: "postgres://u:p%zz" + secret + "@h/x"}, "ledger", "the URL does not parse"},
		{Backends{Store: "memory", Ledger: "postgres://u:" + secret + "@h:x/db"}, "ledger", "the URL does not parse"},
		{Backends{Store: "memory", Ledger: "host=127.0.0.1 password='" + secret}, "ledger", "cannot parse it"},
		{Backends{Store: "memcached://u:" + secret + "@h", Ledger: "memory"}, "store", "want memory or a redis:// URL"},
		{Backends{Store: "redis://:" + secret + "@h:1/0?bogus=" + secret, Ledger: "memory"}, "store", "cannot parse it"},
	} {
		_, _, err := Open(context.Background(), Config{}, c.b, 1)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v) = %v, want a ConfigError on %s saying %q", c.b, err, c.field, c.want)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Open(%+v) = %v, which shows the password", c.b, err)
		}
	}
}

// TestOpenMemory: memory backends give n labs that share one ledger and
// one card processor, and an unknown bug is ErrUnknownBug.
func TestOpenMemory(t *testing.T) {
	labs, closeBackends, err := Open(context.Background(), Config{}, Backends{Store: "memory", Ledger: "memory"}, 2)
	if err != nil || len(labs) != 2 {
		t.Fatalf("Open(memory, 2) = %d labs, %v; want 2", len(labs), err)
	}
	defer closeBackends()
	if labs[0].ledger != labs[1].ledger || labs[0].Processor() != labs[1].Processor() {
		t.Errorf("Open(memory, 2): the labs do not share their ledger and processor")
	}
	if _, _, err := Open(context.Background(), Config{Bugs: []string{"typo"}}, Backends{Store: "memory", Ledger: "memory"}, 1); !errors.Is(err, ErrUnknownBug) {
		t.Errorf("Open(bug typo) = %v, want ErrUnknownBug", err)
	}
}
