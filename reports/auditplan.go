package reports

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// AuditPlan is what an audit would send (audit --dry-run): its bounds and
// each check with its request bound or why it is skipped.
type AuditPlan struct {
	// MaxPlanned is the most requests the audit sends, Calibration of them
	// first; MaxRequests the cap in force.
	MaxPlanned, Calibration, MaxRequests int
	// Oracle is false when effects are not counted.
	Oracle bool
	Checks []AuditPlanCheck
}

// AuditPlanCheck is one check of an AuditPlan.
type AuditPlanCheck struct {
	ID, Name, Severity string
	Requests           int
	Probes             string
	// Skip says why the check will not run; "" when it will.
	Skip string
}

// WriteAuditPlan writes p as a table, saying that nothing was sent.
func WriteAuditPlan(w io.Writer, p AuditPlan) error {
	var b strings.Builder
	fmt.Fprintf(&b, "dry run: nothing sent. The audit would send up to %d requests (%d to calibrate; --max-requests %d).\n\n", p.MaxPlanned, p.Calibration, p.MaxRequests)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCHECK\tSEVERITY\tREQUESTS\tPROBES")
	for _, c := range p.Checks {
		n, probes := fmt.Sprint(c.Requests), c.Probes
		if c.Skip != "" {
			n, probes = "-", "skipped: "+c.Skip
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.ID, c.Name, c.Severity, n, probes)
	}
	tw.Flush()
	if !p.Oracle {
		fmt.Fprintln(&b, "\nno --effects: the checks judge from the answers alone")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
