package ledgerhead

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Head is a ledger's head as a target keeps it: after each push, the
// target's ref LedgerRef(Host, Path) points to a small commit whose message
// (and one file, ledger-head) records the last record of the ledger then.
// The same uid can rewrite its local ledger and the anchor beside it, but
// not what a GitHub repository holds without its token: a ledger cut or
// rewritten behind a push no longer has the record the target names.
//
// The ref is one per ledger (host and path), so that several people's
// airlocks pushing to one repository each keep their own; its commits
// chain, one per push (git log REF lists them), and it only moves
// forward: a record number at or below the one it holds is not written.
// It is outside refs/heads and refs/tags, so clones do not fetch it and no
// branch shows it.
type Head struct {
	Seq   uint64
	Hash  string // the record's hash
	First string // the hash of the ledger's first record: which chain it is
	// Host and Path name the ledger (the machine and the ledger file's
	// absolute path there) only to key its ref: they are not written
	// into the target, which may be public; a read gives back the ones
	// it was asked for.
	Host string
	Path string
	Time time.Time
}

// Ref is the ref under which targets keep the head of the ledger at
// path on host.
func Ref(host, path string) string {
	sum := sha256.Sum256([]byte(host + "\x00" + path))
	return "refs/airlock/ledger/" + hex.EncodeToString(sum[:8])
}

// At names the ledger at path on this machine as its ref is keyed:
// the host name and the absolute path. A fleet's ledger in NATS (its
// path "nats://SERVERS stream NAME", or tls://, as natsledger names it) is one
// ledger for all the fleet's servers and whoever verifies it, wherever
// they run and whichever servers they name: it is keyed by its stream
// alone, with no host.
func At(path string) (host, abs string) {
	if strings.HasPrefix(path, "nats://") || strings.HasPrefix(path, "tls://") {
		if _, stream, ok := strings.Cut(path, " stream "); ok {
			return "", "nats stream " + stream
		}
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	if a, err := filepath.Abs(path); err == nil {
		path = a
	}
	return host, path
}

// File is the one file of a head's commit.
const File = "ledger-head"

// ErrNotHead: the ref holds something airlock did not write.
var ErrNotHead = errors.New("not a ledger head airlock wrote")

// ErrSymbolicRef: the ref is a symbolic ref, which airlock never writes
// through.
var ErrSymbolicRef = fmt.Errorf("%w (a symbolic ref)", ErrNotHead)

// Text is the head as the file in its commit holds it.
func (h Head) Text() string {
	return fmt.Sprintf("Airlock-Ledger-Seq: %d\nAirlock-Ledger-Hash: %s\nAirlock-Ledger-First: %s\nAirlock-Ledger-Time: %s\n",
		h.Seq, h.Hash, h.First, h.Time.UTC().Format(time.RFC3339Nano))
}

// Message is the head's commit message.
func (h Head) Message() string {
	return fmt.Sprintf("airlock ledger head: record %d\n\n%s", h.Seq, h.Text())
}

// isSHA256Hex: 64 lower-case hex digits, as a ledger's hashes are (a
// target is hostile: what it holds is printed by ledger verify).
func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Parse reads a ledger head commit's message.
func Parse(msg string) (Head, error) {
	var h Head
	seen := 0
	for _, line := range strings.Split(msg, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		var err error
		switch k {
		case "Airlock-Ledger-Seq":
			h.Seq, err = strconv.ParseUint(v, 10, 64)
		case "Airlock-Ledger-Hash":
			h.Hash = v
		case "Airlock-Ledger-First":
			h.First = v
		case "Airlock-Ledger-Time":
			h.Time, err = time.Parse(time.RFC3339Nano, v)
		default:
			continue
		}
		if err != nil {
			return Head{}, fmt.Errorf("%w: %s: %v", ErrNotHead, k, err)
		}
		seen++
	}
	if seen != 4 || h.Seq == 0 || !isSHA256Hex(h.Hash) || !isSHA256Hex(h.First) {
		return Head{}, fmt.Errorf("%w: its message lacks the Airlock-Ledger- lines", ErrNotHead)
	}
	return h, nil
}

// AheadError is a target's RecordLedgerHead answer when the target keeps a
// head at or past the one to write, other than that one: the ref only
// moves forward, so it is left alone, and the caller decides whether the
// head kept is one of its ledger's records (another server of the same
// ledger pushed later) or not (the ledger was cut or rewritten, or the
// ref forged to stop it from moving).
type AheadError struct {
	Target string // the target's id
	Kept   Head   // what the target keeps
}

func (e *AheadError) Error() string {
	return fmt.Sprintf("%s keeps the ledger's head at record %d (hash %s), at or past this one, so it was not moved", e.Target, e.Kept.Seq, e.Kept.Hash)
}

// Ahead is nil when the target keeps h itself, else a *AheadError.
func Ahead(id string, cur, h Head) error {
	if cur.Seq == h.Seq && cur.Hash == h.Hash && cur.First == h.First {
		return nil
	}
	cur.Host, cur.Path = h.Host, h.Path
	return &AheadError{Target: id, Kept: cur}
}

// Tries bounds the compare-and-swap loop against other servers
// of the same ledger moving the ref at the same moment.
const Tries = 10
