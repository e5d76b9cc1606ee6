package redact

import (
	"strings"
	"testing"
)

// Command quotes argv as a shell reads it back and masks what looks like
// a secret, adding it to the registry so that output scrubbed by it never
// shows it either.
func TestCommand(t *testing.T) {
	for _, c := range []struct {
		argv    []string
		want    string
		secrets []string
	}{
		{[]string{"kubectl", "delete", "pod", "api-0"}, "kubectl delete pod api-0", nil},
		{[]string{"sh", "-c", "kill -9 $(cat /run/api.pid)"}, "sh -c 'kill -9 $(cat /run/api.pid)'", nil},
		{[]string{"deploy", "--token", "s3cr3t-tok"}, "deploy --token xxxxx", []string{"s3cr3t-tok"}},
		{[]string{"env", "DB_PASSWORD=hunter2-pass", "./start"}, "env DB_PASSWORD=xxxxx ./start", []string{"hunter2-pass"}},
		{[]string{"sh", "-c", "curl -H 'Authorization: Bearer abcdef123' https://u:pw1234@h/x"}, "", []string{"abcdef123", "pw1234"}},
	} {
		s := &Secrets{}
		got := s.Command(c.argv)
		if c.want != "" && got != c.want {
			t.Errorf("Command(%q) = %s, want %s", c.argv, got, c.want)
		}
		for _, sec := range c.secrets {
			if strings.Contains(got, sec) || strings.Contains(s.Scrub("output: "+sec), sec) {
				t.Errorf("Command(%q) = %s: %q shown, or not added to the secrets", c.argv, got, sec)
			}
		}
	}
}
