package scenarios

import (
	"errors"
	"testing"
)

// FuzzParse: Parse never panics, and either returns a scenario that
// validates or Diagnostics, each naming the source and saying something.
// Seeded from the built-in scenarios; yamlstrict's FuzzDecode covers the
// decoder alone.
func FuzzParse(f *testing.F) {
	for _, name := range BuiltinNames() {
		data, err := BuiltinYAML(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(valid))
	f.Add([]byte("a: &a {b: *a}\n"))
	f.Add([]byte("load: {<<: [{ops: 1}, {rate: 2/s}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			var ds Diagnostics
			if !errors.As(err, &ds) || len(ds) == 0 {
				t.Fatalf("Parse error %T %v, want Diagnostics", err, err)
			}
			if s != nil {
				t.Fatalf("Parse returned a scenario and an error")
			}
			for _, d := range ds {
				if d.Source != "fuzz.yaml" || d.Message == "" || d.Line < 0 || d.Column < 0 {
					t.Fatalf("Parse diagnostic %+v: want Source fuzz.yaml, a message and a location", d)
				}
			}
			return
		}
		if ds := s.Validate(); ds != nil {
			t.Fatalf("Parse accepted a scenario that Validate rejects: %v", ds)
		}
	})
}
