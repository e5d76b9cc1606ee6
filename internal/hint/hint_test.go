package hint

import (
	"errors"
	"testing"
)

func TestError(t *testing.T) {
	base := errors.New("--rate x")
	var err error = New("like --rate 200", base)
	var h interface{ Hint() string }
	if !errors.Is(err, base) || !errors.As(err, &h) || h.Hint() != "like --rate 200" || err.Error() != "--rate x" {
		t.Errorf("hint.New: %v, hint %q", err, h.Hint())
	}
}
