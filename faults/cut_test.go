package faults

import (
	"context"
	"io"
	"net"
	"testing"
)

// TestTCPCutRate: at CutRate 1 every connection is cut at its first chunk
// and nothing passes; at 0 every exchange passes, none cut.
func TestTCPCutRate(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	for _, rate := range []float64{0, 1} {
		p, err := NewTCPProxy(up.Addr().String(), TCPFaults{CutRate: rate}, 1)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = p.Serve(ctx, ln) }()
		echoed := 0
		for range 10 {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			_, _ = c.Write([]byte("ping"))
			b := make([]byte, 4)
			if _, err := io.ReadFull(c, b); err == nil && string(b) == "ping" {
				echoed++
			}
			c.Close()
		}
		cancel()
		<-done
		st := p.Stats()
		if rate == 0 && (echoed != 10 || st.Cuts != 0) {
			t.Errorf("cut rate 0: %d of 10 echoed, %d cuts; want all echoed, none cut", echoed, st.Cuts)
		}
		if rate == 1 && (echoed != 0 || st.Cuts != 10 || st.Resets != 10) {
			t.Errorf("cut rate 1: %d of 10 echoed, %d cuts, %d resets; want none echoed, 10 cut", echoed, st.Cuts, st.Resets)
		}
	}
	if err := (TCPFaults{CutRate: 1.5}).Validate(); err == nil {
		t.Error("Validate(cut rate 1.5) = nil, want an error")
	}
}
