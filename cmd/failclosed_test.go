package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/testenv"

	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// TestLabFailsClosed: with its Redis store or its Postgres ledger gone, the
// protected charge endpoint answers 503 and charges nothing, at the ledger
// or at the processor.
func TestLabFailsClosed(t *testing.T) {
	testenv.SkipUnlessLong(t)
	testsvc.Need(t, testsvc.RedisServer, testsvc.PostgresServer)
	for _, down := range []string{"redis", "postgres"} {
		t.Run(down+" down", func(t *testing.T) {
			store, stopRedis := testsvc.RedisWithStop(t)
			ledger, stopPG := testsvc.PostgresWithStop(t)
			rl, err := startLab(context.Background(), &LabOptions{Store: store, Ledger: ledger, ProcessorLatency: -1}, "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			charge := func(key string) int {
				req, _ := http.NewRequest(http.MethodPost, rl.URL+"/charges", strings.NewReader(`{"amount":100,"currency":"usd","customer":"cus_1"}`))
				req.Header.Set("Authorization", "Bearer alice")
				req.Header.Set("Idempotency-Key", key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("POST /charges: %v", err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if got := charge("up-1"); got != http.StatusCreated {
				t.Fatalf("charge with both servers up: %d, want 201", got)
			}
			processed := func() int {
				resp, err := http.Get(rl.URL + "/processor/charges/counts")
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var c struct{ Counts map[string]int }
				if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, v := range c.Counts {
					n += v
				}
				return n
			}
			before := processed()
			stop := map[string]func(){"redis": stopRedis, "postgres": stopPG}[down]
			stop()
			for i := range 5 {
				if got := charge(fmt.Sprintf("down-%d", i)); got != http.StatusServiceUnavailable {
					t.Errorf("charge with %s down: %d, want 503 (fail closed)", down, got)
				}
			}
			if after := processed(); after != before {
				t.Errorf("the processor charged %d more with %s down, want 0", after-before, down)
			}
			rl.Stop()
		})
	}
}
