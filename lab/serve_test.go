package lab

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestStart: two instances serve on two ports of one host until Stop, and
// an address taken is a *ListenError.
func TestStart(t *testing.T) {
	r, err := Start(context.Background(), Config{}, Backends{Store: "memory", Ledger: "memory"}, 2, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.URLs) != 2 || r.URL != r.URLs[0] || r.URLs[0] == r.URLs[1] || !strings.HasPrefix(r.URLs[1], "http://127.0.0.1:") {
		t.Fatalf("Start(2 instances) serves on %q (URL %q), want two loopback URLs, the first URL", r.URLs, r.URL)
	}
	for _, u := range r.URLs {
		resp, err := http.Get(u + "/healthz")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s/healthz = %v, %v; want 200", u, resp, err)
		}
		resp.Body.Close()
	}
	r.Stop()
	if _, err := http.Get(r.URL + "/healthz"); err == nil {
		t.Errorf("GET %s/healthz after Stop answered", r.URL)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var le *ListenError
	if _, err := Start(context.Background(), Config{}, Backends{Store: "memory", Ledger: "memory"}, 1, ln.Addr().String()); !errors.As(err, &le) || !strings.HasPrefix(err.Error(), "lab: ") {
		t.Errorf("Start on a taken address = %v, want a ListenError saying lab: …", err)
	}
}

func TestInstancesFor(t *testing.T) {
	if n := InstancesFor([]string{BugCheckThenAct, BugInProcessLock}); n != 2 {
		t.Errorf("InstancesFor(in-process-lock) = %d, want 2", n)
	}
	if n := InstancesFor(nil); n != 1 {
		t.Errorf("InstancesFor(no bug) = %d, want 1", n)
	}
}
