package faults

import (
	"errors"
	"fmt"
	"strings"
)

// ParseSpec reads a fault as the proxy's --fault flag writes it:
// KIND=RATE[,PARAM=VALUE...], like timeout=0.05,after=50ms. RATE is the
// rate parameter; the PARAMs are the kind-specific parameters (Params).
// The common attempts parameter is not one: a proxy sees every request as
// a first attempt. It checks the syntax only; New checks the values.
func ParseSpec(s string) (Spec, error) {
	parts := strings.Split(s, ",")
	kind, rate, ok := strings.Cut(parts[0], "=")
	if !ok {
		return Spec{}, errors.New("want KIND=RATE, like drop_ack=0.1")
	}
	if kind == KindNemesis {
		return Spec{}, errors.New("a nemesis runs commands that stop the target: only a scenario's faults declare one")
	}
	if kind == KindConsumerCut {
		return Spec{}, errors.New("a consumer_cut cuts a queue consumer's broker connection: a scenario's faults declare one; idemcheck proxy tcp --cut-rate does it by hand")
	}
	spec := Spec{Kind: kind}
	rateParam, _ := LookupParam("rate")
	if err := rateParam.Set(&spec, rate); err != nil {
		return Spec{}, err
	}
	var names []string
	byName := map[string]Param{}
	for _, p := range params {
		if p.Kind != "" {
			names = append(names, p.Name)
			byName[p.Name] = p
		}
	}
	for _, part := range parts[1:] {
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return Spec{}, fmt.Errorf("parameter %q: want NAME=VALUE", part)
		}
		p, ok := byName[name]
		if !ok {
			want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
			return Spec{}, fmt.Errorf("unknown parameter %q: want %s", name, want)
		}
		if err := p.Set(&spec, val); err != nil {
			return Spec{}, err
		}
	}
	return spec, nil
}
