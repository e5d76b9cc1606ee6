package scenarios

import (
	"errors"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string // part of the hint or message; "" for success
	}{
		{"250ms", 250 * time.Millisecond, ""},
		{"2s", 2 * time.Second, ""},
		{"1m", time.Minute, ""},
		{"1m30s", 90 * time.Second, ""},
		{" 5us ", 5 * time.Microsecond, ""},
		{"0", 0, ""},
		{"250", 0, "write a unit: 250ms"},
		{"1.5", 0, "write a unit: 1.5ms"},
		{"-1s", 0, "negative"},
		{"soon", 0, "bad duration"},
		{"", 0, "empty duration"},
		{"10 parsecs", 0, "bad duration"},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if tt.wantErr == "" {
			if err != nil || got.Std() != tt.want {
				t.Errorf("ParseDuration(%q) = %v, %v, want %v, nil", tt.in, got, err, tt.want)
			}
			continue
		}
		var he *hintError
		if !errors.As(err, &he) || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("ParseDuration(%q) error = %v, want a hintError containing %q", tt.in, err, tt.wantErr)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{"200", 200, false},
		{"200/s", 200, false},
		{"12000/m", 200, false},
		{"7200/h", 2, false},
		{"0.5", 0.5, false},
		{" 30 / m ", 0.5, false},
		{"5/ms", 0, true},
		{"fast", 0, true},
		{"-3/s", 0, true},
		{"NaN", 0, true},
		{"Inf", 0, true},
		{"/s", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && float64(got) != tt.want) {
			t.Errorf("ParseRate(%q) = %v, %v, want %v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestUnitsYAML(t *testing.T) {
	type units struct {
		D Duration `yaml:"d"`
		R Rate     `yaml:"r"`
	}
	var u units
	if err := yaml.Unmarshal([]byte("d: 250ms\nr: 12000/m\n"), &u); err != nil {
		t.Fatalf("Unmarshal = %v, want nil", err)
	}
	if u.D.Std() != 250*time.Millisecond || u.R != 200 {
		t.Errorf("Unmarshal = %+v, want 250ms and 200/s", u)
	}
	out, err := yaml.Marshal(u)
	if err != nil {
		t.Fatalf("Marshal = %v", err)
	}
	if got, want := string(out), "d: 250ms\nr: 200/s\n"; got != want {
		t.Errorf("Marshal = %q, want %q", got, want)
	}
	var back units
	if err := yaml.Unmarshal(out, &back); err != nil || back != u {
		t.Errorf("round trip = %+v, %v, want %+v", back, err, u)
	}
	for _, bad := range []string{"d: [1]\n", "r: {a: 1}\n", "d: 250\n", "r: 5/ms\n"} {
		if err := yaml.Unmarshal([]byte(bad), &units{}); err == nil {
			t.Errorf("Unmarshal(%q) = nil, want an error", bad)
		}
	}
}
