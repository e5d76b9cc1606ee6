package reports

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
)

// faultList says, per fault kind, how many attempts it was planned for
// and how many it bit, with the value a relative parameter resolved to:
// "timeout 16 planned, 0 bit (after 0.5x = 10.2ms); drop_ack 20 planned,
// 20 bit"; empty when no fault was planned.
func faultList(fs []measure.FaultCount, c *history.Calibration, empty string) string {
	if len(fs) == 0 {
		return empty
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		p := fmt.Sprintf("%s %d planned, %d bit", f.Name, f.Planned, f.Bit)
		if f.BitUnknown {
			p = fmt.Sprintf("%s %d planned (whether they bit was not recorded)", f.Name, f.Planned)
		}
		if r := resolvedOf(c, f.Name); r != "" {
			p += " (" + r + ")"
		}
		parts[i] = p
	}
	return strings.Join(parts, "; ")
}

// resolvedOf says what the relative parameters of the faults of kind
// resolved to: "after 0.5x = 10.2ms"; "" for none.
func resolvedOf(c *history.Calibration, kind string) string {
	if c == nil {
		return ""
	}
	var out []string
	for _, r := range c.Resolved {
		if r.Kind == kind {
			out = append(out, fmt.Sprintf("%s %s = %s", r.Param, r.Relative, quantity(measure.MS(r.Value), "ms")))
		}
	}
	return strings.Join(out, ", ")
}

// calibrationLine says what the calibration before the load measured;
// "" when none ran.
func calibrationLine(c *history.Calibration) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf("%d plain requests before the load, %d answered 2xx: p50 %s, p90 %s",
		c.Requests, c.Answered, quantity(measure.MS(c.P50), "ms"), quantity(measure.MS(c.P90), "ms"))
}

// faultShort is faultList for a table cell: "16/16 drop_ack, 0/3 timeout"
// (bit/planned).
func faultShort(fs []measure.FaultCount) string {
	if len(fs) == 0 {
		return "none"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		if f.BitUnknown {
			parts[i] = fmt.Sprintf("?/%d %s", f.Planned, f.Name)
			continue
		}
		parts[i] = fmt.Sprintf("%d/%d %s", f.Bit, f.Planned, f.Name)
	}
	return strings.Join(parts, ", ")
}
