package faults

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// TCPFaultsJSON is how the control API writes TCPFaults: durations as Go
// durations ("1ms"), sizes in bytes, shares in [0, 1]. A PUT replaces every
// field: one left out is zero (no fault).
type TCPFaultsJSON struct {
	Latency     string  `json:"latency"`
	LatencyRate float64 `json:"latency_rate"`
	Jitter      string  `json:"jitter"`
	Down        bool    `json:"down"`
	ResetAfter  int64   `json:"reset_after"`
	ResetRate   float64 `json:"reset_rate"`
	Bandwidth   int64   `json:"bandwidth"`
	CutRate     float64 `json:"cut_rate"`
}

// JSON returns f as the control API writes it.
func (f TCPFaults) JSON() TCPFaultsJSON {
	return TCPFaultsJSON{
		Latency: f.Latency.String(), LatencyRate: f.LatencyRate, Jitter: f.Jitter.String(),
		Down: f.Down, ResetAfter: f.ResetAfter, ResetRate: f.ResetRate, Bandwidth: f.Bandwidth, CutRate: f.CutRate,
	}
}

// Faults reads j back.
func (j TCPFaultsJSON) Faults() (TCPFaults, error) {
	f := TCPFaults{LatencyRate: j.LatencyRate, Down: j.Down, ResetAfter: j.ResetAfter, ResetRate: j.ResetRate, Bandwidth: j.Bandwidth, CutRate: j.CutRate}
	var err error
	if f.Latency, err = optDuration("latency", j.Latency); err != nil {
		return f, err
	}
	if f.Jitter, err = optDuration("jitter", j.Jitter); err != nil {
		return f, err
	}
	return f, f.Validate()
}

func optDuration(name, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a duration like 1ms", name, s)
	}
	return d, nil
}

// TCPAPI is the TCP proxy's control API, for a test that cuts a
// dependency mid-run and restores it:
//
//	GET /faults          the faults in force (TCPFaultsJSON)
//	PUT /faults          replace them; answers the new ones, 400 if invalid
//	GET /stats           what the proxy has carried (TCPStats)
func TCPAPI(p *TCPProxy) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.Faults().JSON())
	})
	mux.HandleFunc("PUT /faults", func(w http.ResponseWriter, r *http.Request) {
		var j TCPFaultsJSON
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&j); err != nil {
			problem(w, http.StatusBadRequest, fmt.Errorf("faults: %w", err))
			return
		}
		f, err := j.Faults()
		if err == nil {
			err = p.SetFaults(f)
		}
		if err != nil {
			problem(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, p.Faults().JSON())
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.Stats())
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
