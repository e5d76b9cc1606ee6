// Command noop is a loopback HTTP server that answers every request with
// 200 and a tiny JSON body, for measuring load generators side by side.
//
//	go run ./bench/noop -addr 127.0.0.1:8089
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8089", "address to listen on")
	flag.Parse()
	body := []byte(`{"ok":true}`)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	log.Fatal(http.ListenAndServe(*addr, h))
}
