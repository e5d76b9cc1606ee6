package trial

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/idemcheck/idemcheck/internal/atomicfile"
	"github.com/idemcheck/idemcheck/internal/hint"
)

// A sharded run's directory is shared: whoever can write it could change
// the manifest (its target, a header that sends every load process's
// secret) or the readings the judge counts from. A run prepared with a
// run key (Plan.RunKey) is authenticated: prepare writes, beside the
// manifest, MACFile with an HMAC-SHA256 of every byte of manifest.json and
// of before.json, and the later phases, given the same key (ReadRun's
// key), refuse a file whose MAC does not check (ErrTampered), a run
// prepared with a key when they have none, and a run without MACs when
// they have one (ErrRunKey). The key itself is never written anywhere.

// MACFile names the file of the run's MACs, beside its manifest: written
// by a prepare given a run key, before the manifest.
const MACFile = "manifest.mac"

// MinRunKey is the length of the shortest run key, in bytes.
const MinRunKey = 16

// macAlgorithm names the MACs of MACFile.
const macAlgorithm = "HMAC-SHA256"

// Errors of an authenticated run's directory, each wrapped by an error of
// its own words.
var (
	// ErrTampered: a file of the run is not what prepare wrote (its MAC
	// does not check with the run key given).
	ErrTampered error = hint.New("prepare the run again, in a new directory, with the same "+RunKeyEnv+" in every phase; keep the run's volume writable by the run's processes alone", errors.New("changed after prepare"))
	// ErrRunKey: a run prepared with a run key read without one, or a run
	// without MACs read with one.
	ErrRunKey error = hint.New("give every phase the "+RunKeyEnv+" that prepare was given (none when prepare had none); docs/distributed.md", errors.New("the run key does not fit the run"))
)

// CheckRunKey reports what makes key unusable as a run key: shorter than
// MinRunKey. An empty key is no key (an unauthenticated run). The error
// never holds the key.
func CheckRunKey(key []byte) error {
	if len(key) > 0 && len(key) < MinRunKey {
		return fmt.Errorf("the run key is %d bytes long: want at least %d", len(key), MinRunKey)
	}
	return nil
}

// macFile is MACFile's content: the hex MACs of the manifest's bytes and
// of the readings' bytes (the latter keyed by the former too, so that the
// readings of one run never check beside another's manifest).
type macFile struct {
	Format    int    `json:"format"`
	Algorithm string `json:"algorithm"`
	Manifest  string `json:"manifest"`
	Before    string `json:"before"`
}

// runAuth is what a manifest read with a run key keeps to check the
// readings beside it.
type runAuth struct {
	key      []byte
	manifest []byte // the manifest's MAC
	before   []byte // the readings' MAC, as prepare wrote it
}

// manifestMAC is the MAC of a manifest's bytes.
func manifestMAC(key, data []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("idemcheck " + ManifestFile + "\x00"))
	h.Write(data)
	return h.Sum(nil)
}

// beforeHash is the MAC of the readings beside the manifest whose MAC is
// manifest, to be written the readings' bytes.
func beforeHash(key, manifest []byte) hash.Hash {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("idemcheck " + BeforeFile + "\x00"))
	h.Write(manifest)
	return h
}

// writeRun writes run m's files to dir: the readings, then, with a run
// key, the MACs of both, then the manifest, the sign that the run is
// ready. Without a key a MAC file left by an earlier prepare is removed.
func writeRun(dir string, m *Manifest, rd *Readings, key []byte) error {
	var mb bytes.Buffer
	if err := writeManifest(&mb, m); err != nil {
		return err
	}
	var mac []byte
	if len(key) > 0 {
		mac = manifestMAC(key, mb.Bytes())
	}
	var before hash.Hash
	err := atomicfile.Write(filepath.Join(dir, BeforeFile), func(f *os.File) error {
		if mac == nil {
			return writeReadings(f, rd)
		}
		before = beforeHash(key, mac)
		return writeReadings(io.MultiWriter(f, before), rd)
	})
	if err != nil {
		return err
	}
	path := filepath.Join(dir, MACFile)
	if mac == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	} else {
		mf := macFile{Format: 1, Algorithm: macAlgorithm, Manifest: hex.EncodeToString(mac), Before: hex.EncodeToString(before.Sum(nil))}
		if err := atomicfile.Write(path, func(f *os.File) error { return json.NewEncoder(f).Encode(mf) }); err != nil {
			return err
		}
	}
	return atomicfile.Write(filepath.Join(dir, ManifestFile), func(f *os.File) error {
		_, err := f.Write(mb.Bytes())
		return err
	})
}

// maxMACFile bounds MACFile's read.
const maxMACFile = 4 << 10

// readManifestIn reads the manifest in dir from r, checking first, with
// a run key, that its bytes are those prepare wrote (MACFile in dir).
func readManifestIn(dir string, r io.Reader, key []byte) (*Manifest, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxManifest+1))
	if err != nil {
		return nil, err
	}
	auth, err := authenticate(dir, data, key)
	if err != nil {
		return nil, err
	}
	m, err := readManifest(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	m.auth = auth
	return m, nil
}

// authenticate checks data, the manifest in dir, against the MACs in dir
// with key: nil for a run without MACs read without a key.
func authenticate(dir string, data, key []byte) (*runAuth, error) {
	f, err := os.Open(filepath.Join(dir, MACFile))
	switch {
	case errors.Is(err, os.ErrNotExist) && len(key) == 0:
		return nil, nil
	case errors.Is(err, os.ErrNotExist):
		return nil, &kindError{fmt.Errorf("no MAC beside it (%s): the run was prepared without a run key, or its MAC was removed; a process given a run key reads only a run prepared with it", MACFile), ErrRunKey}
	case err != nil:
		return nil, err
	}
	defer f.Close()
	if len(key) == 0 {
		return nil, &kindError{fmt.Errorf("the run was prepared with a run key (%s is beside it), and this process has none", MACFile), ErrRunKey}
	}
	var mf macFile
	dec := json.NewDecoder(io.LimitReader(f, maxMACFile))
	dec.DisallowUnknownFields()
	tampered := func(what string) error {
		return &kindError{fmt.Errorf("%s: %s (or the run key is not the one prepare was given)", ErrTampered, what), ErrTampered}
	}
	if err := dec.Decode(&mf); err != nil || mf.Format != 1 || mf.Algorithm != macAlgorithm {
		return nil, tampered(fmt.Sprintf("%s is not a MAC file this idemcheck wrote", MACFile))
	}
	want, err1 := hex.DecodeString(mf.Manifest)
	before, err2 := hex.DecodeString(mf.Before)
	if err1 != nil || err2 != nil || len(before) != sha256.Size {
		return nil, tampered(fmt.Sprintf("%s is not a MAC file this idemcheck wrote", MACFile))
	}
	mac := manifestMAC(key, data)
	if !hmac.Equal(mac, want) {
		return nil, tampered(fmt.Sprintf("its MAC in %s does not check", MACFile))
	}
	return &runAuth{key: key, manifest: mac, before: before}, nil
}

// decodeReadings reads the readings of run m from r. With the run's key,
// every byte of r must be what prepare wrote (its MAC), else the error
// wraps ErrTampered; it is checked before anything r holds is used.
func (m *Manifest) decodeReadings(r io.Reader) (*Readings, error) {
	if m.auth == nil {
		return readReadings(r, m)
	}
	h := beforeHash(m.auth.key, m.auth.manifest)
	tee := io.TeeReader(io.LimitReader(r, maxReadings+1), h)
	rd, err := readReadings(tee, m)
	if _, cerr := io.Copy(io.Discard, tee); cerr != nil {
		return nil, cerr
	}
	if !hmac.Equal(h.Sum(nil), m.auth.before) {
		return nil, &kindError{fmt.Errorf("%s: %s: its MAC in %s does not check", BeforeFile, ErrTampered, MACFile), ErrTampered}
	}
	return rd, err
}

// RunKeyEnv names the environment variable of a sharded run's key: every
// phase is given the same one, prepare writes the MACs of the run's files
// with it and the later phases check them (MACFile). It is no flag: a key
// on a command line is in every process listing.
const RunKeyEnv = "IDEMCHECK_RUN_KEY"

// RunKeyHint says how to give a run key.
const RunKeyHint = "give every phase the same random key, e.g. " + RunKeyEnv + "=$(openssl rand -hex 32)"

// RunKeyFrom is the run key in getenv's environment, nil when none is set;
// a key too short to be one is an error naming RunKeyEnv. The key is never
// shown.
func RunKeyFrom(getenv func(string) string) ([]byte, error) {
	if getenv == nil {
		return nil, nil
	}
	key := []byte(getenv(RunKeyEnv))
	if err := CheckRunKey(key); err != nil {
		return nil, fmt.Errorf("%s: %w", RunKeyEnv, err)
	}
	if len(key) == 0 {
		return nil, nil
	}
	return key, nil
}

// PhaseEnv is what a phase's templates read ({{env}}): getenv without the
// run key, which no request may carry.
func PhaseEnv(getenv func(string) string) func(string) string {
	if getenv == nil {
		return nil
	}
	return func(name string) string {
		if name == RunKeyEnv {
			return ""
		}
		return getenv(name)
	}
}
