package scenarios

import (
	"reflect"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/yamlstrict"
	"gopkg.in/yaml.v3"
)

// nemesisHints tell someone who got a nemesis parameter wrong what to
// write.
var nemesisHints = map[string]string{
	"stop":          `stop: [sh, -c, "kill -9 $(cat server.pid)"] (a list: the command's name, then its arguments; run without a shell)`,
	"start":         `start: [sh, -c, "./server > server.log 2>&1 & echo $! > server.pid"], or leave it out when the platform restarts the target`,
	"at":            "at: 40% strikes when 40% of load.ops are done (or of load.duration has passed)",
	"every":         "every: 5s strikes again 5s after the target was back; leave it out for one window",
	"ready":         "ready: GET /healthz (a request that answers 2xx once the target is back)",
	"ready_timeout": "ready_timeout: 30s bounds each command and the wait for ready",
}

// nemesis validates the nemesis fault f at field at (faults[i]): the
// problems faults.CheckNemesis finds, each at its parameter's line, and
// a zero written where "leave it out" was meant.
func (c *checker) nemesis(at string, f Fault) {
	for _, se := range specErrors(faults.CheckNemesis(f)) {
		hint, ok := nemesisHints[se.Field]
		if !ok {
			hint = "remove " + se.Field + " from this nemesis"
		}
		c.add(at+"."+se.Field, se.Problem, hint)
	}
	if f.Every == 0 && c.s.set(at+".every") {
		c.add(at+".every", "every must be above 0", "leave every out for one window, or write every: 5s")
	}
	if f.ReadyTimeout == 0 && c.s.set(at+".ready_timeout") {
		c.add(at+".ready_timeout", "ready_timeout must be above 0", "leave it out for "+Duration(faults.DefaultReadyTimeout).String())
	}
}

// shareType is the type decodeShare decodes (yamlOptions.Decoders).
var shareType = reflect.TypeFor[faults.Share]()

// decodeShare decodes a faults.Share (at: 40%), which knows no YAML.
func decodeShare(n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.ScalarNode {
		return &hintError{msg: "want a share of the load, got " + yamlstrict.KindName(n), hint: nemesisHints["at"]}
	}
	s, err := faults.ParseShare(n.Value)
	if err != nil {
		return &hintError{msg: err.Error(), hint: nemesisHints["at"]}
	}
	v.SetFloat(float64(s))
	return nil
}
