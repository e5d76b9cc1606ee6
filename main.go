// Command idemcheck proves whether an HTTP API is idempotent.
package main

import (
	"context"
	"os"

	"github.com/idemcheck/idemcheck/cmd"
)

func main() {
	os.Exit(int(cmd.Main(context.Background(), os.Args[1:], cmd.StdStreams(), os.Getenv)))
}
