package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxFileSize bounds a scenario file: a larger one (or a device that never
// ends, such as /dev/zero) is refused once that much was read.
const MaxFileSize = 64 << 20

// errTooLarge is a scenario file over MaxFileSize.
var errTooLarge = fmt.Errorf("larger than %d MiB: is it a scenario?", MaxFileSize>>20)

// readFile reads the file at path, at most MaxFileSize bytes of it, until
// ctx ends. A FIFO with no writer, a pipe that never ends or a slow file
// system cannot hold the caller past ctx: the read goes on in a goroutine
// that ctx's end unblocks (closing the file, or opening a FIFO's other end
// so that its open returns) and that ends on its own.
func readFile(ctx context.Context, path string) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	opened := make(chan *os.File, 1)
	done := make(chan result, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			opened <- nil
			done <- result{nil, err}
			return
		}
		opened <- f
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxFileSize {
			done <- result{nil, errTooLarge}
			return
		}
		data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
		if err == nil && len(data) > MaxFileSize {
			data, err = nil, errTooLarge
		}
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-ctx.Done():
	}
	select {
	case f := <-opened:
		if f != nil {
			f.Close() // ends a read waiting on a pipe or FIFO
		}
	default:
		// Still opening: a FIFO waits for a writer. Be one, for a moment.
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	}
	return nil, ctx.Err()
}

// isCtxErr reports whether err is a context's end.
func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
