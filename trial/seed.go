package trial

import (
	crand "crypto/rand"
	"encoding/binary"
	"time"
)

// RandomSeed is a seed (or key nonce) drawn at random, printable as a
// positive int64 too: a target keeps its keys, so a run whose seed the
// user did not choose must not send an earlier run's keys, which a
// correct API would rightly replay.
func RandomSeed() uint64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return uint64(time.Now().UnixNano())
	}
	return binary.LittleEndian.Uint64(b[:]) >> 1
}
