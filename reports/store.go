package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Store is what `bench store` reports: each store's primitives, the bytes
// a record takes, and the capacity a retention window needs.
type Store struct {
	Redis    *StoreResult  `json:"redis,omitempty"`
	Postgres *StoreResult  `json:"postgres,omitempty"`
	Capacity StoreCapacity `json:"capacity"`

	// RedisURL and PostgresURL name the stores measured, redacted.
	RedisURL    string `json:"-"`
	PostgresURL string `json:"-"`
	// ValueSize is the stored response body's size, bytes.
	ValueSize int `json:"-"`
	// TTL is the retention window of the capacity plan.
	TTL time.Duration `json:"-"`
}

// StoreResult is what one store measured.
type StoreResult struct {
	Primitives     []StorePrimitive `json:"primitives"`
	BytesPerRecord int64            `json:"bytes_per_record"`
	// Roundtrip is one roundtrip's cost, µs: the p50 of set_nx_px at
	// concurrency 1 (Redis); 0 when not measured.
	Roundtrip float64 `json:"-"`
}

// StorePrimitive is one primitive's figures at one concurrency.
type StorePrimitive struct {
	Name        string  `json:"name"`
	Concurrency int     `json:"concurrency"`
	P50US       float64 `json:"p50_us"`
	P99US       float64 `json:"p99_us"`
	OpsPerS     float64 `json:"ops_per_s"`
	Errors      int64   `json:"-"` // failed calls, left out of the figures
}

// StoreCapacity is what a retention window holds at a request rate.
type StoreCapacity struct {
	RPS                  int   `json:"rps"`
	TTLS                 int64 `json:"ttl_s"`
	Records              int64 `json:"records"`
	Bytes                int64 `json:"bytes"`
	RoundtripsPerRequest int   `json:"roundtrips_per_request"`
	StoreOpsPerS         int64 `json:"store_ops_per_s"`
}

// WriteJSON writes s as one JSON document.
func (s *Store) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteText writes s as tables for a terminal.
func (s *Store) WriteText(w io.Writer) error {
	var out bytes.Buffer
	prims := func(name string, ps []StorePrimitive) {
		fmt.Fprintf(&out, "%s\n", name)
		tw := tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PRIMITIVE\tCONCURRENCY\tp50\tp99\tOPS/S\tERRORS")
		for _, p := range ps {
			fmt.Fprintf(tw, "%s\t%d\t%.1fµs\t%.1fµs\t%.0f\t%d\n", p.Name, p.Concurrency, p.P50US, p.P99US, p.OpsPerS, p.Errors)
		}
		tw.Flush()
	}
	if r := s.Redis; r != nil {
		prims("Redis ("+s.RedisURL+")", r.Primitives)
		fmt.Fprintf(&out, "one roundtrip (set_nx_px p50 at concurrency 1): %.1fµs\n", r.Roundtrip)
		fmt.Fprintf(&out, "bytes per record (MEMORY USAGE, %d-byte body): %d\n\n", s.ValueSize, r.BytesPerRecord)
	}
	if p := s.Postgres; p != nil {
		prims("Postgres ("+s.PostgresURL+")", p.Primitives)
		fmt.Fprintf(&out, "bytes per record (key table with indexes, %d-byte body): %d\n\n", s.ValueSize, p.BytesPerRecord)
	}
	c := s.Capacity
	fmt.Fprintf(&out, "capacity plan: %d req/s × %v = %d records × %d B = %s; %d store roundtrips per request = %d store commands/s\n",
		c.RPS, s.TTL, c.Records, c.Bytes/max(c.Records, 1), bytesText(c.Bytes), c.RoundtripsPerRequest, c.StoreOpsPerS)
	_, err := w.Write(out.Bytes())
	return err
}

// bytesText writes n in GiB or MiB.
func bytesText(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
