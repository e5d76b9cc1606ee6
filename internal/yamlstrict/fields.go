package yamlstrict

import (
	"reflect"
	"sort"
	"strings"
)

type fieldSet struct {
	index map[string][]int
	names []string // sorted
}

// fieldsOf lists the YAML fields of a struct type, inline fields included.
func fieldsOf(t reflect.Type) fieldSet {
	fs := fieldSet{index: map[string][]int{}}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			if !f.IsExported() || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), prefix...), i)
			if opts == "inline" {
				walk(f.Type, idx)
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			fs.index[name] = idx
			fs.names = append(fs.names, name)
		}
	}
	walk(t, nil)
	sort.Strings(fs.names)
	return fs
}

// Fields returns the names Decode accepts in a mapping decoded into a
// struct of type t (a struct or a pointer to one), inline fields
// included, sorted.
func Fields(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return fieldsOf(t).names
}
